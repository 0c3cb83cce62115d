package live

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/internal/seats"
	"seatflow/internal/testenv"
)

const showID = 7

// testHall is rows × perRow seats with ids 1..n; seat 2 is unsellable.
func testHall(rows, perRow int) *seatflow.Hall {
	h := &seatflow.Hall{ID: 1, Name: "Hall 1"}
	id := 1
	for r := 0; r < rows; r++ {
		for n := 1; n <= perRow; n++ {
			h.Seats = append(h.Seats, seatflow.Seat{ID: id, HallID: 1, Row: string(rune('A' + r)), Number: n,
				X: n, Y: r, Kind: seatflow.SeatStandard, Sellable: id != 2})
			id++
		}
	}
	return h
}

type fixture struct {
	rdb   redis.UniversalClient
	store *seats.Store
	hall  *seatflow.Hall
	red   *testenv.Redis
}

func newFixture(t *testing.T, rows, perRow int) *fixture {
	t.Helper()
	red := testenv.NewRedis(t)
	f := &fixture{rdb: red.Client, red: red, hall: testHall(rows, perRow),
		store: &seats.Store{RDB: red.Client, Keys: red.Keys}}
	if _, err := f.store.Init(context.Background(), showID, f.hall, nil); err != nil {
		t.Fatal(err)
	}
	return f
}

// startHub runs a hub on rdb until the test ends (or stop is called).
func (f *fixture) startHub(t *testing.T, rdb redis.UniversalClient, opts Options) (*Hub, func()) {
	t.Helper()
	h := NewHub(rdb, f.red.Keys, &seats.Store{RDB: rdb, Keys: f.red.Keys}, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return h, stop
}

// hold holds seat for a fresh token and returns the token ("" if the seat was taken).
func (f *fixture) hold(t *testing.T, seat int) string {
	t.Helper()
	token := testenv.RandomName("tok")
	err := f.store.Hold(context.Background(), seats.HoldRequest{ShowtimeID: showID, Layout: seats.NewLayout(f.hall),
		SeatIDs: []int{seat}, Token: token, UserID: "u", AllowGaps: true})
	if seatflow.ErrorCode(err) == seatflow.ESEATSUNAVAILABLE {
		return ""
	}
	if err != nil {
		t.Error(err)
		return ""
	}
	return token
}

func (f *fixture) release(t *testing.T, seat int, token string) {
	t.Helper()
	if _, err := f.store.Release(context.Background(), showID, token, "u", []int{seat}); err != nil {
		t.Error(err)
	}
}

func (f *fixture) realMap(t *testing.T) (map[int]seatflow.SeatStatus, int) {
	t.Helper()
	m, err := f.store.Map(context.Background(), showID, f.hall)
	if err != nil {
		t.Fatal(err)
	}
	return applyEvent(nil, &seatflow.SeatMapEvent{Kind: seatflow.EventSnapshot, Version: m.Version, Seats: m.Seats}), m.Version
}

// applyEvent applies an event to a client-side map, as a front end would.
func applyEvent(m map[int]seatflow.SeatStatus, ev *seatflow.SeatMapEvent) map[int]seatflow.SeatStatus {
	if ev.Kind == seatflow.EventSnapshot || m == nil {
		m = map[int]seatflow.SeatStatus{}
	}
	for _, s := range ev.Seats {
		m[s.Seat.ID] = s.Status
	}
	return m
}

func next(t *testing.T, ch <-chan *seatflow.SeatMapEvent) *seatflow.SeatMapEvent {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("subscription closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	return nil
}

// follow reads events until the client's map reaches version, checking that every DELTA
// follows the previous version by exactly one.
func follow(t *testing.T, ch <-chan *seatflow.SeatMapEvent, m map[int]seatflow.SeatStatus, last, version int) (map[int]seatflow.SeatStatus, int, []seatflow.SeatMapEventKind) {
	t.Helper()
	var kinds []seatflow.SeatMapEventKind
	for last < version {
		ev := next(t, ch)
		if ev.Kind == seatflow.EventDelta && ev.Version != last+1 {
			t.Fatalf("DELTA version %d after version %d: a change was skipped", ev.Version, last)
		}
		m, last = applyEvent(m, ev), ev.Version
		kinds = append(kinds, ev.Kind)
	}
	return m, last, kinds
}

// counterValue reads a counter's current value.
func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	_ = c.Write(&m)
	return m.GetCounter().GetValue()
}

// noGoroutineLeft waits until the goroutine count is back to before.
func noGoroutineLeft(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines: got %d, want ≤ %d\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSnapshotThenDelta(t *testing.T) {
	f := newFixture(t, 2, 5)
	before := runtime.NumGoroutine()
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
	want := seatflow.SeatState{Seat: f.hall.Seats[3], Status: seatflow.SeatHeld}
	if len(ev.Seats) != 1 || ev.Seats[0] != want {
		t.Fatalf("delta seats: got %+v, want [%+v]", ev.Seats, want)
	}

	cancel()
	for range ch {
	}
	stop()
	noGoroutineLeft(t, before)
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
	before := runtime.NumGoroutine()
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
				for ev := range ch {
					if last >= 0 && ev.Kind == seatflow.EventDelta && ev.Version != last+1 {
						t.Errorf("DELTA v%d after v%d", ev.Version, last)
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
			for ev := range s.ch {
				if ev.Kind == seatflow.EventDelta && ev.Version != s.last+1 {
					t.Errorf("stayer: DELTA v%d after v%d", ev.Version, s.last)
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
	noGoroutineLeft(t, before)
}

func TestSlowReaderDoesNotDelayOthers(t *testing.T) {
	f := newFixture(t, 5, 10)
	h, _ := f.startHub(t, f.rdb, Options{Buffer: 16})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slow, err := h.Watch(ctx, showID, f.hall)
	if err != nil {
		t.Fatal(err)
	}
	fast, err := h.Watch(ctx, showID, f.hall)
	if err != nil {
		t.Fatal(err)
	}
	slowBefore := counterValue(slowSubscribers)
	resyncsBefore := counterValue(snapshotsSent.WithLabelValues(ReasonSlow))

	// The fast watcher reads each change as it happens (the next change waits for it, so a
	// busy machine cannot make it fall behind) and gets every one as a DELTA, while the slow
	// one reads nothing and overflows its buffer.
	snap := next(t, fast)
	type result struct {
		m     map[int]seatflow.SeatStatus
		kinds []seatflow.SeatMapEventKind
	}
	const changes = 45
	r := result{m: applyEvent(nil, snap)}
	last := snap.Version
	for seat := 3; seat < 3+changes; seat++ {
		f.hold(t, seat)
		var kinds []seatflow.SeatMapEventKind
		r.m, last, kinds = follow(t, fast, r.m, last, last+1)
		r.kinds = append(r.kinds, kinds...)
	}
	want, version := f.realMap(t)
	if version != snap.Version+changes {
		t.Fatalf("version: got %d, want %d", version, snap.Version+changes)
	}
	for _, k := range r.kinds {
		if k != seatflow.EventDelta {
			t.Fatalf("fast watcher got %v, want only DELTAs (snapshots: gap %v, slow %v, reconnect %v)", r.kinds,
				counterValue(snapshotsSent.WithLabelValues(ReasonGap)), counterValue(snapshotsSent.WithLabelValues(ReasonSlow)),
				counterValue(snapshotsSent.WithLabelValues(ReasonReconnect)))
		}
	}
	if fmt.Sprint(r.m) != fmt.Sprint(want) {
		t.Errorf("fast watcher map:\n got %v\nwant %v", r.m, want)
	}

	snap = next(t, slow)
	m, _, kinds := follow(t, slow, applyEvent(nil, snap), snap.Version, version)
	if fmt.Sprint(m) != fmt.Sprint(want) {
		t.Errorf("slow watcher map:\n got %v\nwant %v", m, want)
	}
	if !slices.Contains(kinds, seatflow.EventSnapshot) {
		t.Errorf("slow watcher got %v, want a resync SNAPSHOT", kinds)
	}
	if got := counterValue(slowSubscribers) - slowBefore; got != 1 {
		t.Errorf("slow subscribers counted: got %v, want 1", got)
	}
	if got := counterValue(snapshotsSent.WithLabelValues(ReasonSlow)) - resyncsBefore; got < 1 {
		t.Errorf("slow resync snapshots: got %v, want ≥ 1", got)
	}
}

func TestDroppedPubSubConnectionResyncs(t *testing.T) {
	if os.Getenv("SEATFLOW_TEST_REDIS_CLUSTER") != "" {
		t.Skip("kills a connection by id on a single server")
	}
	f := newFixture(t, 2, 5)
	opt, err := redis.ParseURL(testenv.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	name := testenv.RandomName("livetest")
	opt.ClientName = name
	hubClient := redis.NewClient(opt)
	t.Cleanup(func() { hubClient.Close() })
	before := runtime.NumGoroutine()
	h, stop := f.startHub(t, hubClient, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := h.Watch(ctx, showID, f.hall)
	if err != nil {
		t.Fatal(err)
	}
	snap := next(t, ch)
	ch2, err := h.Watch(ctx, showID, f.hall) // a second watcher of the same show
	if err != nil {
		t.Fatal(err)
	}
	next(t, ch2)
	reconnectsBefore := counterValue(snapshotsSent.WithLabelValues(ReasonReconnect))

	// Kill the hub's pub/sub connection, then change a seat: the delta may be lost.
	list, err := f.rdb.ClientList(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	for _, line := range strings.Split(list, "\n") {
		if strings.Contains(line, " name="+name+" ") && strings.Contains(line, " flags=P ") {
			id := strings.TrimPrefix(strings.Fields(line)[0], "id=")
			if err := f.rdb.Do(context.Background(), "CLIENT", "KILL", "ID", id).Err(); err != nil {
				t.Fatal(err)
			}
			killed++
		}
	}
	if killed != 1 {
		t.Fatalf("pub/sub connections of the hub: got %d, want 1", killed)
	}
	f.hold(t, 3)

	ev := next(t, ch)
	m := applyEvent(applyEvent(nil, snap), ev)
	if ev.Kind == seatflow.EventDelta {
		ev = next(t, ch) // the delta got through before the kill took effect
		m = applyEvent(m, ev)
	}
	if ev.Kind != seatflow.EventSnapshot {
		t.Fatalf("after reconnect: got %s v%d, want SNAPSHOT", ev.Kind, ev.Version)
	}
	ev2 := next(t, ch2)
	if ev2.Kind == seatflow.EventDelta {
		ev2 = next(t, ch2)
	}
	if ev2 != ev {
		t.Errorf("the two watchers got different snapshots (%s v%d, %s v%d): want one read for the show",
			ev.Kind, ev.Version, ev2.Kind, ev2.Version)
	}
	// Only now: a snapshot is counted before its own watcher can see it, so the first
	// watcher may read its one while the hub is still settling the second.
	if got := counterValue(snapshotsSent.WithLabelValues(ReasonReconnect)) - reconnectsBefore; got < 2 {
		t.Errorf("reconnect snapshots: got %v, want ≥ 2 (one per watcher)", got)
	}
	f.hold(t, 4)
	want, version := f.realMap(t)
	m, _, _ = follow(t, ch, m, ev.Version, version)
	if fmt.Sprint(m) != fmt.Sprint(want) {
		t.Errorf("map after reconnect:\n got %v\nwant %v", m, want)
	}
	cancel()
	for range ch {
	}
	for range ch2 {
	}
	for range ch2 {
	}
	stop()
	noGoroutineLeft(t, before)
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
	for range ch {
	}
	ctx, cancel := context.WithCancel(conn)
	defer cancel()
	if _, err := h.Watch(ctx, showID, f.hall); err != nil {
		t.Fatalf("after the first ended: %v", err)
	}
}

func TestWatchersEndWhenHubStops(t *testing.T) {
	f := newFixture(t, 1, 3)
	before := runtime.NumGoroutine()
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
	noGoroutineLeft(t, before)
}

// TestVersionGapResyncs: a delta whose predecessor never arrived (the version moved on by
// two) is not applied; the watcher gets a fresh SNAPSHOT instead, and then deltas again.
func TestVersionGapResyncs(t *testing.T) {
	f, _, ch := watchOne(t)
	ctx := t.Context()
	snap := next(t, ch)
	gaps := counterValue(snapshotsSent.WithLabelValues(ReasonGap))
	if err := f.rdb.Incr(ctx, f.red.Keys.Version(showID)).Err(); err != nil { // a change nobody published
		t.Fatal(err)
	}
	if f.hold(t, 1) == "" {
		t.Fatal("seat 1 not held")
	}
	ev := next(t, ch)
	if ev.Kind != seatflow.EventSnapshot || ev.Version != snap.Version+2 {
		t.Fatalf("after a gap: %s v%d, want SNAPSHOT v%d", ev.Kind, ev.Version, snap.Version+2)
	}
	if got := counterValue(snapshotsSent.WithLabelValues(ReasonGap)) - gaps; got != 1 {
		t.Errorf("gap snapshots: got %v, want 1", got)
	}
	if f.hold(t, 3) == "" {
		t.Fatal("seat 3 not held")
	}
	if ev := next(t, ch); ev.Kind != seatflow.EventDelta || ev.Version != snap.Version+3 {
		t.Fatalf("after the resync: %s v%d, want DELTA v%d", ev.Kind, ev.Version, snap.Version+3)
	}
}

// TestResyncAskedDuringResync: a resync asked for while one is under way (its snapshot may
// predate what prompted it) is not dropped: a second SNAPSHOT is read and sent after the
// first.
func TestResyncAskedDuringResync(t *testing.T) {
	_, h, ch := watchOne(t)
	next(t, ch)
	gaps := counterValue(snapshotsSent.WithLabelValues(ReasonGap))
	reconnects := counterValue(snapshotsSent.WithLabelValues(ReasonReconnect))
	h.mu.Lock()
	for _, s := range h.shows {
		for w := range s.watchers {
			h.startResync(w, ReasonGap)       // its snapshot cannot settle while we hold the lock
			h.startResync(w, ReasonReconnect) // so this one comes during it
		}
	}
	h.mu.Unlock()
	// The second snapshot takes the place of the first if the client has not taken that one
	// yet (resync drains the channel), so the client sees one or two: wait until both were
	// sent, then read them.
	deadline := time.Now().Add(10 * time.Second)
	for counterValue(snapshotsSent.WithLabelValues(ReasonGap))-gaps < 1 ||
		counterValue(snapshotsSent.WithLabelValues(ReasonReconnect))-reconnects < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("snapshots sent within 10s: gap %v, reconnect %v, want 1 each",
				counterValue(snapshotsSent.WithLabelValues(ReasonGap))-gaps,
				counterValue(snapshotsSent.WithLabelValues(ReasonReconnect))-reconnects)
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.mu.Lock() // settle counts a snapshot just before it puts it in the channel, under h.mu
	n := len(ch)
	h.mu.Unlock()
	if n < 1 || n > 2 {
		t.Fatalf("events waiting: got %d, want 1 or 2 SNAPSHOTs", n)
	}
	for i := 0; i < n; i++ {
		if ev := next(t, ch); ev.Kind != seatflow.EventSnapshot {
			t.Fatalf("event %d: %s, want SNAPSHOT", i+1, ev.Kind)
		}
	}
	if got := counterValue(snapshotsSent.WithLabelValues(ReasonGap)) - gaps; got != 1 {
		t.Errorf("gap snapshots: got %v, want 1", got)
	}
	if got := counterValue(snapshotsSent.WithLabelValues(ReasonReconnect)) - reconnects; got != 1 {
		t.Errorf("reconnect snapshots: got %v, want 1", got)
	}
}

// watchOne starts a hub on a 6-seat showtime and one watcher of it, until the test ends.
func watchOne(t *testing.T) (*fixture, *Hub, <-chan *seatflow.SeatMapEvent) {
	t.Helper()
	f := newFixture(t, 1, 6)
	h, _ := f.startHub(t, f.rdb, Options{})
	ch, err := h.Watch(t.Context(), showID, f.hall)
	if err != nil {
		t.Fatal(err)
	}
	return f, h, ch
}
