package wstransport

import (
	"container/list"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// The writers give way to the sale. A pass over thousands of watchers keeps a writer busy
// for a good part of a second in a burst (one write(2) per watcher, about 15 µs each on
// loopback), and a hold that needs a core then waits for one at each of its statements:
// in `make bench`'s on-sale burst at 10,000 watchers, holdSeats' p99 was 8 to 9 times
// its p99 with nobody watching, most of it spent waiting for MySQL's answers while MySQL
// waited for a core. Two rules keep the sale ahead of the fan-out:
//
//   - Processors of their own. A writer's system calls are too short for Go to hand its
//     processor to another goroutine meanwhile, so a writer busy with a pass holds a
//     processor for the whole pass; with two, the requests, the collector and the hub had
//     one left. Each running registry adds a processor per writer (GOMAXPROCS), so the
//     requests keep as many as they had, and the kernel shares the cores.
//   - Giving way. While a request has been under way for more than giveWayAfter (a hold
//     takes a few milliseconds when nothing competes), the writers rest, up to maxRest at
//     a time, so the cores go to the request and its stores; after resting r a writer
//     writes at least r × share / (1 − share) before it may rest again (Registry.Share),
//     so the fan-out keeps its share of the time whatever the requests do.
//
// A burst's passes take longer, and each DELTA carries more (a connection takes every
// change since its last when its writer reaches it): the maps lag by a little more, never
// by a change lost. Measured at 10,000 watchers while developing these rules (make
// bench's on-sale section; the committed figures are in docs/BENCHMARKS.md): holdSeats'
// p99 with watchers 3.6 times the p99 without when the writers never gave way, 2.4 to 4
// times when they took a fixed half of the time but had no processor of their own, about
// 2 with both rules.
//
// Lowering the writers' threads' priority instead (nice 10 or 19) was measured too and
// made holds slower (p99 ×7 to ×40): a Go thread the kernel leaves waiting keeps its
// processor, and every stop-the-world of the collector waits for it.

var writerRests = promauto.NewCounter(prometheus.CounterOpts{
	Namespace: "seatflow", Subsystem: "websocket", Name: "writer_rest_seconds_total",
	Help: "Time the websocket writers rested to give way to HTTP requests under way for over 5 ms (docs/DESIGN.md, \"Live seat map\").",
})

// processors guards the changes to GOMAXPROCS of the registries that start and stop.
var processors sync.Mutex

// addProcessors adds n processors (n < 0: takes them back) to those Go runs goroutines on.
func addProcessors(n int) {
	processors.Lock()
	defer processors.Unlock()
	runtime.GOMAXPROCS(max(1, runtime.GOMAXPROCS(0)+n))
}

// giveWayAfter is how long a request may have been under way before the writers rest for
// it; they rest restStep at a time, and maxRest at most in one go.
const (
	giveWayAfter = 5 * time.Millisecond
	restStep     = 200 * time.Microsecond
	maxRest      = 2 * time.Millisecond
)

// Requests are an instance's HTTP requests under way, oldest first; the registry's writers
// give way to them (Registry.Share). The zero Requests is ready to use.
type Requests struct {
	mu    sync.Mutex
	under list.List // of time.Time: when each began
}

// Track counts next's requests while they are served, but for websocket upgrades: a
// connection's life is not a request under way. A nil Requests counts nothing.
func (q *Requests) Track(next http.Handler) http.Handler {
	if q == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "" {
			next.ServeHTTP(w, r)
			return
		}
		q.mu.Lock()
		e := q.under.PushBack(time.Now())
		q.mu.Unlock()
		defer func() {
			q.mu.Lock()
			q.under.Remove(e)
			q.mu.Unlock()
		}()
		next.ServeHTTP(w, r)
	})
}

// waiting is how long the oldest request under way has been (0: none is).
func (q *Requests) waiting() time.Duration {
	if q == nil {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if e := q.under.Front(); e != nil {
		return time.Since(e.Value.(time.Time))
	}
	return 0
}

// giveWay is one writer's account of the time it owes the requests.
type giveWay struct {
	owed time.Duration // writing it must do before it may rest again
	mark time.Time     // when owed was last brought up to date
}

// after is called by a writer after each connection it wrote: while a request has been
// under way for giveWayAfter, the writer rests (up to maxRest) unless it rested lately:
// after resting r it writes r × share / (1 - share) before it may rest again, so it takes
// at least share of its time whatever the requests do.
func (g *giveWay) after(requests *Requests, share float64) {
	if share <= 0 || share >= 1 {
		return
	}
	now := time.Now()
	if !g.mark.IsZero() {
		g.owed -= now.Sub(g.mark)
	}
	g.mark = now
	if g.owed > 0 || requests.waiting() < giveWayAfter {
		return
	}
	for rested := time.Duration(0); rested < maxRest && requests.waiting() >= giveWayAfter; rested = time.Since(now) {
		time.Sleep(restStep)
	}
	g.mark = time.Now()
	rested := g.mark.Sub(now)
	writerRests.Add(rested.Seconds())
	g.owed = time.Duration(float64(rested) * share / (1 - share))
}
