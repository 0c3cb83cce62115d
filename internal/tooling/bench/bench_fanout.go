package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"seatflow/internal/cli"
	"seatflow/internal/tooling/gqlclient"
)

const (
	fanoutP99Target   = 250 * time.Millisecond
	fanoutBytesTarget = 40 << 10
	fanoutDialers     = 32
)

const fanoutSubscription = `subscription($id: ID!) { seatMap(showtimeId: $id) { kind version seats { seat { id } status } } }`

// watcher is one idle websocket client of the seat map.
type watcher struct {
	conn *websocket.Conn
	seen atomic.Int64 // last round whose event this watcher has seen
}

// fanout is the set of watchers and the round in progress.
type fanout struct {
	mu       sync.Mutex
	round    atomic.Int64
	t0       atomic.Int64 // unix nanos when the round's hold was sent
	lat      latencies
	got      atomic.Int64
	snaps    atomic.Int64
	watchers []*watcher
	lost     atomic.Int64 // connections that ended early
	compress bool         // offer permessage-deflate
}

func (f *fanout) dial(ctx context.Context, wsURL, show string) (*watcher, error) {
	conn, _, err := dialSeatMap(ctx, wsURL, fanoutSubscription, show, f.compress)
	if err != nil {
		return nil, err
	}
	w := &watcher{conn: conn}
	go f.read(w)
	return w, nil
}

// read is the watcher's only reader (and, after set-up, its only writer: pongs).
func (f *fanout) read(w *watcher) {
	for {
		_, msg, err := w.conn.ReadMessage()
		if err != nil {
			if f.round.Load() >= 0 {
				f.lost.Add(1)
			}
			return
		}
		if bytes.Contains(msg, []byte(`"type":"ping"`)) {
			_ = w.conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"pong"}`))
			continue
		}
		if !bytes.Contains(msg, []byte(`"next"`)) {
			continue
		}
		r := f.round.Load()
		if r <= 0 || w.seen.Load() == r {
			continue
		}
		w.seen.Store(r)
		d := time.Duration(time.Now().UnixNano() - f.t0.Load())
		if bytes.Contains(msg, []byte(`"SNAPSHOT"`)) {
			f.snaps.Add(1)
		}
		f.mu.Lock()
		f.lat = append(f.lat, d)
		f.mu.Unlock()
		f.got.Add(1)
	}
}

// grow connects watchers until there are n.
func (f *fanout) grow(ctx context.Context, wsURL, show string, n int) error {
	var mu sync.Mutex
	return dialMany(ctx, n-len(f.watchers), fanoutDialers, func(ctx context.Context) error {
		w, err := f.dial(ctx, wsURL, show)
		if err != nil {
			return err
		}
		mu.Lock()
		f.watchers = append(f.watchers, w)
		mu.Unlock()
		return nil
	})
}

func (f *fanout) closeAll() {
	f.round.Store(-1)
	for _, w := range f.watchers {
		w.conn.Close()
	}
}

// fanResult is what one N of a fan-out run measured.
type fanResult struct {
	n                  int
	connect            time.Duration
	lat                latencies
	got, snaps         int64
	rss, heap          int64
	goroutines         float64 // added by the watchers
	clientHeapPerWatch int64
	holdErr            string
}

// benchFanout measures how long one hold takes to reach N idle watchers, and what a
// watcher costs the server in memory; then the same with permessage-deflate, and a storm
// of watchers coming and going while seats change. The server runs in a child process, so
// the clients' memory is not counted.
func benchFanout(ctx context.Context, b *benchEnv, w io.Writer) error {
	var counts []int
	for _, s := range strings.Split(b.Opt.Fanout, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return cli.UsageError{Msg: "-fanout: " + s}
		}
		counts = append(counts, n)
	}
	// Each watcher costs one descriptor here and one in the child (which inherits our
	// limit); both processes need a hundred or so of their own.
	capN := int(b.NoFile) - 100
	for i, n := range counts {
		if n > capN {
			b.note("Fan-out: N=%d capped at %d by the open-file limit (%d per process; raising it needs CAP_SYS_RESOURCE).", n, capN, b.NoFile)
			counts[i] = capN
		}
	}
	fixtures, err := b.openBenchApp(ctx)
	if err != nil {
		return err
	}
	shows, err := fixtures.createShows(ctx, 3, 10, 10, true, 50, true)
	if err != nil {
		fixtures.Close()
		return err
	}
	holder := fixtures.token("fan-holder")
	fixtures.Close()

	results, lost, clientHeap, err := b.fanoutRun(ctx, shows[0], holder, counts, false)
	if err != nil {
		return err
	}
	compressN := min(5000, counts[len(counts)-1])
	zipped, _, _, err := b.fanoutRun(ctx, shows[1], holder, []int{compressN}, true)
	if err != nil {
		b.note("Fan-out with permessage-deflate did not run: %v", err)
	}

	fmt.Fprintf(w, "\n## 6. Live seat-map fan-out\n\n")
	fmt.Fprintf(w, "The server runs as a child process (the server binary's `serve`, on the bench database and prefix), so its memory is measured alone: RSS from `/proc/<pid>/status` (VmRSS), heap in use and goroutines from its `/metrics`, each as growth over the server before any watcher, divided by N. N idle gorilla/websocket clients (graphql-transport-ws, anonymous, in the bench process) subscribe to `seatMap` of one 100-seat showtime; watchers are added to reach each N in turn (%d dialers). Then one `holdSeats` over HTTP; the latency is from sending it to each watcher reading the event (a DELTA, or a SNAPSHOT if it was resynchronised). Open-file limit %d per process.\n",
		fanoutDialers, b.NoFile)
	rows := fanoutRows(results, "")
	rows = append(rows, fanoutRows(zipped, " with permessage-deflate")...)
	table(w, []string{"N", "delivered", "p50", "p99", "max", "server RSS / watcher", "server heap in use / watcher", "server goroutines / watcher", "connect time", "target", "result"}, rows)
	if len(results) > 0 {
		last := results[len(results)-1]
		fmt.Fprintf(w, "\nClient side (bench process, not counted above): heap in use %.1f KiB per watcher. Connections lost during the run: %d.\n",
			float64(clientHeap)/1024, lost)
		if last.n < 10000 {
			fmt.Fprintf(w, "\nThe N = 10,000 targets (p99 ≤ 250 ms, ≤ 40 KiB per watcher) were not measured in this run (largest N = %d).\n", last.n)
		}
	}
	return b.benchStorm(ctx, w, shows[2], holder)
}

// fanoutRows are the table rows of a fan-out run; from 10,000 watchers on, the targets
// apply: p99 ≤ 250 ms, ≤ 40 KiB of RSS and one goroutine per watcher (the count grows by
// N plus, at most, a handful of the instance's own: 1%).
func fanoutRows(results []fanResult, label string) [][]string {
	var rows [][]string
	for _, r := range results {
		p99 := r.lat.pct(99)
		perRSS := r.rss / int64(r.n)
		perHeap := r.heap / int64(r.n)
		perG := r.goroutines / float64(r.n)
		delivered := fmt.Sprintf("%d of %d", r.got, r.n)
		if r.snaps > 0 {
			delivered += fmt.Sprintf(" (%d as SNAPSHOT)", r.snaps)
		}
		if r.holdErr != "" {
			delivered += " — hold failed: " + r.holdErr
		}
		target, res := "", ""
		if r.n >= 10000 {
			target = "all delivered, p99 ≤ 250 ms, ≤ 40 KiB, ≤ 1 goroutine"
			res = verdict(r.got == int64(r.n) && p99 <= fanoutP99Target && perRSS <= fanoutBytesTarget && perG <= 1.01)
		}
		rows = append(rows, []string{strconv.Itoa(r.n) + label, delivered, ms(r.lat.pct(50)), ms(p99), ms(r.lat.max()),
			fmt.Sprintf("%.1f KiB", float64(perRSS)/1024), fmt.Sprintf("%.1f KiB", float64(perHeap)/1024),
			fmt.Sprintf("%.2f", perG), r.connect.Round(time.Millisecond).String(), target, res})
	}
	return rows
}

// fanoutRun starts a child server (with permessage-deflate when compress), grows its
// watchers of show to each of counts in turn and measures one hold's delivery at each.
// It returns the results, the connections lost and the client heap per watcher.
func (b *benchEnv) fanoutRun(ctx context.Context, show benchShow, holder string, counts []int, compress bool) ([]fanResult, int64, int64, error) {
	var env []string
	if compress {
		env = append(env, "SEATFLOW_WS_COMPRESSION=true")
	}
	child, err := b.startChildServer(ctx, env...)
	if err != nil {
		return nil, 0, 0, err
	}
	defer child.Stop()
	client := newBenchClient(child.URL, 4)
	wsURL := gqlclient.WebsocketURL(child.URL)
	// Warm the server's code paths with one watcher that comes and goes.
	f := &fanout{compress: compress}
	if err := f.grow(ctx, wsURL, show.ID, 1); err != nil {
		return nil, 0, 0, err
	}
	f.closeAll()
	time.Sleep(500 * time.Millisecond)
	f = &fanout{compress: compress}
	defer f.closeAll()

	gauges := []string{"go_memstats_heap_inuse_bytes", "go_goroutines"}
	rss0, m0 := child.rssBytes(), child.metrics(gauges...)
	var clientMem0 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&clientMem0)
	var results []fanResult
	var clientHeap int64
	for round, n := range counts {
		t0 := time.Now()
		if err := f.grow(ctx, wsURL, show.ID, n); err != nil {
			b.note("Fan-out stopped at %d watchers: %v", len(f.watchers), err)
			break
		}
		connect := time.Since(t0)
		time.Sleep(time.Second) // let the server settle before reading its memory
		rss, m := child.rssBytes(), child.metrics(gauges...)
		var cm runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&cm)
		progress("bench:   %d watchers connected in %s; server RSS +%.1f MiB, heap in use +%.1f MiB, %0.f goroutines",
			n, connect.Round(time.Millisecond), float64(rss-rss0)/(1<<20), (m["go_memstats_heap_inuse_bytes"]-m0["go_memstats_heap_inuse_bytes"])/(1<<20), m["go_goroutines"])

		// One hold; every watcher must see an event after it.
		f.mu.Lock()
		f.lat = nil
		f.mu.Unlock()
		f.got.Store(0)
		f.snaps.Store(0)
		f.t0.Store(time.Now().UnixNano())
		f.round.Store(int64(round + 1))
		r, err := client.Send(ctx, holder, gqlclient.Body(benchHoldQ, map[string]any{"in": map[string]any{"showtimeId": show.ID,
			"seatIds": []string{show.SeatIDs[round]}, "idempotencyKey": fmt.Sprintf("fan%s-%d", show.ID, round)}}))
		holdErr := ""
		if err != nil {
			holdErr = err.Error()
		} else if r.Err() != nil {
			holdErr = r.Err().Error()
		}
		deadline := time.Now().Add(30 * time.Second)
		for f.got.Load() < int64(len(f.watchers)) && time.Now().Before(deadline) && holdErr == "" {
			time.Sleep(5 * time.Millisecond)
		}
		f.mu.Lock()
		lat := append(latencies(nil), f.lat...)
		f.mu.Unlock()
		res := fanResult{n: len(f.watchers), connect: connect, lat: lat, got: f.got.Load(), snaps: f.snaps.Load(),
			rss: rss - rss0, heap: int64(m["go_memstats_heap_inuse_bytes"] - m0["go_memstats_heap_inuse_bytes"]),
			goroutines: m["go_goroutines"] - m0["go_goroutines"], holdErr: holdErr}
		clientHeap = (int64(cm.HeapInuse) - int64(clientMem0.HeapInuse)) / int64(max(len(f.watchers), 1))
		results = append(results, res)
		progress("bench:   N=%d: delivered %d, p50 %s p99 %s max %s %s", res.n, res.got, ms(lat.pct(50)), ms(lat.pct(99)), ms(lat.max()), holdErr)
	}
	return results, f.lost.Load(), clientHeap, nil
}
