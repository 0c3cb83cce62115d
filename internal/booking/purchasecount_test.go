package booking_test

import (
	"context"
	"testing"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/order"
	"seatflow/ent/purchasecount"
	"seatflow/ent/seatoccupancy"
)

// purchaseCount is the user's row of purchase_counts for the test's showtime (0 when it
// has none).
func (e *env) purchaseCount(t testing.TB, userID string) int {
	t.Helper()
	row, err := e.db.PurchaseCount.Query().Where(purchasecount.UserID(userID), purchasecount.ShowtimeID(e.show)).Only(context.Background())
	if ent.IsNotFound(err) {
		return 0
	} else if err != nil {
		t.Fatal(err)
	}
	return row.Seats
}

// wantPurchaseCount checks the user's purchase count against want and against the rule it
// follows: the occupancy rows of the user's orders for the showtime.
func (e *env) wantPurchaseCount(t testing.TB, userID string, want int) {
	t.Helper()
	ctx := context.Background()
	occupied, err := e.db.SeatOccupancy.Query().Where(seatoccupancy.ShowtimeID(e.show),
		seatoccupancy.HasOrderWith(order.UserID(userID))).Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.purchaseCount(t, userID); got != want || got != occupied {
		t.Fatalf("%s's purchase count = %d, want %d (occupancy rows: %d)", userID, got, want, occupied)
	}
}

// TestPurchaseCountFollowsTheOccupancy: the customer's purchase count in MySQL goes up
// with every hold and down on every path that ends an order's seats, always equal to the
// seats their active orders occupy.
func TestPurchaseCountFollowsTheOccupancy(t *testing.T) {
	ctx := context.Background()
	t.Run("Holds", func(t *testing.T) {
		e := newEnv(t, 2, 8, showOpts{limit: 6, allowGaps: true})
		e.mustHold(t, "alice", "k1", e.seat("A", 1), e.seat("A", 2))
		e.wantPurchaseCount(t, "alice", 2)
		e.mustHold(t, "alice", "k2", e.seat("B", 1))
		e.wantPurchaseCount(t, "alice", 3)
		e.mustHold(t, "bob", "k1", e.seat("B", 3))
		e.wantPurchaseCount(t, "bob", 1)
		e.wantPurchaseCount(t, "alice", 3)
	})
	t.Run("RefusedHoldChangesNothing", func(t *testing.T) {
		e := newEnv(t, 2, 8, showOpts{limit: 2, allowGaps: true})
		e.mustHold(t, "alice", "k1", e.seat("A", 1), e.seat("A", 2))
		// Redis forgets the count: MySQL's refuses the hold, and its transaction rolls back.
		if err := e.rdb.HDel(ctx, e.store.Keys.Limits(e.show), "alice").Err(); err != nil {
			t.Fatal(err)
		}
		_, err := e.hold("alice", "k2", e.seat("B", 1))
		wantCode(t, err, seatflow.ELIMIT)
		e.wantPurchaseCount(t, "alice", 2)
		// A seat someone else has: refused in Redis, nothing written.
		e.mustHold(t, "bob", "k1", e.seat("B", 5))
		_, err = e.hold("bob", "k2", e.seat("A", 1))
		wantCode(t, err, seatflow.ESEATSUNAVAILABLE)
		e.wantPurchaseCount(t, "bob", 1)
	})
	t.Run("Cancel", func(t *testing.T) {
		e := newEnv(t, 2, 8, showOpts{allowGaps: true})
		o := e.mustHold(t, "alice", "k1", e.seat("A", 1), e.seat("A", 2))
		e.mustHold(t, "alice", "k2", e.seat("B", 1))
		if _, err := e.svc.CancelOrder(ctx, "alice", o.ID); err != nil {
			t.Fatal(err)
		}
		e.wantPurchaseCount(t, "alice", 1)
		// Cancelling again is refused and takes nothing off.
		_, err := e.svc.CancelOrder(ctx, "alice", o.ID)
		wantCode(t, err, seatflow.EINVALIDSTATE)
		e.wantPurchaseCount(t, "alice", 1)
	})
	t.Run("Expiry", func(t *testing.T) {
		e := newEnv(t, 2, 8, showOpts{allowGaps: true})
		e.mustHold(t, "alice", "k1", e.seat("A", 1), e.seat("A", 2))
		e.clock.Advance(16 * time.Minute)
		if n, err := e.svc.ExpireDue(ctx); err != nil || n != 1 {
			t.Fatalf("ExpireDue = %d, %v", n, err)
		}
		e.wantPurchaseCount(t, "alice", 0)
	})
	t.Run("SalesClose", func(t *testing.T) {
		e := newEnv(t, 2, 8, showOpts{allowGaps: true})
		e.mustHold(t, "alice", "k1", e.seat("A", 1), e.seat("A", 2))
		e.clock.Advance(time.Hour + 15*time.Minute) // its sales close 15 minutes after the start
		if n, err := e.svc.ExpireAtSalesClose(ctx); err != nil || n != 1 {
			t.Fatalf("ExpireAtSalesClose = %d, %v", n, err)
		}
		e.wantPurchaseCount(t, "alice", 0)
	})
	t.Run("PaidKeepsItsSeats", func(t *testing.T) {
		e := newEnv(t, 2, 8, showOpts{allowGaps: true})
		e.paidOrder(t, "alice", "k1", e.seat("A", 1), e.seat("A", 2))
		e.wantPurchaseCount(t, "alice", 2)
	})
	t.Run("RefundOrder", func(t *testing.T) {
		e := newEnv(t, 2, 8, showOpts{allowGaps: true})
		paid := e.paidOrder(t, "alice", "k1", e.seat("A", 1), e.seat("A", 2))
		e.mustHold(t, "alice", "k2", e.seat("B", 1))
		if _, err := e.svc.RefundOrder(ctx, paid.ID); err != nil {
			t.Fatal(err)
		}
		e.wantPurchaseCount(t, "alice", 1)
		// Refunding it again takes nothing more off.
		if _, err := e.svc.RefundOrder(ctx, paid.ID); err != nil {
			t.Fatal(err)
		}
		e.wantPurchaseCount(t, "alice", 1)
	})
	t.Run("RefundSeats", func(t *testing.T) {
		e := newEnv(t, 2, 8, showOpts{allowGaps: true})
		paid := e.paidOrder(t, "alice", "k1", e.seat("A", 1), e.seat("A", 2), e.seat("A", 3))
		if _, err := e.svc.RefundSeats(ctx, "admin", paid.ID, []int{e.seat("A", 2)}); err != nil {
			t.Fatal(err)
		}
		e.wantPurchaseCount(t, "alice", 2)
		// The same seat again: nothing more; then the rest, which is the whole refund.
		if _, err := e.svc.RefundSeats(ctx, "admin", paid.ID, []int{e.seat("A", 2)}); err != nil {
			t.Fatal(err)
		}
		e.wantPurchaseCount(t, "alice", 2)
		if _, err := e.svc.RefundSeats(ctx, "admin", paid.ID, []int{e.seat("A", 1), e.seat("A", 3)}); err != nil {
			t.Fatal(err)
		}
		e.wantPurchaseCount(t, "alice", 0)
	})
	t.Run("LatePaymentTakesTheSeatsAgain", func(t *testing.T) {
		e := newEnv(t, 2, 8, showOpts{allowGaps: true})
		o := e.mustHold(t, "alice", "k1", e.seat("A", 1), e.seat("A", 2))
		e.clock.Advance(16 * time.Minute)
		if n, err := e.svc.ExpireDue(ctx); err != nil || n != 1 {
			t.Fatalf("ExpireDue = %d, %v", n, err)
		}
		e.wantPurchaseCount(t, "alice", 0)
		if _, err := e.svc.PayOrder(ctx, "alice", o.ID, "late"); err != nil {
			t.Fatal(err)
		}
		e.wantPurchaseCount(t, "alice", 2)
	})
	t.Run("LatePaymentBeforeTheWorkerRan", func(t *testing.T) {
		e := newEnv(t, 2, 8, showOpts{allowGaps: true})
		o := e.mustHold(t, "alice", "k1", e.seat("A", 1), e.seat("A", 2))
		e.clock.Advance(16 * time.Minute) // due, still PENDING_PAYMENT
		if _, err := e.svc.PayOrder(ctx, "alice", o.ID, "late"); err != nil {
			t.Fatal(err)
		}
		e.wantPurchaseCount(t, "alice", 2)
	})
	t.Run("LatePaymentRefused", func(t *testing.T) {
		e := newEnv(t, 2, 8, showOpts{allowGaps: true})
		o := e.mustHold(t, "alice", "k1", e.seat("A", 1), e.seat("A", 2))
		e.clock.Advance(16 * time.Minute)
		if n, err := e.svc.ExpireDue(ctx); err != nil || n != 1 {
			t.Fatalf("ExpireDue = %d, %v", n, err)
		}
		e.mustHold(t, "bob", "k1", e.seat("A", 1))
		_, err := e.svc.PayOrder(ctx, "alice", o.ID, "late")
		wantCode(t, err, seatflow.EORDEREXPIRED)
		e.wantPurchaseCount(t, "alice", 0)
		e.wantPurchaseCount(t, "bob", 1)
	})
	t.Run("PendingOrderPaidAfterSalesClosed", func(t *testing.T) {
		e := newEnv(t, 2, 8, showOpts{allowGaps: true})
		o := e.mustHold(t, "alice", "k1", e.seat("A", 1), e.seat("A", 2))
		e.clock.Advance(time.Hour + 15*time.Minute)
		// Refunded and ended: the order expires in the payment's own transaction.
		_, err := e.svc.PayOrder(ctx, "alice", o.ID, "too-late")
		wantCode(t, err, seatflow.ENOTONSALE)
		e.wantPurchaseCount(t, "alice", 0)
	})
}
