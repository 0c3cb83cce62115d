package booking_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/internal/booking"
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
