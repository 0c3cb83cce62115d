package live

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"seatflow"
	"seatflow/internal/tooling/testenv"
)

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
	// one reads nothing and fills its buffer.
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

	// The slow watcher took Buffer DELTAs, one per change; the rest were merged into one
	// DELTA, never queued change by change, and its map is the real one.
	snap = next(t, slow)
	m := applyEvent(nil, snap)
	at := snap.Version
	var merged []*seatflow.SeatMapEvent
	for at < version {
		ev := next(t, slow)
		if ev.Kind != seatflow.EventDelta || ev.FromVersion != at || ev.Version <= at {
			t.Fatalf("slow watcher at v%d: %s v%d→v%d, want the DELTA from v%d", at, ev.Kind, ev.FromVersion, ev.Version, at)
		}
		if ev.Version > ev.FromVersion+1 {
			merged = append(merged, ev)
		}
		m, at = applyEvent(m, ev), ev.Version
	}
	if fmt.Sprint(m) != fmt.Sprint(want) {
		t.Errorf("slow watcher map:\n got %v\nwant %v", m, want)
	}
	// Each change was one seat: the merged DELTA carries one seat per version it spans.
	if len(merged) != 1 || merged[0].Version != version || len(merged[0].Seats) != merged[0].Version-merged[0].FromVersion {
		for _, ev := range merged {
			t.Logf("merged DELTA v%d→v%d with %d seats", ev.FromVersion, ev.Version, len(ev.Seats))
		}
		t.Errorf("slow watcher's merged DELTAs: got %d, want 1 to v%d with a seat per change it had not taken", len(merged), version)
	}
	if got := counterValue(slowSubscribers) - slowBefore; got != 1 {
		t.Errorf("slow subscribers counted: got %v, want 1", got)
	}
	if got := counterValue(snapshotsSent.WithLabelValues(ReasonSlow)) - resyncsBefore; got != 0 {
		t.Errorf("slow resync snapshots: got %v, want none (its changes are merged)", got)
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
	before := goleak.IgnoreCurrent()
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
	drain(t, "the first watcher", ch)
	drain(t, "the second watcher", ch2)
	stop()
	testenv.NoGoroutineLeft(t, before)
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
	h.eachShow(func(s *show) {
		for w := range s.watchers {
			h.startResync(w, ReasonGap)       // its snapshot cannot settle while we hold the lock
			h.startResync(w, ReasonReconnect) // so this one comes during it
		}
	})
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
	var n int
	h.eachShow(func(*show) { n = len(ch) }) // settle counts a snapshot just before it puts it in the channel, under the show's lock
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
