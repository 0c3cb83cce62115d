package wstransport_test

import (
	"context"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seatflow/internal/seats"
	"seatflow/internal/tooling/testenv"
	"seatflow/internal/wstransport"
)

// TestWritersGiveWayToRequests: while the registry's writer runs passes over a thousand
// watchers, it rests only while an HTTP request has been under way for a while, never
// more than its share leaves to the requests, and keeps writing meanwhile; with no
// request under way it never rests. The registry runs its writer on a processor of its
// own, given back when it closes.
func TestWritersGiveWayToRequests(t *testing.T) {
	const (
		watchers = 1000
		share    = 0.5
		phase    = 400 * time.Millisecond
	)
	release := make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	defer free()
	procs := runtime.GOMAXPROCS(0)
	reg := &wstransport.Registry{Requests: &wstransport.Requests{}, Share: share}
	w := newWorld(t, worldOptions{writeTimeout: time.Minute, registry: reg,
		requests: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release })})

	var frames atomic.Int64
	var readers sync.WaitGroup
	t.Cleanup(readers.Wait) // after the connections close (cleanups run last first)
	for range watchers {
		c := w.subscribe(t, "subscription($id: ID!) { seatMap(showtimeId: $id) { version seats { status } } }")
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				if _, _, err := c.ReadMessage(); err != nil {
					return
				}
				frames.Add(1)
			}
		}()
	}
	writers := max(1, procs/2)
	if got := runtime.GOMAXPROCS(0); got != procs+writers {
		t.Fatalf("GOMAXPROCS %d while the registry runs, want %d + %d for its writers", got, procs, writers)
	}

	// Changes all along: the writer runs a pass over every watcher each tick.
	ctx, stop := context.WithCancel(context.Background())
	changing := make(chan error, 1)
	go func() { changing <- w.keepChanging(ctx) }()
	defer func() {
		stop()
		if err := <-changing; err != nil {
			t.Errorf("changes: %v", err)
		}
	}()

	measure := func() (rested float64, written int64, took time.Duration) {
		r0, f0, t0 := metric(t, "seatflow_websocket_writer_rest_seconds_total", nil), frames.Load(), time.Now()
		time.Sleep(phase)
		return metric(t, "seatflow_websocket_writer_rest_seconds_total", nil) - r0, frames.Load() - f0, time.Since(t0)
	}
	if rested, written, _ := measure(); rested != 0 || written == 0 {
		t.Fatalf("no request under way: the writer rested %.3fs and wrote %d frames; want no rest and frames", rested, written)
	}

	requested := make(chan error, 1)
	go func() {
		resp, err := http.Get(w.httpURL + "/request")
		if err == nil {
			resp.Body.Close()
		}
		requested <- err
	}()
	rested, written, took := measure()
	if rested == 0 || written == 0 {
		t.Fatalf("a request under way for %s: the writer rested %.3fs and wrote %d frames; want it to rest and still write", took, rested, written)
	}
	if most := (1-share)*took.Seconds() + 0.05; rested > most {
		t.Fatalf("the writer rested %.3fs of %s, more than its share leaves (%.3fs)", rested, took, most)
	}
	free()
	if err := <-requested; err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // a rest under way ends
	if rested, _, _ := measure(); rested != 0 {
		t.Fatalf("the request ended, but the writer rested %.3fs more", rested)
	}

	stop()
	reg.Close()
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Fatalf("GOMAXPROCS %d after the registry closed, want %d back", got, procs)
	}
}

// keepChanging holds and releases seats of the world's showtime until ctx ends.
func (w *slowWorld) keepChanging(ctx context.Context) error {
	layout := seats.NewLayout(w.hall)
	held := map[int]string{}
	for i := 0; ctx.Err() == nil; i++ {
		seat := 1 + i%len(w.hall.Seats)
		if token, ok := held[seat]; ok {
			if _, err := w.store.Release(ctx, w.show, token, "u", []int{seat}); err != nil && ctx.Err() == nil {
				return err
			}
			delete(held, seat)
		} else {
			token := testenv.RandomName("tok")
			if err := w.store.Hold(ctx, seats.HoldRequest{ShowtimeID: w.show, Layout: layout, SeatIDs: []int{seat},
				Token: token, UserID: "u", AllowGaps: true}); err != nil && ctx.Err() == nil {
				return err
			}
			held[seat] = token
		}
		time.Sleep(2 * time.Millisecond)
	}
	return nil
}
