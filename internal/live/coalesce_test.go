package live

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"seatflow"
	"seatflow/internal/tooling/testenv"
)

// TestCoalescedDeltas: with a tick, a change on a quiet showtime reaches the watcher at
// once; the changes made within the tick after it reach it as one DELTA, from the version
// its map was at to the latest, with the latest state of every seat they changed; and a
// watcher that joins mid-burst gets a SNAPSHOT, then DELTAs from its version.
func TestCoalescedDeltas(t *testing.T) {
	const tick = time.Second
	f := newFixture(t, 3, 10)
	before := goleak.IgnoreCurrent()
	h, stop := f.startHub(t, f.rdb, Options{Tick: tick})
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := h.Watch(ctx, showID, f.hall)
	if err != nil {
		t.Fatal(err)
	}
	snap := next(t, ch)
	m := applyEvent(nil, snap)

	// A quiet showtime: the change is sent without waiting for the tick.
	held := time.Now()
	f.hold(t, 1)
	first := next(t, ch)
	quiet := time.Since(held)
	if first.Kind != seatflow.EventDelta || first.FromVersion != snap.Version || first.Version != snap.Version+1 {
		t.Fatalf("first change: %s v%d→v%d, want DELTA v%d→v%d", first.Kind, first.FromVersion, first.Version, snap.Version, snap.Version+1)
	}
	t.Logf("a change on a quiet showtime reached the watcher %v after its hold began (tick %v)", quiet, tick)
	if quiet > tick/4 {
		t.Errorf("a quiet change took %v to reach the watcher, want well under the tick (%v)", quiet, tick)
	}
	m = applyEvent(m, first)

	// A burst within the tick: seats held, one of them released again, one held twice.
	burstStart := time.Now()
	tokens := map[int]string{}
	for seat := 3; seat <= 12; seat++ {
		tokens[seat] = f.hold(t, seat)
	}
	f.release(t, 5, tokens[5])
	f.release(t, 1, "") // not its token: no change
	if time.Since(burstStart) > tick/2 {
		t.Skipf("the burst took %v, too long to land within one tick of %v on this machine", time.Since(burstStart), tick)
	}

	// A watcher joins mid-burst (the burst's changes wait for the tick), once the show has
	// the burst's deltas: a snapshot read before they arrive over pub/sub moves the show
	// past them, and the seat held and released within the tick (the same before and
	// after) would then rightly be left out of the DELTA this test reads.
	_, burstVersion := f.realMap(t)
	waitShowAt(t, h, burstVersion)
	late, err := h.Watch(ctx, showID, f.hall)
	if err != nil {
		t.Fatal(err)
	}
	lateSnap := next(t, late)
	if lateSnap.Kind != seatflow.EventSnapshot {
		t.Fatalf("the late watcher's first event: %s, want SNAPSHOT", lateSnap.Kind)
	}
	f.hold(t, 20) // after the late watcher's snapshot, still within the tick

	want, version := f.realMap(t)
	ev := next(t, ch)
	sinceFirst := time.Since(held)
	if ev.Kind != seatflow.EventDelta || ev.FromVersion != first.Version || ev.Version != version {
		t.Fatalf("after the burst: %s v%d→v%d, want one DELTA v%d→v%d", ev.Kind, ev.FromVersion, ev.Version, first.Version, version)
	}
	if sinceFirst < tick*9/10 {
		t.Errorf("the burst's DELTA came %v after the first, want about a tick (%v)", sinceFirst, tick)
	}
	wantSeats := map[int]seatflow.SeatStatus{5: seatflow.SeatAvailable, 20: seatflow.SeatHeld}
	for seat := 3; seat <= 12; seat++ {
		if seat != 5 {
			wantSeats[seat] = seatflow.SeatHeld
		}
	}
	got := map[int]seatflow.SeatStatus{}
	for _, s := range ev.Seats {
		got[s.Seat.ID] = s.Status
	}
	if fmt.Sprint(got) != fmt.Sprint(wantSeats) {
		t.Errorf("the burst's DELTA seats:\n got %v\nwant %v (the latest state of each seat changed)", got, wantSeats)
	}
	if ev.Available != snap.Available-11 {
		t.Errorf("available after the burst: %d, want %d", ev.Available, snap.Available-11)
	}
	m = applyEvent(m, ev)
	if fmt.Sprint(m) != fmt.Sprint(want) {
		t.Errorf("watcher's map:\n got %v\nwant %v", m, want)
	}

	// The late watcher: DELTAs from its snapshot's version, to the same map.
	lm, _, kinds := follow(t, late, applyEvent(nil, lateSnap), lateSnap.Version, version)
	for _, k := range kinds {
		if k != seatflow.EventDelta {
			t.Errorf("the late watcher got %v after its SNAPSHOT, want DELTAs", kinds)
		}
	}
	if fmt.Sprint(lm) != fmt.Sprint(want) {
		t.Errorf("late watcher's map:\n got %v\nwant %v", lm, want)
	}

	// Quiet again: the next change comes at once, not a tick later.
	time.Sleep(tick)
	held = time.Now()
	f.hold(t, 25)
	for _, c := range []<-chan *seatflow.SeatMapEvent{ch, late} {
		if ev := next(t, c); ev.Kind != seatflow.EventDelta || ev.FromVersion != version || ev.Version != version+1 {
			t.Errorf("after the quiet: %s v%d→v%d, want DELTA v%d→v%d", ev.Kind, ev.FromVersion, ev.Version, version, version+1)
		}
	}
	if d := time.Since(held); d > tick/4 {
		t.Errorf("a change after a quiet tick took %v, want well under the tick", d)
	}
	cancel()
	drain(t, "the first watcher", ch)
	drain(t, "the late watcher", late)
	stop()
	testenv.NoGoroutineLeft(t, before)
}

// TestSnapshotNewerThanTheDeltas: a watcher's snapshot can be read before the delta of a
// change reaches the hub; the show moves on to it, and the watchers already there get the
// seats it changed as a DELTA at once, not at the next change.
func TestSnapshotNewerThanTheDeltas(t *testing.T) {
	f := newFixture(t, 1, 6)
	h, _ := f.startHub(t, f.rdb, Options{Tick: 50 * time.Millisecond})
	ch, err := h.Watch(t.Context(), showID, f.hall)
	if err != nil {
		t.Fatal(err)
	}
	snap := next(t, ch)
	// A change whose delta has not come yet: the seat sold and the version moved, nothing
	// published (the delta that follows would be ignored as already known).
	ctx := t.Context()
	if err := f.rdb.HSet(ctx, f.red.Keys.Seats(showID), "4", "2|tok").Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.rdb.Incr(ctx, f.red.Keys.Version(showID)).Err(); err != nil {
		t.Fatal(err)
	}
	late, err := h.Watch(t.Context(), showID, f.hall)
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(t, late); ev.Kind != seatflow.EventSnapshot || ev.Version != snap.Version+1 {
		t.Fatalf("the second watcher: %s v%d, want SNAPSHOT v%d", ev.Kind, ev.Version, snap.Version+1)
	}
	ev := next(t, ch)
	if ev.Kind != seatflow.EventDelta || ev.FromVersion != snap.Version || ev.Version != snap.Version+1 ||
		len(ev.Seats) != 1 || ev.Seats[0].Seat.ID != 4 || ev.Seats[0].Status != seatflow.SeatSold {
		t.Fatalf("the first watcher: %s v%d→v%d %+v, want DELTA v%d→v%d selling seat 4", ev.Kind, ev.FromVersion, ev.Version,
			ev.Seats, snap.Version, snap.Version+1)
	}
	if ev.Available != snap.Available-1 {
		t.Errorf("available: %d, want %d", ev.Available, snap.Available-1)
	}
}

// waitShowAt waits until the hub knows showID's seat map at version or later (Hub.Version:
// the show has applied the deltas up to it).
func waitShowAt(t *testing.T, h *Hub, version int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for at, _ := h.Version(showID); at < version; at, _ = h.Version(showID) {
		if time.Now().After(deadline) {
			t.Fatalf("the hub knows the seat map at v%d, want v%d within 5s", at, version)
		}
		time.Sleep(time.Millisecond)
	}
}

// pullSink is a Sink that takes its DELTAs only when the test says (as a connection
// whose writer is busy elsewhere): it counts how often it was told one was due.
type pullSink struct {
	recordSink
	mu    sync.Mutex
	due   int
	taken *Watcher
}

func (s *pullSink) Due(w *Watcher) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.due++
	s.taken = w
	return true
}

func (s *pullSink) dues() (int, *Watcher) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.due, s.taken
}

// TestDueDeltaCarriesWhatCameMeanwhile: a watcher whose connection has not taken its
// DELTA yet is told of it once, however many changes follow (one DELTA per change, tick
// 0); when it takes it, the DELTA carries every change since its version, in each seat's
// latest state, and chains to the next one.
func TestDueDeltaCarriesWhatCameMeanwhile(t *testing.T) {
	f := newFixture(t, 1, 8)
	h, _ := f.startHub(t, f.rdb, Options{})
	sink := &pullSink{recordSink: *newRecordSink()}
	if err := h.WatchWith(t.Context(), showID, f.hall, sink); err != nil {
		t.Fatal(err)
	}
	snap := <-sink.ch
	tok3 := f.hold(t, 3)
	f.hold(t, 4)
	f.release(t, 3, tok3)
	f.hold(t, 5)
	_, version := f.realMap(t)
	waitShowAt(t, h, version)
	h.eachShow(func(*show) {}) // the write that follows taking the delta is done too
	due, w := sink.dues()
	if due != 1 || w == nil {
		t.Fatalf("told %d times of a DELTA due after 4 changes, want once", due)
	}
	ev := w.Next()
	if ev == nil || ev.Kind != seatflow.EventDelta || ev.FromVersion != snap.Version || ev.Version != version {
		t.Fatalf("DELTA taken: %+v, want v%d→v%d", ev, snap.Version, version)
	}
	got := map[int]seatflow.SeatStatus{}
	for _, s := range ev.Seats {
		got[s.Seat.ID] = s.Status
	}
	want := map[int]seatflow.SeatStatus{3: seatflow.SeatAvailable, 4: seatflow.SeatHeld, 5: seatflow.SeatHeld}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("seats: %v, want %v", got, want)
	}
	if again := w.Next(); again != nil {
		t.Errorf("taken twice: %+v", again)
	}
	f.hold(t, 6)
	waitShowAt(t, h, version+1)
	h.eachShow(func(*show) {})
	if due, _ := sink.dues(); due != 2 {
		t.Fatalf("told %d times after the next change, want 2", due)
	}
	if ev := w.Next(); ev == nil || ev.FromVersion != version || ev.Version != version+1 {
		t.Errorf("next DELTA: %+v, want v%d→v%d", ev, version, version+1)
	}
}
