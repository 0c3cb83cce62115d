package live

import (
	"context"
	"iter"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/internal/seats"
	"seatflow/internal/tooling/testenv"
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

// eventWait bounds every wait for a watcher's next event (or its close): a stream that
// stalls fails its test instead of hanging it until go test's own timeout.
const eventWait = 10 * time.Second

func next(t *testing.T, ch <-chan *seatflow.SeatMapEvent) *seatflow.SeatMapEvent {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("subscription closed")
		}
		return ev
	case <-time.After(eventWait):
		t.Fatalf("no event within %v", eventWait)
	}
	return nil
}

// events ranges over ch's events until ch is closed. A channel that neither yields an
// event nor closes within eventWait fails the test, naming what, and ends the loop; it
// fails with t.Errorf, so a loop in any goroutine may use it.
func events(t testing.TB, what string, ch <-chan *seatflow.SeatMapEvent) iter.Seq[*seatflow.SeatMapEvent] {
	return func(yield func(*seatflow.SeatMapEvent) bool) {
		t.Helper()
		timer := time.NewTimer(eventWait)
		defer timer.Stop()
		for {
			timer.Reset(eventWait)
			select {
			case ev, ok := <-ch:
				if !ok || !yield(ev) {
					return
				}
			case <-timer.C:
				t.Errorf("%s: no event and not closed within %v", what, eventWait)
				return
			}
		}
	}
}

// drain reads ch until it is closed (its watch has ended), failing the test if it is
// still open after eventWait without an event.
func drain(t testing.TB, what string, ch <-chan *seatflow.SeatMapEvent) {
	t.Helper()
	for range events(t, what, ch) {
	}
}

// follow reads events until the client's map reaches version, checking that every DELTA
// applies to the version before it (fromVersion) and moves it on.
func follow(t *testing.T, ch <-chan *seatflow.SeatMapEvent, m map[int]seatflow.SeatStatus, last, version int) (map[int]seatflow.SeatStatus, int, []seatflow.SeatMapEventKind) {
	t.Helper()
	var kinds []seatflow.SeatMapEventKind
	for last < version {
		ev := next(t, ch)
		if ev.Kind == seatflow.EventDelta && (ev.FromVersion != last || ev.Version <= last) {
			t.Fatalf("DELTA from version %d to %d after version %d: a change was skipped", ev.FromVersion, ev.Version, last)
		}
		if ev.Kind == seatflow.EventSnapshot && ev.FromVersion != 0 {
			t.Fatalf("SNAPSHOT v%d from version %d, want 0", ev.Version, ev.FromVersion)
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

// lockAll takes every lock of the hub (each shard's and each show's), as an instance too
// busy to deliver would hold it up, until unlock is called.
func (h *Hub) lockAll() (unlock func()) {
	var held []*sync.Mutex
	for i := range h.shards {
		sh := &h.shards[i]
		sh.mu.Lock()
		held = append(held, &sh.mu)
		for _, s := range sh.shows {
			s.mu.Lock()
			held = append(held, &s.mu)
		}
	}
	return func() {
		for i := len(held) - 1; i >= 0; i-- {
			held[i].Unlock()
		}
	}
}
