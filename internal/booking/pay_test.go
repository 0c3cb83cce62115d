package booking_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"seatflow"
	"seatflow/ent/payment"
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

// TestOrderKeepsEveryPayment: an order keeps each payment the provider confirms for it.
// The one applied first pays it; any other (a second PaymentIntent confirmed at the same
// moment, on time or after the hold ran out; one of the wrong amount before the right
// one) is recorded beside it and refunded through the provider, never left unrecorded.
func TestOrderKeepsEveryPayment(t *testing.T) {
	ctx := context.Background()
	event := func(o *seatflow.Order, ref string, cents int) seatflow.PaymentEvent {
		return seatflow.PaymentEvent{Provider: seatflow.ProviderTest, ID: "evt-" + ref, Type: "payment_intent.succeeded",
			Kind: seatflow.EventPaymentSucceeded, OrderID: o.ID, Reference: ref, AmountCents: cents, Currency: o.Currency}
	}
	// paidBy checks the order is PAID by ref, with n payments, every other one refunded.
	paidBy := func(t *testing.T, e *env, o *seatflow.Order, ref string, n int) {
		t.Helper()
		got := e.db.Order.GetX(ctx, o.ID)
		ps := e.db.Payment.Query().Where(payment.OrderID(o.ID)).AllX(ctx)
		if got.Status != seatflow.OrderPaid || got.PaymentRef != ref || len(ps) != n {
			t.Fatalf("order %d: %s by %q with %d payments, want PAID by %q with %d", o.ID, got.Status, got.PaymentRef, len(ps), ref, n)
		}
		for _, p := range ps {
			r := e.wholeRefund(t, p.ID)
			refunded := r != nil && *r == seatflow.RefundSucceeded
			if p.Reference == ref && (p.Status != seatflow.PaymentSucceeded || r != nil) ||
				p.Reference != ref && !refunded {
				t.Fatalf("order %d: payment %s %s refund %v (paying %s)", o.ID, p.Reference, p.Status, r, ref)
			}
		}
		for _, id := range o.SeatIDs {
			if st := e.state(t, id); st.Status != seatflow.SeatSold || st.Token != got.HoldToken {
				t.Fatalf("seat %d = %+v, want sold to the order", id, st)
			}
		}
	}
	t.Run("TwoAtOnce", func(t *testing.T) {
		e := newEnv(t, 1, 8, showOpts{})
		var orders []*seatflow.Order
		for i := range 6 {
			orders = append(orders, e.mustHold(t, "u"+string(rune('a'+i)), "k", e.seat("A", i+1)))
		}
		for i, o := range orders {
			if i == len(orders)/2 {
				e.clock.Advance(16 * time.Minute) // the rest are paid late
			}
			refs := []string{fmt.Sprintf("pi-%d-tab1", i), fmt.Sprintf("pi-%d-tab2", i)}
			var wg sync.WaitGroup
			errs := make([]error, 2)
			outcomes := make([]string, 2)
			start := make(chan struct{})
			for j, ref := range refs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					out, err := e.svc.ApplyPaymentEvent(ctx, event(o, ref, o.AmountCents))
					outcomes[j], errs[j] = string(out), err
				}()
			}
			close(start)
			wg.Wait()
			for j := range refs {
				if errs[j] != nil || outcomes[j] != "applied" {
					t.Fatalf("order %d, %s: %q, %v; want applied", o.ID, refs[j], outcomes[j], errs[j])
				}
			}
			paidBy(t, e, o, e.db.Order.GetX(ctx, o.ID).PaymentRef, 2)
		}
	})
	t.Run("RightAmountAfterAWrongOne", func(t *testing.T) {
		e := newEnv(t, 1, 8, showOpts{})
		o := e.mustHold(t, "u1", "k", e.seat("A", 1), e.seat("A", 2))
		for _, ev := range []seatflow.PaymentEvent{event(o, "pi-wrong", o.AmountCents+100), event(o, "pi-right", o.AmountCents)} {
			if out, err := e.svc.ApplyPaymentEvent(ctx, ev); err != nil || out != "applied" {
				t.Fatalf("%s: %q, %v; want applied", ev.Reference, out, err)
			}
		}
		paidBy(t, e, o, "pi-right", 2)
		if p := e.db.Payment.Query().Where(payment.Reference("pi-wrong")).OnlyX(ctx); p.Status != seatflow.PaymentMismatch {
			t.Fatalf("the wrong amount's payment is %s, want MISMATCH", p.Status)
		}
	})
}
