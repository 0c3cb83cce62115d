package booking_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"seatflow"
	"seatflow/ent/payment"
	"seatflow/ent/seatoccupancy"
	"seatflow/internal/nodeid"
	"seatflow/internal/sales"
)

// TestSalesClosedAfterStart: a showtime's sales close by themselves SalesCloseAfter (15
// minutes by default) after it starts, even while MySQL still says ON_SALE (the closer has
// not run): holds are NOT_ON_SALE, a payment that arrives then is recorded and refunded
// without taking the seats, and ExpireAtSalesClose ends the pending orders; a paid order
// stays paid. The fixture's showtime starts an hour after the clock.
func TestSalesClosedAfterStart(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 2, 8, showOpts{})
	e.clock.Advance(time.Hour + 10*time.Minute)
	paid := e.mustHold(t, "paid", "k", e.seat("A", 1), e.seat("A", 2))
	if _, err := e.svc.PayOrder(ctx, "paid", paid.ID, "pay-before"); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(4*time.Minute + 59*time.Second) // a second before the close: still on sale
	byPayOrder := e.mustHold(t, "u1", "k", e.seat("A", 3), e.seat("A", 4))
	byProvider := e.mustHold(t, "u2", "k", e.seat("A", 5), e.seat("A", 6))
	leftPending := e.mustHold(t, "u3", "k", e.seat("A", 7), e.seat("A", 8))
	e.clock.Advance(time.Second) // startsAt + 15m: closed, though no one closed it

	if st := e.db.Showtime.GetX(ctx, e.show); st.Status != seatflow.ShowtimeOnSale {
		t.Fatalf("showtime is %s; the test needs it still ON_SALE in MySQL", st.Status)
	}
	t.Run("HoldRefused", func(t *testing.T) {
		_, err := e.hold("u4", "k", e.seat("B", 1), e.seat("B", 2))
		wantCode(t, err, seatflow.ENOTONSALE)
	})
	t.Run("StartPaymentRefused", func(t *testing.T) {
		_, err := e.svc.StartPayment(ctx, "u3", leftPending.ID)
		wantCode(t, err, seatflow.ENOTONSALE)
	})
	t.Run("PayOrderRefunded", func(t *testing.T) {
		_, err := e.svc.PayOrder(ctx, "u1", byPayOrder.ID, "pay-late")
		wantCode(t, err, seatflow.ENOTONSALE)
		e.wantRefundedUnsold(t, byPayOrder)
	})
	t.Run("ProviderPaymentRefunded", func(t *testing.T) {
		ev := seatflow.PaymentEvent{Provider: seatflow.ProviderTest, ID: "evt-late", Type: "payment_intent.succeeded",
			Kind: seatflow.EventPaymentSucceeded, OrderID: byProvider.ID, Reference: "pi-late",
			AmountCents: byProvider.AmountCents, Currency: byProvider.Currency}
		if outcome, err := e.svc.ApplyPaymentEvent(ctx, ev); err != nil || outcome != "applied" {
			t.Fatalf("ApplyPaymentEvent = %q, %v; want applied", outcome, err)
		}
		e.wantRefundedUnsold(t, byProvider)
		if outcome, err := e.svc.ApplyPaymentEvent(ctx, ev); err != nil || outcome != "replayed" {
			t.Fatalf("the same event again = %q, %v; want replayed", outcome, err)
		}
	})
	t.Run("PendingOrdersExpire", func(t *testing.T) {
		n, err := e.svc.ExpireAtSalesClose(ctx)
		if err != nil || n != 1 {
			t.Fatalf("ExpireAtSalesClose = %d, %v; want the one order left pending", n, err)
		}
		o := e.db.Order.GetX(ctx, leftPending.ID)
		if o.Status != seatflow.OrderExpired || o.ExpiresAt.After(e.clock.Now()) {
			t.Fatalf("order left pending: %s, expires %s; want EXPIRED by now (%s)", o.Status, o.ExpiresAt, e.clock.Now())
		}
		for _, id := range leftPending.SeatIDs {
			if st := e.state(t, id); st.Status != seatflow.SeatAvailable {
				t.Errorf("seat %d of the expired order is %s, want available", id, st.Status)
			}
		}
		if p := e.db.Order.GetX(ctx, paid.ID); p.Status != seatflow.OrderPaid {
			t.Errorf("the paid order is %s, want PAID", p.Status)
		}
		for _, id := range paid.SeatIDs {
			if st := e.state(t, id); st.Status != seatflow.SeatSold {
				t.Errorf("seat %d of the paid order is %s, want sold", id, st.Status)
			}
		}
		if n, err := e.svc.ExpireAtSalesClose(ctx); err != nil || n != 0 {
			t.Fatalf("ExpireAtSalesClose again = %d, %v; want 0", n, err)
		}
	})
}

// wantRefundedUnsold checks that o's late payment was recorded with its refund sent (the
// test provider refunds at once) and that o took no seat: EXPIRED, refundRequired, its
// seats free and no occupancy left.
func (e *env) wantRefundedUnsold(t *testing.T, o *seatflow.Order) {
	t.Helper()
	ctx := context.Background()
	got := e.db.Order.GetX(ctx, o.ID)
	if got.Status != seatflow.OrderExpired || !got.RefundRequired {
		t.Errorf("order %s: %s, refundRequired %v; want EXPIRED with its refund required", nodeid.Encode(nodeid.Order, o.ID), got.Status, got.RefundRequired)
	}
	p := e.db.Payment.Query().Where(payment.OrderID(o.ID)).OnlyX(ctx)
	if r := e.wholeRefund(t, p.ID); p.Status != seatflow.PaymentSucceeded || r == nil || *r != seatflow.RefundSucceeded {
		t.Errorf("payment of order %d: %s, refund %v; want SUCCEEDED and refunded", o.ID, p.Status, r)
	}
	for _, id := range o.SeatIDs {
		if st := e.state(t, id); st.Status != seatflow.SeatAvailable {
			t.Errorf("seat %d is %s, want available", id, st.Status)
		}
	}
	if n := e.db.SeatOccupancy.Query().Where(seatoccupancy.OrderID(o.ID)).CountX(ctx); n != 0 {
		t.Errorf("occupancy rows of order %d: %d, want 0", o.ID, n)
	}
}

// TestSalesCloserOnEveryInstance: instances run the sales closer at once; each showtime due
// is closed once, its pending orders are expired once, and none of them reports an error.
// A showtime not yet due stays on sale.
func TestSalesCloserOnEveryInstance(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 1, 8, showOpts{})
	later, _ := e.addShowtime(t, 1, 8, showOpts{startsIn: 3 * time.Hour})
	e.clock.Advance(time.Hour + 10*time.Minute)
	pending := e.mustHold(t, "u1", "k", e.seat("A", 1), e.seat("A", 2))
	e.clock.Advance(5 * time.Minute)

	const instances = 4
	closed := make([]int, instances)
	errs := make([]error, instances)
	var wg sync.WaitGroup
	for i := range instances {
		closer := &sales.Service{DB: e.db, Seats: e.store, RDB: e.rdb, Keys: e.store.Keys, Catalog: e.cat, Now: e.clock.Now, Orders: e.svc}
		wg.Add(1)
		go func() { defer wg.Done(); closed[i], errs[i] = closer.CloseDue(ctx) }()
	}
	wg.Wait()
	total := 0
	for i := range instances {
		if errs[i] != nil {
			t.Errorf("closer %d: %v", i, errs[i])
		}
		total += closed[i]
	}
	if total != 1 {
		t.Errorf("showtimes closed: %d in all, want 1", total)
	}
	if st := e.db.Showtime.GetX(ctx, e.show); st.Status != seatflow.ShowtimeClosed {
		t.Errorf("the started showtime is %s, want CLOSED", st.Status)
	}
	if st := e.db.Showtime.GetX(ctx, later); st.Status != seatflow.ShowtimeOnSale {
		t.Errorf("the showtime starting later is %s, want ON_SALE", st.Status)
	}
	if o := e.db.Order.GetX(ctx, pending.ID); o.Status != seatflow.OrderExpired {
		t.Errorf("its pending order is %s, want EXPIRED", o.Status)
	}
	for _, id := range pending.SeatIDs {
		if st := e.state(t, id); st.Status != seatflow.SeatAvailable {
			t.Errorf("seat %d is %s, want available", id, st.Status)
		}
	}
}
