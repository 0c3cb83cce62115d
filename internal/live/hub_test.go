package live

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"seatflow"
	"seatflow/internal/tooling/testenv"
)

func TestSnapshotThenDelta(t *testing.T) {
	f := newFixture(t, 2, 5)
	before := goleak.IgnoreCurrent()
	h, stop := f.startHub(t, f.rdb, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := h.Watch(ctx, showID, f.hall)
	if err != nil {
		t.Fatal(err)
	}

	snap := next(t, ch)
	if snap.Kind != seatflow.EventSnapshot || snap.ShowtimeID != showID || len(snap.Seats) != len(f.hall.Seats) {
		t.Fatalf("first event: got %s show %d with %d seats, want SNAPSHOT of show %d with %d seats",
			snap.Kind, snap.ShowtimeID, len(snap.Seats), showID, len(f.hall.Seats))
	}
	for _, s := range snap.Seats {
		want := seatflow.SeatAvailable
		if s.Seat.ID == 2 {
			want = seatflow.SeatUnavailable
		}
		if s.Status != want {
			t.Errorf("seat %d: got %s, want %s", s.Seat.ID, s.Status, want)
		}
	}

	f.hold(t, 4)
	ev := next(t, ch)
	if ev.Kind != seatflow.EventDelta || ev.Version != snap.Version+1 {
		t.Fatalf("after a hold: got %s v%d, want DELTA v%d", ev.Kind, ev.Version, snap.Version+1)
	}
	want := seatflow.SeatState{ShowtimeID: showID, Seat: f.hall.Seats[3], Status: seatflow.SeatHeld}
	if len(ev.Seats) != 1 || ev.Seats[0] != want {
		t.Fatalf("delta seats: got %+v, want [%+v]", ev.Seats, want)
	}
	if snap.Available != len(f.hall.Seats)-1 || ev.Available != snap.Available-1 {
		t.Fatalf("available: snapshot %d, after a hold %d; want %d then %d", snap.Available, ev.Available,
			len(f.hall.Seats)-1, len(f.hall.Seats)-2)
	}

	cancel()
	drain(t, "the cancelled watch", ch)
	stop()
	testenv.NoGoroutineLeft(t, before)
}

func TestTwoInstancesBothSeeAChange(t *testing.T) {
	f := newFixture(t, 2, 5)
	hubA, _ := f.startHub(t, testenv.NewRedisClient(t), Options{})
	hubB, _ := f.startHub(t, testenv.NewRedisClient(t), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	chA, err := hubA.Watch(ctx, showID, f.hall)
	if err != nil {
		t.Fatal(err)
	}
	chB, err := hubB.Watch(ctx, showID, f.hall)
	if err != nil {
		t.Fatal(err)
	}
	va, vb := next(t, chA).Version, next(t, chB).Version
	f.hold(t, 5)
	for name, c := range map[string]struct {
		ch <-chan *seatflow.SeatMapEvent
		v  int
	}{"A": {chA, va}, "B": {chB, vb}} {
		ev := next(t, c.ch)
		if ev.Kind != seatflow.EventDelta || ev.Version != c.v+1 || ev.Seats[0].Seat.ID != 5 {
			t.Errorf("instance %s: got %s v%d %+v, want DELTA v%d for seat 5", name, ev.Kind, ev.Version, ev.Seats, c.v+1)
		}
	}
}

func TestStormEveryWatcherEndsWithTheRealMap(t *testing.T) {
	f := newFixture(t, 4, 10)
	before := goleak.IgnoreCurrent()
	h, stop := f.startHub(t, f.rdb, Options{Buffer: 16})
	stormCtx, endStorm := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer endStorm()

	// Watchers that stay for the whole storm.
	type stayer struct {
		ch   <-chan *seatflow.SeatMapEvent
		m    map[int]seatflow.SeatStatus
		last int
	}
	watchCtx, stopWatching := context.WithCancel(context.Background())
	var stayers []*stayer
	for range 3 {
		ch, err := h.Watch(watchCtx, showID, f.hall)
		if err != nil {
			t.Fatal(err)
		}
		stayers = append(stayers, &stayer{ch: ch})
	}

	var wg sync.WaitGroup
	// Writers: hold a random seat, release it a moment later.
	for range 4 {
		wg.Go(func() {
			for stormCtx.Err() == nil {
				seat := 1 + rand.IntN(len(f.hall.Seats))
				if token := f.hold(t, seat); token != "" && rand.IntN(3) > 0 {
					f.release(t, seat, token)
				}
			}
		})
	}
	// Watchers that join and leave during the storm; each checks its stream.
	for range 8 {
		wg.Go(func() {
			for stormCtx.Err() == nil {
				ctx, cancel := context.WithTimeout(stormCtx, time.Duration(rand.IntN(60))*time.Millisecond)
				ch, err := h.Watch(ctx, showID, f.hall)
				if err != nil {
					cancel()
					if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
						t.Error(err)
					}
					continue
				}
				last := -1
				for ev := range events(t, "a joining watcher", ch) {
					if last >= 0 && ev.Kind == seatflow.EventDelta && (ev.FromVersion != last || ev.Version <= last) {
						t.Errorf("DELTA v%d→v%d after v%d", ev.FromVersion, ev.Version, last)
					}
					if ev.Kind == seatflow.EventSnapshot && ev.Version < last {
						t.Errorf("SNAPSHOT v%d after v%d", ev.Version, last)
					}
					last = ev.Version
				}
				cancel()
			}
		})
	}
	// The stayers read while the storm goes on (concurrently, so none blocks another).
	var readers sync.WaitGroup
	var mu sync.Mutex // guards the stayers' maps
	for _, s := range stayers {
		readers.Go(func() {
			for ev := range events(t, "a stayer", s.ch) {
				if ev.Kind == seatflow.EventDelta && (ev.FromVersion != s.last || ev.Version <= s.last) {
					t.Errorf("stayer: DELTA v%d→v%d after v%d", ev.FromVersion, ev.Version, s.last)
				}
				mu.Lock()
				s.m, s.last = applyEvent(s.m, ev), ev.Version
				mu.Unlock()
			}
		})
	}
	wg.Wait()

	want, version := f.realMap(t)
	if version < 50 {
		t.Fatalf("storm made only %d changes", version)
	}
	t.Logf("storm: %d changes; resync snapshots so far: gap %v, slow %v", version,
		counterValue(snapshotsSent.WithLabelValues(ReasonGap)), counterValue(snapshotsSent.WithLabelValues(ReasonSlow)))
	deadline := time.Now().Add(10 * time.Second)
	for {
		caughtUp := true
		for _, s := range stayers {
			mu.Lock()
			caughtUp = caughtUp && s.last >= version
			mu.Unlock()
		}
		if caughtUp || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopWatching()
	readers.Wait()
	for i, s := range stayers {
		if s.last != version {
			t.Errorf("stayer %d: at version %d, want %d", i, s.last, version)
		}
		if got := fmt.Sprint(s.m); got != fmt.Sprint(want) {
			t.Errorf("stayer %d map:\n got %s\nwant %v", i, got, want)
		}
	}
	stop()
	testenv.NoGoroutineLeft(t, before)
}

func TestSubscriptionLimitPerConnection(t *testing.T) {
	f := newFixture(t, 1, 3)
	h, _ := f.startHub(t, f.rdb, Options{})
	conn := LimitSubscriptions(context.Background(), 1)
	first, cancelFirst := context.WithCancel(conn)
	ch, err := h.Watch(first, showID, f.hall)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Watch(conn, showID, f.hall); seatflow.ErrorCode(err) != seatflow.ERATELIMITED {
		t.Fatalf("second subscription: got %v, want RATE_LIMITED", err)
	}
	cancelFirst()
	drain(t, "the first subscription", ch)
	ctx, cancel := context.WithCancel(conn)
	defer cancel()
	if _, err := h.Watch(ctx, showID, f.hall); err != nil {
		t.Fatalf("after the first ended: %v", err)
	}
}

func TestWatchersEndWhenHubStops(t *testing.T) {
	f := newFixture(t, 1, 3)
	before := goleak.IgnoreCurrent()
	h, stop := f.startHub(t, f.rdb, Options{})
	ch, err := h.Watch(context.Background(), showID, f.hall)
	if err != nil {
		t.Fatal(err)
	}
	next(t, ch)
	stop()
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("event after stop, want the channel closed")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("channel still open 5s after the hub stopped")
	}
	if _, err := h.Watch(context.Background(), showID, f.hall); seatflow.ErrorCode(err) != seatflow.EUNAVAILABLE {
		t.Errorf("Watch after stop: got %v, want SERVICE_UNAVAILABLE", err)
	}
	testenv.NoGoroutineLeft(t, before)
}
