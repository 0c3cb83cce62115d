package loadtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"seatflow/internal/app"
)

type hotShow struct {
	id   string
	rows [][]string // sellable seat ids per row, in seat order
}

type pendingOrder struct {
	id    string
	cust  int
	show  string
	seats []string
}

type reqMeta struct {
	op    string
	addr  string
	cust  int
	show  string
	seats []string
	pend  *pendingOrder
}

type opStats struct {
	metrics vegeta.Metrics
	ok      int
	codes   map[string]int
}

type loadRun struct {
	o    *Options
	app  *app.App
	logf func(string, ...any)
	// client is the generator's one HTTP client: its keep-alive connections carry over
	// from one attack (a capacity step) to the next, as a crowd's open pages do.
	client *http.Client

	rndMu sync.Mutex
	rnd   *rand.Rand

	admin     string
	tokens    []string
	dates     []string
	movieIDs  []string
	showIDs   []string
	hot       []hotShow
	runTag    string
	staticMu  sync.Mutex
	static    map[string][]byte
	healthy   []atomic.Bool
	rr        atomic.Uint64
	seq       atomic.Uint64
	inflight  sync.Map // seq → *reqMeta
	pendMu    sync.Mutex
	pending   []*pendingOrder
	chaos     *chaosPlan
	chaosMu   sync.Mutex
	downWin   map[string][]window
	redisDown time.Time
	events    []string
	chaosErrs []string

	// touched only by the result loop
	stats    map[string]*opStats
	expected map[string]int // "op code" → count (business outcomes)
	chaosExp map[string]int // "op code" → count (expected because of chaos)
	failed   map[string]int // "op code" → count (failures)
	samples  []string       // a few failing requests, for the report
	sampled  map[string]int
	// end of the last SERVICE_UNAVAILABLE answer after the Redis restart
	lastUnavail time.Time
	paid        map[string]*pendingOrder
	paidSeat    map[string]string
	oversoldC   int

	watch watchStats
	// attacking, when set, is told when the attack begins (the watchers connected).
	attacking func(time.Time)
}

type watchStats struct {
	connects, disconnects, snapshots, deltas, gaps, regressions, dialErrors atomic.Int64
	connected                                                               atomic.Int64
}

func newLoadRun(o *Options, inst *app.App, logf func(string, ...any)) (*loadRun, error) {
	seed := o.Seed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	l := &loadRun{o: o, app: inst, logf: logf, rnd: rand.New(rand.NewPCG(uint64(seed), 0x5eaf10)),
		static: map[string][]byte{}, healthy: make([]atomic.Bool, len(o.Instances)),
		downWin: map[string][]window{}, stats: map[string]*opStats{}, expected: map[string]int{},
		chaosExp: map[string]int{}, failed: map[string]int{}, paid: map[string]*pendingOrder{},
		paidSeat: map[string]string{}, runTag: strconv.FormatInt(time.Now().UnixNano(), 36),
		client: newAttackClient()}
	for i := range l.healthy {
		l.healthy[i].Store(true)
	}
	for _, op := range loadOps {
		l.stats[op] = &opStats{codes: map[string]int{}}
	}
	var err error
	if l.admin, err = inst.Auth.Issue("load-admin", "admin", 6*time.Hour); err != nil {
		return nil, err
	}
	for i := 0; i < o.Customers; i++ {
		tok, err := inst.Auth.Issue(fmt.Sprintf("load-%s-customer-%d", l.runTag, i), "customer", 6*time.Hour)
		if err != nil {
			return nil, err
		}
		l.tokens = append(l.tokens, tok)
	}
	return l, nil
}

func (l *loadRun) intn(n int) int {
	l.rndMu.Lock()
	defer l.rndMu.Unlock()
	return l.rnd.IntN(n)
}

// Report is everything a run of the load test measured.
type Report struct {
	duration, attackTook time.Duration
	rate                 int
	instances            int
	stats                map[string]*opStats
	expected, chaosExp   map[string]int
	failed               map[string]int
	samples              []string
	watchersWanted       int
	watchersAtStart      int64
	watch                *watchStats
	events, chaosErrs    []string
	reconciles           []string
	converged            bool
	verifyFirst          []string
	verifyFinal          []string
	verifyErr            error
	verifyAttempts       int
	oversoldClient       int
	oversoldDB           int
	paidOrders           int
	paidLost             []string
	internal             int
}

func (l *loadRun) execute(ctx context.Context) (*Report, error) {
	o := l.o
	// The run's answers only: capacity steps run before it on the same session (the soak's)
	// leave the counts of their last step, whose failures are how it found the ceiling.
	l.resetCounts()
	rep := &Report{duration: o.Duration, rate: o.Rate, instances: len(o.Instances), watchersWanted: o.Watchers, watch: &l.watch}
	stopWatchers := l.startWatchers(ctx)
	defer stopWatchers()
	rep.watchersAtStart = l.watch.connected.Load()
	l.logf("%d watchers subscribed; attacking at %d req/s for %s%s", rep.watchersAtStart, o.Rate, o.Duration,
		map[bool]string{true: " with chaos", false: ""}[o.Chaos])
	began := time.Now()
	if l.attacking != nil {
		l.attacking(began)
	}
	var chaosWG sync.WaitGroup
	if l.chaos != nil {
		chaosWG.Add(1)
		go func() { defer chaosWG.Done(); l.runChaos(ctx, began) }()
	}
	l.attack(ctx, o.Rate, o.Duration)
	rep.attackTook = time.Since(began)
	chaosWG.Wait()
	stopWatchers()
	l.chaosMu.Lock()
	rep.events, rep.chaosErrs = l.events, l.chaosErrs
	if !l.redisDown.IsZero() && !l.lastUnavail.IsZero() {
		rep.events = append(rep.events, fmt.Sprintf("%s last SERVICE_UNAVAILABLE answer, %.1fs after the Redis shutdown (seat hashes are rebuilt by the reconciler)",
			l.lastUnavail.Format("15:04:05.000"), l.lastUnavail.Sub(l.redisDown).Seconds()))
	}
	l.chaosMu.Unlock()
	rep.stats, rep.expected, rep.chaosExp, rep.failed, rep.samples = l.stats, l.expected, l.chaosExp, l.failed, l.samples
	rep.oversoldClient, rep.paidOrders = l.oversoldC, len(l.paid)
	for k, v := range l.failed {
		if len(k) > 9 && k[len(k)-9:] == " INTERNAL" {
			rep.internal += v
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	l.converge(ctx, rep)
	l.verify(ctx, rep)
	return rep, nil
}

// startWatchers connects the websocket watchers, ramped up, and waits (at most a minute)
// until every one is subscribed and the instances have sent their snapshots, so an attack
// starts with all of them listening. The returned function disconnects them.
func (l *loadRun) startWatchers(ctx context.Context) (stop func()) {
	o := l.o
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	if o.Watchers > 0 {
		l.logf("connecting %d websocket watchers over %d hot showtimes and %d instances", o.Watchers, len(l.hot), len(o.Instances))
		for i := 0; i < o.Watchers; i++ {
			wg.Add(1)
			go func() { defer wg.Done(); l.watcher(wctx, i) }()
			if i%50 == 49 {
				time.Sleep(100 * time.Millisecond)
			}
		}
		deadline := time.Now().Add(60 * time.Second)
		for l.watch.connected.Load() < int64(o.Watchers) && time.Now().Before(deadline) && ctx.Err() == nil {
			time.Sleep(200 * time.Millisecond)
		}
		time.Sleep(3 * time.Second) // let the instances finish sending the snapshots
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			waitOrTimeout(&wg, 20*time.Second)
		})
	}
}

// newAttackClient is the generator's HTTP/1.1 keep-alive client. Its idle connections
// close after 90 s, before the instances' 120 s IdleTimeout would close them under a
// request just sent (a POST is not retried: it would fail with EOF).
func newAttackClient() *http.Client {
	dialer := &net.Dialer{KeepAlive: 30 * time.Second}
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			DialContext:         dialer.DialContext,
			MaxIdleConnsPerHost: 1000,
			IdleConnTimeout:     90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// attack sends the mix at rate for d and records every result (l.handle), then closes
// the operations' metrics.
func (l *loadRun) attack(ctx context.Context, rate int, d time.Duration) {
	atk := vegeta.NewAttacker(vegeta.Client(l.client), vegeta.Workers(32), vegeta.MaxWorkers(l.o.MaxWorkers))
	began := time.Now()
	results := atk.Attack(l.targeter, vegeta.Rate{Freq: rate, Per: time.Second}, d, "premiere")
	progress := time.NewTicker(10 * time.Second)
	defer progress.Stop()
	n := 0
loop:
	for {
		select {
		case res, ok := <-results:
			if !ok {
				break loop
			}
			l.handle(res)
			n++
		case <-progress.C:
			l.logf("%s: %d responses, %d failures so far, %d deltas delivered, %d watchers connected",
				time.Since(began).Round(time.Second), n, sum(l.failed), l.watch.deltas.Load(), l.watch.connected.Load())
		case <-ctx.Done():
			atk.Stop()
		}
	}
	for _, s := range l.stats {
		s.metrics.Close()
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func waitOrTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}
