package booking_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/internal/background"
	"seatflow/internal/booking"
	"seatflow/internal/tooling/testenv"
)

// TestExpiry: an unpaid hold expires when its TTL has passed on the clock, not a
// millisecond before: the order is EXPIRED, its seats are free, the user's count is
// back and nothing is left of it in MySQL's occupancy or the expiry queue. The clock
// is moved by hand and ExpireDue called directly (TestExpiryWorker covers the worker).
func TestExpiry(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 1, 8, showOpts{startsIn: 3 * time.Hour}) // on sale for every hold of the test
	o := e.mustHold(t, "u1", "k1", e.seat("A", 1), e.seat("A", 2))
	queued := func() int64 { return e.rdb.ZCard(ctx, e.store.Keys.OrdersExpiry()).Val() }

	t.Run("NotDueBeforeItsTTL", func(t *testing.T) {
		if n, err := e.svc.ExpireDue(ctx); err != nil || n != 0 {
			t.Fatalf("ExpireDue at once = %d, %v; want 0", n, err)
		}
		e.clock.Advance(booking.DefaultHoldTTL - time.Millisecond)
		if n, err := e.svc.ExpireDue(ctx); err != nil || n != 0 {
			t.Fatalf("ExpireDue a millisecond before the TTL = %d, %v; want 0", n, err)
		}
		if got := e.orderStatus(t, "u1", o.ID); got != seatflow.OrderPending {
			t.Errorf("order = %s, want %s", got, seatflow.OrderPending)
		}
		if got := queued(); got != 1 {
			t.Errorf("expiry queue has %d entries, want the order still queued", got)
		}
	})

	t.Run("ExpiredAtItsTTL", func(t *testing.T) {
		e.clock.Advance(time.Millisecond)
		if n, err := e.svc.ExpireDue(ctx); err != nil || n != 1 {
			t.Fatalf("ExpireDue at the TTL = %d, %v; want 1", n, err)
		}
		if got := e.orderStatus(t, "u1", o.ID); got != seatflow.OrderExpired {
			t.Errorf("order = %s, want %s", got, seatflow.OrderExpired)
		}
		for _, id := range o.SeatIDs {
			if st := e.state(t, id); st.Status != seatflow.SeatAvailable {
				t.Errorf("seat %d = %+v, want available", id, st)
			}
		}
		if got := e.count(t, "u1"); got != 0 {
			t.Errorf("user count = %d, want 0", got)
		}
		if n := e.db.SeatOccupancy.Query().CountX(ctx); n != 0 {
			t.Errorf("occupancy rows = %d, want 0", n)
		}
		if got := queued(); got != 0 {
			t.Errorf("expiry queue has %d entries, want 0", got)
		}
	})

	t.Run("ExpiredOnce", func(t *testing.T) {
		e.clock.Advance(time.Hour)
		if n, err := e.svc.ExpireDue(ctx); err != nil || n != 0 {
			t.Fatalf("ExpireDue again = %d, %v; want 0", n, err)
		}
	})

	t.Run("ExtendedOrderRequeued", func(t *testing.T) {
		o := e.mustHold(t, "u2", "k1", e.seat("A", 5), e.seat("A", 6))
		// A stale entry (as if the extension's ZADD lost to the worker's claim).
		e.rdb.ZAdd(ctx, e.store.Keys.OrdersExpiry(), redis.Z{Score: 0, Member: fmt.Sprint(o.ID)})
		if n, err := e.svc.ExpireDue(ctx); err != nil || n != 0 {
			t.Fatalf("ExpireDue = %d, %v; want 0", n, err)
		}
		score, err := e.rdb.ZScore(ctx, e.store.Keys.OrdersExpiry(), fmt.Sprint(o.ID)).Result()
		if err != nil || int64(score) != o.ExpiresAt.UnixMilli() {
			t.Errorf("requeued score = %v, %v; want %d", score, err, o.ExpiresAt.UnixMilli())
		}
	})
}

// TestExpiryWorker: RunExpiryWorker expires due orders at once and on every tick after,
// and stops when its context ends. Each wait is bounded.
func TestExpiryWorker(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 1, 8, showOpts{allowGaps: true})
	first := e.mustHold(t, "u1", "k1", e.seat("A", 1))
	e.clock.Advance(booking.DefaultHoldTTL)

	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.svc.RunExpiryWorker(wctx, 10*time.Millisecond) }()
	stopped := false
	stop := func(t testing.TB) error {
		t.Helper()
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(5 * time.Second):
			t.Fatal("RunExpiryWorker still running 5 s after its context ended")
			return nil
		}
	}
	defer func() {
		if !stopped {
			_ = stop(t)
		}
	}()

	t.Run("ExpiresDueOrders", func(t *testing.T) {
		e.waitForStatus(t, "u1", first.ID, seatflow.OrderExpired)
	})
	t.Run("KeepsRunning", func(t *testing.T) {
		// An order that becomes due after the worker's first pass.
		later := e.mustHold(t, "u2", "k1", e.seat("A", 5))
		e.clock.Advance(booking.DefaultHoldTTL)
		e.waitForStatus(t, "u2", later.ID, seatflow.OrderExpired)
	})
	t.Run("StopsWithItsContext", func(t *testing.T) {
		if err := stop(t); !errors.Is(err, context.Canceled) {
			t.Errorf("RunExpiryWorker returned %v, want %v", err, context.Canceled)
		}
	})
}

// TestRequeuePending: a seat Redis that lost the expiry queue (embedded mode's starts empty)
// gets every pending order back at its own expiry, and the worker expires each then; paid
// and expired orders are not queued.
func TestRequeuePending(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 1, 8, showOpts{allowGaps: true})
	early := e.mustHold(t, "u1", "k1", e.seat("A", 1))
	e.clock.Advance(time.Minute)
	late := e.mustHold(t, "u2", "k2", e.seat("A", 3))
	paid := e.mustHold(t, "u3", "k3", e.seat("A", 5))
	if _, err := e.svc.PayOrder(ctx, "u3", paid.ID, "ref"); err != nil {
		t.Fatal(err)
	}
	e.rdb.Del(ctx, e.store.Keys.OrdersExpiry())

	if n, err := e.svc.RequeuePending(ctx); err != nil || n != 2 {
		t.Fatalf("RequeuePending = %d, %v; want the 2 pending orders", n, err)
	}
	e.clock.Advance(booking.DefaultHoldTTL - time.Minute)
	if n, err := e.svc.ExpireDue(ctx); err != nil || n != 1 {
		t.Fatalf("ExpireDue at the first hold's expiry = %d, %v; want 1", n, err)
	}
	if a, b := e.orderStatus(t, "u1", early.ID), e.orderStatus(t, "u2", late.ID); a != seatflow.OrderExpired || b != seatflow.OrderPending {
		t.Fatalf("orders = %s, %s; want the early one expired at its time, the late one pending", a, b)
	}
	e.clock.Advance(time.Minute)
	if n, err := e.svc.ExpireDue(ctx); err != nil || n != 1 || e.orderStatus(t, "u2", late.ID) != seatflow.OrderExpired {
		t.Fatalf("ExpireDue at the second hold's expiry = %d, %v; want the late order expired", n, err)
	}
	if got := e.orderStatus(t, "u3", paid.ID); got != seatflow.OrderPaid {
		t.Errorf("the paid order is %s", got)
	}
}

// TestExpiryWorkerReportsFailures: a pass that cannot reach Redis is not dropped: it is
// logged with its task and counted in seatflow_background_errors_total, and the worker
// keeps trying on every tick.
func TestExpiryWorkerReportsFailures(t *testing.T) {
	e := newEnv(t, 1, 4, showOpts{})
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer down.Close()
	var logged testenv.SyncBuffer
	svc := *e.svc
	svc.RDB = down
	svc.Log = slog.New(slog.NewTextHandler(&logged, nil))
	failures := func() float64 {
		return testenv.Counter(t, "seatflow_background_errors_total", "task", background.ExpiryPass)
	}
	before := failures()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.RunExpiryWorker(ctx, 10*time.Millisecond) }()
	deadline := time.Now().Add(5 * time.Second)
	for failures()-before < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("RunExpiryWorker returned %v, want %v", err, context.Canceled)
	}
	if got := failures() - before; got < 3 {
		t.Fatalf("failed passes counted: %v in 5 s, want at least 3 (one per tick)", got)
	}
	if line := logged.String(); !strings.Contains(line, "level=WARN") || !strings.Contains(line, "task="+background.ExpiryPass) ||
		!strings.Contains(line, "127.0.0.1:1") {
		t.Errorf("log %q: want a warning naming the task and the unreachable Redis", line)
	}
}
