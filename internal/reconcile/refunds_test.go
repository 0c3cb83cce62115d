package reconcile_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"seatflow"
	"seatflow/ent/payment"
	"seatflow/ent/refund"
)

// wholeRefund records an order's payment's whole refund as a transaction that died before
// it sent the refund leaves it.
func (e *env) wholeRefund(t *testing.T, orderID int, status seatflow.RefundStatus, attempts int, reason string) {
	t.Helper()
	ctx := context.Background()
	p := e.db.Payment.Query().Where(payment.OrderID(orderID)).OnlyX(ctx)
	e.db.Refund.Create().SetOrderID(orderID).SetPaymentID(p.ID).SetAmountCents(p.AmountCents).SetCurrency(p.Currency).
		SetStatus(status).SetAttempts(attempts).SetReason(reason).SetWhole(true).
		SetCreatedAt(e.clock.Now()).SetUpdatedAt(e.clock.Now()).ExecX(ctx)
}

// TestRefundNeverSent: a refund made due by a transaction whose process died before it
// sent the refund (the state set here by hand, as that crash leaves it) is sent by the
// first run after the grace; one the provider reported failed too often is left to a
// person and reported as outstanding, not sent forever.
func TestRefundNeverSent(t *testing.T) {
	e := newEnv(t, 2, 4)
	ctx := context.Background()
	due := e.hold(t, "alice", e.seat("A", 1))
	givenUp := e.hold(t, "bob", e.seat("B", 1))
	for _, o := range []*seatflow.Order{due, givenUp} {
		if _, err := e.svc.PayOrder(ctx, o.UserID, o.ID, "ref"); err != nil {
			t.Fatal(err)
		}
	}
	e.wholeRefund(t, due.ID, seatflow.RefundRequired, 0, "crash")
	e.wholeRefund(t, givenUp.ID, seatflow.RefundFailed, seatflow.MaxRefundAttempts, "")

	if rep := e.runOnce(t); rep.RefundsRetried != 0 || rep.RefundsOutstanding != 2 {
		t.Fatalf("within the grace: retried %d, outstanding %d; want 0, 2", rep.RefundsRetried, rep.RefundsOutstanding)
	}
	e.clock.Advance(2 * time.Minute)
	rep := e.runOnce(t)
	if rep.RefundsRetried != 1 || rep.RefundsOutstanding != 1 {
		t.Fatalf("after the grace: retried %d, outstanding %d; want 1, 1", rep.RefundsRetried, rep.RefundsOutstanding)
	}
	if len(rep.ShowtimeIDs) != 1 || rep.ShowtimeIDs[0] != e.show {
		t.Fatalf("showtimes = %v, want [%d]", rep.ShowtimeIDs, e.show)
	}
	for id, want := range map[int]seatflow.RefundStatus{due.ID: seatflow.RefundSucceeded, givenUp.ID: seatflow.RefundFailed} {
		p, err := e.svc.Payment(ctx, id)
		if err != nil || p.RefundStatus == nil || *p.RefundStatus != want {
			t.Fatalf("order %d refund = %v (%v), want %s", id, p.RefundStatus, err, want)
		}
	}
	runs, err := e.rec.Runs(ctx, 10)
	if err != nil || len(runs) != 1 || runs[0].RefundsRetried != 1 || runs[0].RefundsOutstanding != 1 {
		t.Fatalf("stored runs = %+v (%v), want the one that sent the refund", runs, err)
	}
}

// TestExtraPaymentRefundNeverSent: a second payment of a paid order recorded with its
// refund due by a process that died before sending it (the state set here as that crash
// leaves it) is refunded by the first run after the grace; the payment that paid the
// order is left alone.
func TestExtraPaymentRefundNeverSent(t *testing.T) {
	e := newEnv(t, 1, 4)
	ctx := context.Background()
	o := e.hold(t, "alice", e.seat("A", 1))
	if _, err := e.svc.PayOrder(ctx, o.UserID, o.ID, "first"); err != nil {
		t.Fatal(err)
	}
	now := e.clock.Now()
	second := e.db.Payment.Create().SetOrderID(o.ID).SetProvider(seatflow.ProviderTest).SetReference("second").
		SetStatus(seatflow.PaymentSucceeded).SetAmountCents(o.AmountCents).SetCurrency(o.Currency).
		SetCreatedAt(now).SetUpdatedAt(now).SaveX(ctx)
	e.db.Refund.Create().SetOrderID(o.ID).SetPaymentID(second.ID).SetAmountCents(o.AmountCents).SetCurrency(o.Currency).
		SetStatus(seatflow.RefundRequired).SetReason("the order is already paid").SetWhole(true).
		SetCreatedAt(now).SetUpdatedAt(now).ExecX(ctx)

	e.clock.Advance(2 * time.Minute)
	if rep := e.runOnce(t); rep.RefundsRetried != 1 || rep.RefundsOutstanding != 0 {
		t.Fatalf("after the grace: retried %d, outstanding %d; want 1, 0", rep.RefundsRetried, rep.RefundsOutstanding)
	}
	for _, p := range e.db.Payment.Query().Where(payment.OrderID(o.ID)).AllX(ctx) {
		r, err := e.db.Refund.Query().Where(refund.PaymentID(p.ID), refund.Whole(true)).Only(ctx)
		switch {
		case p.Reference == "first" && err == nil:
			t.Errorf("the paying payment's refund is %s, want none", r.Status)
		case p.Reference == "second" && (err != nil || r.Status != seatflow.RefundSucceeded || r.Reference == ""):
			t.Errorf("the extra payment's refund is %+v (%v), want SUCCEEDED with its reference", r, err)
		}
	}
	if p, err := e.svc.Payment(ctx, o.ID); err != nil || p.Reference != "first" {
		t.Fatalf("the order's payment = %+v (%v), want the one that paid", p, err)
	}
}

// TestSeatRefundCrashRepaired: staff refunded one seat of a paid order and the process died
// after the commit, before it released the seat in Redis or sent the refund (the state set
// here by hand, as that crash leaves it). The next run frees the seat and corrects the
// customer's count; the refund is sent once the grace has passed.
func TestSeatRefundCrashRepaired(t *testing.T) {
	e := newEnv(t, 1, 6)
	ctx := context.Background()
	a1, a2, a3 := e.seat("A", 1), e.seat("A", 2), e.seat("A", 3)
	o := e.hold(t, "alice", a1, a2, a3)
	if _, err := e.svc.PayOrder(ctx, o.UserID, o.ID, "ref"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.RefundSeats(ctx, "admin", o.ID, []int{a1}); err != nil {
		t.Fatal(err)
	}
	// What the crash leaves: the seat still sold to the order, its count not lowered, the
	// refund never sent.
	e.rdb.HSet(ctx, e.store.Keys.Seats(e.show), strconv.Itoa(a1), "2|"+o.HoldToken)
	e.rdb.HSet(ctx, e.store.Keys.Limits(e.show), "alice", 3)
	e.db.Refund.Update().Where(refund.OrderID(o.ID)).SetStatus(seatflow.RefundRequired).SetReference("").
		SetUpdatedAt(e.clock.Now()).ExecX(ctx)

	rep := e.runOnce(t)
	if rep.SoldOrphansReleased != 1 || rep.LimitsRecounted != 1 || rep.RefundsRetried != 0 || rep.RefundsOutstanding != 1 {
		t.Fatalf("first run: sold orphans %d, limits %d, refunds retried %d, outstanding %d; want 1, 1, 0, 1",
			rep.SoldOrphansReleased, rep.LimitsRecounted, rep.RefundsRetried, rep.RefundsOutstanding)
	}
	wantState(t, e.state(t, a1), seatflow.SeatAvailable, "")
	wantState(t, e.state(t, a2), seatflow.SeatSold, o.HoldToken)
	if n := e.count(t, "alice"); n != 2 {
		t.Errorf("alice's count = %d, want 2", n)
	}
	e.clock.Advance(2 * time.Minute)
	if rep := e.runOnce(t); rep.RefundsRetried != 1 || rep.RefundsOutstanding != 0 {
		t.Fatalf("after the grace: retried %d, outstanding %d; want 1, 0", rep.RefundsRetried, rep.RefundsOutstanding)
	}
	r := e.db.Refund.Query().Where(refund.OrderID(o.ID)).OnlyX(ctx)
	if r.Status != seatflow.RefundSucceeded || r.Reference == "" || r.AmountCents != 1000 {
		t.Fatalf("refund = %+v, want SUCCEEDED of 1000 with the provider's reference", r)
	}
	e.verify(t)
}
