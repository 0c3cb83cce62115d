package reconcile_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"seatflow/internal/tooling/testenv"
)

// lockedBuffer is a log destination safe for the reconciler's goroutine and the test's.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// take returns what was logged since the last take.
func (l *lockedBuffer) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	l.b.Reset()
	return s
}

// TestEmptyAtStartLogging: with a seat Redis that starts empty (embedded mode), the seat
// maps the first sweep builds are logged at INFO as built from the database, not as
// drift; any other repair of that sweep, and every repair after it, is drift at WARN. A
// Redis that is not expected to start empty reports every rebuild as drift.
func TestEmptyAtStartLogging(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 2, 10)
	other, _ := e.addShowtime(t, 2, 10)
	e.hold(t, "u1", e.seat("A", 1))
	logs := &lockedBuffer{}
	rec := e.reconciler(t, 500)
	rec.Log = slog.New(slog.NewJSONHandler(logs, nil))
	rec.EmptyAtStart = true

	// The first showtime's seat map was never built (the empty Redis); an orphan hold on the
	// other, older than the grace, is drift.
	e.rdb.Del(ctx, e.store.Keys.Seats(e.show))
	e.holdOrphan(t, other, "ghost", "u9", seatOf(e.halls[other], "B", 2))
	e.clock.Advance(grace + time.Second)
	if rep, err := rec.RunOnce(ctx); err != nil || rep.HashesRebuilt != 1 || rep.OrphanHoldsReleased != 1 {
		t.Fatalf("first run: %+v, %v; want 1 hash built and 1 orphan released", rep, err)
	}
	first := logs.take()
	if !strings.Contains(first, `"level":"INFO","msg":"built seat maps from the database (the embedded Redis starts empty)","showtimes":1`) {
		t.Errorf("the start's seat maps are not logged as built at INFO:\n%s", first)
	}
	if !strings.Contains(first, `"level":"WARN","msg":"reconcile: repaired drift"`) ||
		!strings.Contains(first, `"hashesRebuilt":0`) || !strings.Contains(first, `"orphanHoldsReleased":1`) {
		t.Errorf("the orphan hold is not reported as drift at WARN (without the start's hashes):\n%s", first)
	}

	// After the first sweep, a lost seat map is drift.
	e.rdb.Del(ctx, e.store.Keys.Seats(e.show))
	if rep, err := rec.RunOnce(ctx); err != nil || rep.HashesRebuilt != 1 {
		t.Fatalf("second run: %+v, %v; want 1 hash rebuilt", rep, err)
	}
	if second := logs.take(); strings.Contains(second, "built seat maps") ||
		!strings.Contains(second, `"level":"WARN","msg":"reconcile: repaired drift"`) || !strings.Contains(second, `"hashesRebuilt":1`) {
		t.Errorf("a seat map lost after the start is not drift at WARN:\n%s", second)
	}

	// A Redis that should have kept its data: a lost seat map is drift from the first run.
	testenv.DeletePrefix(e.rdb, e.store.Keys.Prefix)
	real := e.reconciler(t, 500)
	real.Log = slog.New(slog.NewJSONHandler(logs, nil))
	if rep, err := real.RunOnce(ctx); err != nil || rep.HashesRebuilt != 2 {
		t.Fatalf("run without EmptyAtStart: %+v, %v; want 2 hashes rebuilt", rep, err)
	}
	if got := logs.take(); strings.Contains(got, "built seat maps") || !strings.Contains(got, `"level":"WARN","msg":"reconcile: repaired drift"`) {
		t.Errorf("without EmptyAtStart a rebuild is not drift at WARN:\n%s", got)
	}
}
