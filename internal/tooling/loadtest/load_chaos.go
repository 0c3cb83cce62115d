package loadtest

import (
	"context"
	"fmt"
	"time"
)

type window struct{ from, to time.Time } // to zero: still open

type chaosPlan struct {
	kill, restart         func(i int) error
	stopRedis, startRedis func() error
}

func (l *loadRun) instanceDownAt(addr string, at time.Time) bool {
	l.chaosMu.Lock()
	defer l.chaosMu.Unlock()
	for _, w := range l.downWin[addr] {
		if !at.Before(w.from.Add(-time.Second)) && (w.to.IsZero() || at.Before(w.to)) {
			return true
		}
	}
	return false
}

func (l *loadRun) afterRedisRestart(at time.Time) bool {
	l.chaosMu.Lock()
	defer l.chaosMu.Unlock()
	return !l.redisDown.IsZero() && !at.Before(l.redisDown.Add(-time.Second))
}

func (l *loadRun) event(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	l.logf("chaos: %s", msg)
	l.chaosMu.Lock()
	l.events = append(l.events, time.Now().Format("15:04:05.000")+" "+msg)
	l.chaosMu.Unlock()
}

func (l *loadRun) chaosFailed(err error) {
	l.logf("chaos: FAILED: %v", err)
	l.chaosMu.Lock()
	l.chaosErrs = append(l.chaosErrs, err.Error())
	l.chaosMu.Unlock()
}

// runChaos kill -9s one instance at 1/3 of the run (restarted on the same port a few
// seconds later) and restarts Redis without saving at 2/3 (every seat hash is lost).
func (l *loadRun) runChaos(ctx context.Context, began time.Time) {
	sleepUntil := func(t time.Time) bool {
		select {
		case <-time.After(time.Until(t)):
			return true
		case <-ctx.Done():
			return false
		}
	}
	victim := 1 % len(l.o.Instances)
	addr := l.o.Instances[victim]
	if !sleepUntil(began.Add(l.o.Duration / 3)) {
		return
	}
	l.chaosMu.Lock()
	l.downWin[addr] = append(l.downWin[addr], window{from: time.Now()})
	l.chaosMu.Unlock()
	l.healthy[victim].Store(false)
	if err := l.chaos.kill(victim); err != nil {
		l.chaosFailed(fmt.Errorf("kill -9 %s: %w", addr, err))
	} else {
		l.event("kill -9 instance %s", addr)
	}
	time.Sleep(3 * time.Second)
	if err := l.chaos.restart(victim); err != nil {
		l.chaosFailed(fmt.Errorf("restart %s: %w", addr, err))
	} else {
		l.event("instance %s restarted and ready", addr)
	}
	l.healthy[victim].Store(true)
	l.chaosMu.Lock()
	w := l.downWin[addr]
	w[len(w)-1].to = time.Now().Add(2 * time.Second)
	l.chaosMu.Unlock()

	if !sleepUntil(began.Add(2 * l.o.Duration / 3)) {
		return
	}
	l.chaosMu.Lock()
	l.redisDown = time.Now()
	l.chaosMu.Unlock()
	if err := l.chaos.stopRedis(); err != nil {
		l.chaosFailed(fmt.Errorf("stop redis: %w", err))
		return
	}
	l.event("redis-cli -p %d shutdown nosave", l.o.RedisPort)
	time.Sleep(3 * time.Second)
	if err := l.chaos.startRedis(); err != nil {
		l.chaosFailed(fmt.Errorf("start redis: %w", err))
		return
	}
	l.event("redis-server restarted empty on %d", l.o.RedisPort)
}
