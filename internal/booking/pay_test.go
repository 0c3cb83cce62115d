package booking_test

import (
	"context"
	"testing"
	"time"

	"seatflow"
	"seatflow/ent/seatoccupancy"
)

func TestLatePayment(t *testing.T) {
	ctx := context.Background()
	t.Run("RescuedAfterExpiry", func(t *testing.T) {
		e := newEnv(t, 1, 8, showOpts{})
		o := e.mustHold(t, "u1", "k1", e.seat("A", 1), e.seat("A", 2))
		e.clock.Advance(16 * time.Minute)
		if n, err := e.svc.ExpireDue(ctx); err != nil || n != 1 {
			t.Fatalf("ExpireDue = %d, %v", n, err)
		}
		paid, err := e.svc.PayOrder(ctx, "u1", o.ID, "late")
		if err != nil || paid.Status != seatflow.OrderPaid || paid.RefundRequired {
			t.Fatalf("late PayOrder = %+v, %v", paid, err)
		}
		for _, id := range o.SeatIDs {
			if st := e.state(t, id); st.Status != seatflow.SeatSold || st.Token != paid.HoldToken {
				t.Errorf("seat %d = %+v, want sold to %s", id, st, paid.HoldToken)
			}
		}
		if n := e.db.SeatOccupancy.Query().Where(seatoccupancy.OrderID(o.ID)).CountX(ctx); n != 2 {
			t.Errorf("occupancy rows = %d, want 2", n)
		}
		if got := e.count(t, "u1"); got != 2 {
			t.Errorf("user count = %d, want 2", got)
		}
	})
	t.Run("RescuedBeforeTheWorkerRan", func(t *testing.T) {
		e := newEnv(t, 1, 8, showOpts{})
		o := e.mustHold(t, "u1", "k1", e.seat("A", 1), e.seat("A", 2))
		e.clock.Advance(16 * time.Minute)
		paid, err := e.svc.PayOrder(ctx, "u1", o.ID, "late")
		if err != nil || paid.Status != seatflow.OrderPaid {
			t.Fatalf("late PayOrder = %+v, %v", paid, err)
		}
		// The worker's claim now finds a paid order; the old token's release frees nothing.
		if n, err := e.svc.ExpireDue(ctx); err != nil || n != 0 {
			t.Errorf("ExpireDue = %d, %v; want 0", n, err)
		}
		if _, err := e.store.Release(ctx, e.show, o.HoldToken, "u1", o.SeatIDs); err != nil {
			t.Fatal(err)
		}
		for _, id := range o.SeatIDs {
			if st := e.state(t, id); st.Status != seatflow.SeatSold {
				t.Errorf("seat %d = %+v, want sold", id, st)
			}
		}
		if got := e.count(t, "u1"); got != 2 {
			t.Errorf("user count = %d, want 2", got)
		}
	})
	t.Run("SeatsTakenRefundRequired", func(t *testing.T) {
		e := newEnv(t, 1, 8, showOpts{})
		o := e.mustHold(t, "u1", "k1", e.seat("A", 1), e.seat("A", 2))
		e.clock.Advance(16 * time.Minute)
		if n, err := e.svc.ExpireDue(ctx); err != nil || n != 1 {
			t.Fatalf("ExpireDue = %d, %v", n, err)
		}
		other := e.mustHold(t, "u2", "k1", e.seat("A", 1))
		_, err := e.svc.PayOrder(ctx, "u1", o.ID, "late")
		wantCode(t, err, seatflow.EORDEREXPIRED)
		got, _ := e.svc.Order(ctx, "u1", o.ID)
		if got.Status != seatflow.OrderExpired || !got.RefundRequired {
			t.Errorf("order = %+v, want EXPIRED with refundRequired", got)
		}
		if st := e.state(t, e.seat("A", 1)); st.Token != other.HoldToken {
			t.Errorf("other buyer's seat = %+v", st)
		}
		if st := e.state(t, e.seat("A", 2)); st.Status != seatflow.SeatAvailable {
			t.Errorf("seat A2 = %+v, want available (nothing half-taken)", st)
		}
		if got := e.count(t, "u1"); got != 0 {
			t.Errorf("user count = %d, want 0", got)
		}
		_, err = e.svc.PayOrder(ctx, "u1", o.ID, "late")
		wantCode(t, err, seatflow.EORDEREXPIRED)
	})
}

// TestCancelledShowtimeTakesNoPayment: once a showtime is cancelled, its pending orders
// cannot be paid, on time or late.
func TestCancelledShowtimeTakesNoPayment(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 2, 8, showOpts{})
	onTime := e.mustHold(t, "u1", "k1", e.seat("A", 1), e.seat("A", 2))
	late := e.mustHold(t, "u2", "k2", e.seat("B", 1), e.seat("B", 2))
	if err := e.db.Showtime.UpdateOneID(e.show).SetStatus(seatflow.ShowtimeCancelled).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := e.svc.PayOrder(ctx, "u1", onTime.ID, "p1")
	wantCode(t, err, seatflow.EINVALIDSTATE)
	e.clock.Advance(16 * time.Minute)
	_, err = e.svc.PayOrder(ctx, "u2", late.ID, "p2")
	wantCode(t, err, seatflow.EINVALIDSTATE)
	if st := e.state(t, e.seat("A", 1)); st.Status != seatflow.SeatHeld {
		t.Errorf("seat of the refused payment: %+v, want still held (until expiry)", st)
	}
}
