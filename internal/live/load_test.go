package live

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/internal/tooling/testenv"
)

// TestLoadNeverEndsASubscription: an instance saturated by a burst (one core, busy
// goroutines on it, and the hub's loop stalled longer than every heartbeat threshold
// while holds go on) reads its own heartbeats late; no watch ends for it, and every
// watcher's map ends equal to the real map.
func TestLoadNeverEndsASubscription(t *testing.T) {
	f := newFixture(t, 4, 10)
	// Any end for lateness would trip at once.
	h, _ := f.startHub(t, f.rdb, Options{lostAfter: 200 * time.Millisecond})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const watchers = 20
	type client struct {
		mu      sync.Mutex
		m       map[int]seatflow.SeatStatus
		version int
	}
	clients := make([]*client, watchers)
	var ended atomic.Int32 // watches that ended before the test ended them
	var readers sync.WaitGroup
	for i := range clients {
		ch, err := h.Watch(ctx, showID, f.hall)
		if err != nil {
			t.Fatal(err)
		}
		c := &client{}
		clients[i] = c
		readers.Add(1)
		go func() {
			defer readers.Done()
			for ev := range ch {
				c.mu.Lock()
				c.m, c.version = applyEvent(c.m, ev), ev.Version
				c.mu.Unlock()
			}
			if ctx.Err() == nil {
				ended.Add(1)
			}
		}()
	}

	// Saturate: one core, four goroutines spinning on it.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var busy sync.WaitGroup
	stopBusy := make(chan struct{})
	for range 4 {
		busy.Add(1)
		go func() {
			defer busy.Done()
			for n := 0; ; n++ {
				if n%1024 == 0 {
					select {
					case <-stopBusy:
						return
					default:
					}
				}
			}
		}()
	}
	// Stall the hub's loop (as an instance busy delivering is) twice, each time longer
	// than beatStale and lostAfter, the second longer than the 3 s after which the hub
	// used to end every watch, while holds and releases go on.
	stalls := make(chan struct{})
	go func() {
		defer close(stalls)
		for _, d := range []time.Duration{1200 * time.Millisecond, 3500 * time.Millisecond} {
			unlock := h.lockAll()
			time.Sleep(d)
			unlock()
			time.Sleep(100 * time.Millisecond)
		}
	}()
	tokens := map[int]string{}
	for i := 0; i < 120; i++ {
		seat := 1 + i%len(f.hall.Seats)
		if seat == 2 {
			continue
		}
		if tok, ok := tokens[seat]; ok {
			f.release(t, seat, tok)
			delete(tokens, seat)
		} else if tok := f.hold(t, seat); tok != "" {
			tokens[seat] = tok
		}
		time.Sleep(25 * time.Millisecond)
	}
	<-stalls
	close(stopBusy)
	busy.Wait()

	want, version := f.realMap(t)
	deadline := time.Now().Add(eventWait)
	for i, c := range clients {
		for {
			c.mu.Lock()
			m, v := c.m, c.version
			c.mu.Unlock()
			if v >= version {
				if fmt.Sprint(m) != fmt.Sprint(want) {
					t.Errorf("watcher %d at v%d:\n got %v\nwant %v", i, v, m, want)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("watcher %d at v%d, the map at v%d after %v", i, v, version, eventWait)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if n := ended.Load(); n > 0 {
		t.Errorf("%d of %d watches ended under load, want none", n, watchers)
	}
	cancel()
	readers.Wait()
}

// recordSink is a Sink that keeps the events and why the stream ended.
type recordSink struct {
	ch  chan *seatflow.SeatMapEvent
	why chan error
}

func newRecordSink() *recordSink {
	return &recordSink{ch: make(chan *seatflow.SeatMapEvent, 64), why: make(chan error, 1)}
}

func (s *recordSink) Put(ev *seatflow.SeatMapEvent) bool {
	select {
	case s.ch <- ev:
		return true
	default:
		return false
	}
}
func (s *recordSink) Due(w *Watcher) bool {
	if s.Full() {
		return false
	}
	if ev := w.Next(); ev != nil {
		s.ch <- ev
	}
	return true
}
func (s *recordSink) Full() bool { return len(s.ch) == cap(s.ch) }
func (s *recordSink) Drop() {
	for len(s.ch) > 0 {
		<-s.ch
	}
}
func (s *recordSink) Close(why error) { s.why <- why }

func (s *recordSink) ended(t *testing.T) error {
	t.Helper()
	select {
	case why := <-s.why:
		return why
	case <-time.After(2 * redisLost):
		t.Fatalf("the watch did not end within %v", 2*redisLost)
	}
	return nil
}

// TestServerEndsAWatchWithACode: when Redis is really lost (every beat fails for
// lostAfter), and when the instance shuts down, the server ends each watch with an
// error carrying a code, telling its client to subscribe again.
func TestServerEndsAWatchWithACode(t *testing.T) {
	if os.Getenv("SEATFLOW_TEST_REDIS_CLUSTER") != "" {
		t.Skip("proxies a single server")
	}
	f := newFixture(t, 1, 4)
	opt, err := redis.ParseURL(testenv.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, opt.Addr)
	opt.Addr = p.addr
	opt.MaxRetries = -1
	hubClient := redis.NewClient(opt)
	t.Cleanup(func() { hubClient.Close() })
	h, _ := f.startHub(t, hubClient, Options{lostAfter: 500 * time.Millisecond})
	lost := newRecordSink()
	if err := h.WatchWith(t.Context(), showID, f.hall, lost); err != nil {
		t.Fatal(err)
	}
	p.kill()
	why := lost.ended(t)
	if seatflow.ErrorCode(why) != seatflow.EUNAVAILABLE || why != errRedisLost {
		t.Errorf("Redis lost: the watch ended with %v, want errRedisLost (%s)", why, seatflow.EUNAVAILABLE)
	}

	h2, stop := f.startHub(t, f.rdb, Options{})
	down := newRecordSink()
	if err := h2.WatchWith(t.Context(), showID, f.hall, down); err != nil {
		t.Fatal(err)
	}
	stop()
	if why := down.ended(t); why != errShuttingDown || seatflow.ErrorCode(why) != seatflow.EUNAVAILABLE {
		t.Errorf("shutdown: the watch ended with %v, want errShuttingDown (%s)", why, seatflow.EUNAVAILABLE)
	}
}

// proxy forwards TCP connections to a Redis server until kill, which closes every one of
// them and refuses new ones: Redis lost, as the instance sees it.
type proxy struct {
	addr  string
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func startProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{addr: ln.Addr().String(), ln: ln}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); _, _ = io.Copy(u, c); u.Close() }()
			go func() { defer p.wg.Done(); _, _ = io.Copy(c, u); c.Close() }()
		}
	}()
	t.Cleanup(p.kill)
	return p
}

func (p *proxy) kill() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
