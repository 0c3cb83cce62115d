package app

import (
	"context"
	"net/http"
	"testing"
	"time"

	"seatflow/ent"
	"seatflow/ent/refund"
	"seatflow/internal/nodeid"
)

const refundOrderQ = `mutation($id: ID!) { refundOrder(orderId: $id) { id status payment { status refundStatus } } }`

// refundRow reads the whole refund of an order's payment as stored.
func (a *testApp) refundRow(orderID string) *ent.Refund {
	a.t.Helper()
	r, err := a.DB.Refund.Query().Where(refund.OrderID(idOf(a.t, orderID)), refund.Whole(true)).Only(context.Background())
	if err != nil {
		a.t.Fatal(err)
	}
	return r
}

type reconcileOut struct {
	RunReconcile struct{ RefundsRetried, RefundsOutstanding int }
}

func (a *testApp) reconcileRefunds() (retried, outstanding int) {
	a.t.Helper()
	var out reconcileOut
	a.must(a.admin, `mutation { runReconcile { refundsRetried refundsOutstanding } }`, nil, &out)
	return out.RunReconcile.RefundsRetried, out.RunReconcile.RefundsOutstanding
}

func TestRefundOrderByStaff(t *testing.T) {
	a := newStripeApp(t)
	alice := a.token("alice", "customer")
	show, seats := a.onSaleShowtime()
	o, _ := a.paidByStripe(alice, show, seats[:2], "paid")
	pending := a.hold(alice, show, seats[2:3], "pending")

	a.wantCode(alice, refundOrderQ, map[string]any{"id": o.ID}, "FORBIDDEN")
	a.wantCode(a.admin, refundOrderQ, map[string]any{"id": pending.ID}, "INVALID_STATE")
	a.wantCode(a.admin, refundOrderQ, map[string]any{"id": nodeid.Encode(nodeid.Order, 999999)}, "NOT_FOUND")

	a.must(a.admin, refundOrderQ, map[string]any{"id": o.ID}, nil)
	st := a.orderState(alice, o.ID)
	if st.Status != "CANCELLED" || st.Payment.Status != "SUCCEEDED" || st.refund() != "SUCCEEDED" {
		t.Fatalf("after refundOrder: %+v %+v, want CANCELLED and refunded", st, st.Payment)
	}
	if m, _ := a.seatStatuses(show); m[seats[0]] != "AVAILABLE" || m[seats[1]] != "AVAILABLE" || m[seats[2]] != "HELD" {
		t.Fatalf("seats = %s %s %s, want the refunded ones back on sale", m[seats[0]], m[seats[1]], m[seats[2]])
	}
	first := a.refundRow(o.ID)
	if first.Reference == "" {
		t.Fatal("no refund reference recorded")
	}
	a.must(a.admin, refundOrderQ, map[string]any{"id": o.ID}, nil) // staff clicks twice
	if again := a.refundRow(o.ID); again.Reference != first.Reference || again.Attempts != 0 {
		t.Fatalf("second refundOrder sent another refund: %s (attempts %d), first %s", again.Reference, again.Attempts, first.Reference)
	}
}

// TestRefundFollowsTheProvider: a refund is tracked until the provider confirms it; one the
// provider reports failed is sent again by the reconciler, as a new refund.
func TestRefundFollowsTheProvider(t *testing.T) {
	a := newStripeApp(t)
	alice := a.token("alice", "customer")
	show, seats := a.onSaleShowtime()

	t.Run("FailedIsSentAgain", func(t *testing.T) {
		o, pi := a.paidByStripe(alice, show, seats[:1], "one")
		a.must(a.admin, refundOrderQ, map[string]any{"id": o.ID}, nil)
		first := a.refundRow(o.ID).Reference
		stale, _ := stripeEvent("refund.updated", refundObject("re_older_attempt", pi, "failed"))
		a.deliver(stale).want(t, http.StatusOK, "applied")
		if got := a.orderState(alice, o.ID).refund(); got != "SUCCEEDED" {
			t.Fatalf("an unknown refund's failure changed the refund to %s", got)
		}
		ev, _ := stripeEvent("refund.updated", refundObject(first, pi, "failed"))
		a.deliver(ev).want(t, http.StatusOK, "applied")
		if got := a.orderState(alice, o.ID).refund(); got != "FAILED" {
			t.Fatalf("refund = %s after refund.updated failed, want FAILED", got)
		}
		if retried, outstanding := a.reconcileRefunds(); retried != 0 || outstanding != 1 {
			t.Fatalf("reconcile within the grace: retried %d, outstanding %d; want 0, 1", retried, outstanding)
		}
		a.clock.Advance(2 * time.Minute)
		if retried, outstanding := a.reconcileRefunds(); retried != 1 || outstanding != 0 {
			t.Fatalf("reconcile: retried %d, outstanding %d; want 1, 0", retried, outstanding)
		}
		p := a.refundRow(o.ID)
		if p.Status != "SUCCEEDED" || p.Attempts != 1 || p.Reference == first {
			t.Fatalf("after the retry: %v attempts %d reference %s (first %s)", p.Status, p.Attempts, p.Reference, first)
		}
	})

	t.Run("PendingUntilConfirmed", func(t *testing.T) {
		o, pi := a.paidByStripe(alice, show, seats[:1], "two") // the seat the first refund freed
		a.must(a.admin, refundOrderQ, map[string]any{"id": o.ID}, nil)
		first := a.refundRow(o.ID).Reference
		failed, _ := stripeEvent("refund.updated", refundObject(first, pi, "failed"))
		a.deliver(failed).want(t, http.StatusOK, "applied")
		// A new refund made at Stripe (by hand, say) is pending, then the charge is refunded.
		pending, _ := stripeEvent("refund.created", refundObject("re_by_hand", pi, "pending"))
		a.deliver(pending).want(t, http.StatusOK, "applied")
		if got := a.orderState(alice, o.ID).refund(); got != "PENDING" {
			t.Fatalf("refund = %s after refund.created pending, want PENDING", got)
		}
		if _, outstanding := a.reconcileRefunds(); outstanding != 1 {
			t.Fatalf("outstanding = %d with a pending refund, want 1", outstanding)
		}
		charge, _ := stripeEvent("charge.refunded", map[string]any{"id": "ch_1", "object": "charge", "payment_intent": pi,
			"refunded": true, "amount": o.AmountCents, "amount_refunded": o.AmountCents, "currency": "usd"})
		a.deliver(charge).want(t, http.StatusOK, "applied")
		if got := a.orderState(alice, o.ID).refund(); got != "SUCCEEDED" {
			t.Fatalf("refund = %s after charge.refunded, want SUCCEEDED", got)
		}
		partial, _ := stripeEvent("charge.refunded", map[string]any{"id": "ch_2", "object": "charge", "payment_intent": pi,
			"refunded": false, "amount_refunded": 1})
		a.deliver(partial).want(t, http.StatusOK, "ignored")
	})
}

// TestRefundNeverSentIsSentByTheReconciler: the instance that refunds cannot reach Stripe;
// the refund is recorded as due, and the reconciler (on an instance that can) sends it
// once it is older than the grace, and reports it.
func TestRefundNeverSentIsSentByTheReconciler(t *testing.T) {
	a := newStripeApp(t)
	cut := a.siblingWith(stripeFlags("http://127.0.0.1:1")...) // nothing answers there
	alice := a.token("alice", "customer")
	show, seats := a.onSaleShowtime()
	o, _ := a.paidByStripe(alice, show, seats[:1], "k")

	var out struct {
		RefundOrder struct {
			Status  string
			Payment struct{ RefundStatus string }
		}
	}
	cut.must(cut.admin, refundOrderQ, map[string]any{"id": o.ID}, &out)
	if out.RefundOrder.Status != "CANCELLED" || out.RefundOrder.Payment.RefundStatus != "REQUIRED" {
		t.Fatalf("refundOrder without Stripe = %+v, want CANCELLED with the refund REQUIRED", out.RefundOrder)
	}
	if retried, outstanding := a.reconcileRefunds(); retried != 0 || outstanding != 1 {
		t.Fatalf("reconcile within the grace: retried %d, outstanding %d; want 0, 1", retried, outstanding)
	}
	a.clock.Advance(2 * time.Minute)
	if retried, outstanding := a.reconcileRefunds(); retried != 1 || outstanding != 0 {
		t.Fatalf("reconcile: retried %d, outstanding %d; want 1, 0", retried, outstanding)
	}
	if got := a.orderState(alice, o.ID).refund(); got != "SUCCEEDED" {
		t.Fatalf("refund = %s, want SUCCEEDED", got)
	}
	var runs struct {
		ReconcileRuns []struct{ RefundsRetried, RefundsOutstanding int }
	}
	a.must(a.admin, `{ reconcileRuns { refundsRetried refundsOutstanding } }`, nil, &runs)
	if len(runs.ReconcileRuns) != 1 || runs.ReconcileRuns[0].RefundsRetried != 1 {
		t.Fatalf("stored runs = %+v, want the run that sent the refund", runs.ReconcileRuns)
	}
}

// TestLatePaymentWhoseSeatsAreGoneIsRefunded: Stripe confirms after the hold expired and
// another buyer took the seat: the order is EXPIRED with refundRequired, the payment
// refunded, the other buyer's hold untouched.
func TestLatePaymentWhoseSeatsAreGoneIsRefunded(t *testing.T) {
	a := newStripeApp(t)
	alice, bob := a.token("alice", "customer"), a.token("bob", "customer")
	show, seats := a.onSaleShowtime()
	o := a.hold(alice, show, seats[:1], "k")
	a.startPayment(alice, o.ID)
	pi := a.orderState(alice, o.ID).Payment.Reference
	a.clock.Advance(16 * time.Minute)
	a.waitExpired(alice, o.ID, show, seats[0])
	b := a.hold(bob, show, seats[:1], "k")

	ev, _ := stripeEvent("payment_intent.succeeded", intent(pi, o.ID, o.AmountCents, "usd"))
	a.deliver(ev).want(t, http.StatusOK, "applied")
	st := a.orderState(alice, o.ID)
	if st.Status != "EXPIRED" || !st.RefundRequired || st.Payment.Status != "SUCCEEDED" || st.refund() != "SUCCEEDED" {
		t.Fatalf("late payment: %+v %+v, want EXPIRED, refundRequired, refunded", st, st.Payment)
	}
	if got := a.orderState(bob, b.ID).Status; got != "PENDING_PAYMENT" {
		t.Fatalf("bob's order = %s, want PENDING_PAYMENT", got)
	}
	if m, _ := a.seatStatuses(show); m[seats[0]] != "HELD" {
		t.Fatalf("seat = %s, want HELD by bob", m[seats[0]])
	}
}

// TestCancelledShowtimeIsRefunded: the paid orders of a cancelled showtime are refunded by
// the next reconciler run, once each.
func TestCancelledShowtimeIsRefunded(t *testing.T) {
	a := newTestApp(t)
	alice := a.token("alice", "customer")
	show, seats := a.onSaleShowtime()
	var paid []string
	for i := range 2 {
		o := a.hold(alice, show, seats[i:i+1], "k"+o2s(i))
		a.must(alice, `mutation($id: ID!) { payOrder(orderId: $id, paymentRef: "ref") { status } }`, map[string]any{"id": o.ID}, nil)
		paid = append(paid, o.ID)
	}
	pending := a.hold(alice, show, seats[2:3], "pending")
	a.must(a.admin, `mutation($id: ID!) { cancelShowtime(id: $id) { status } }`, map[string]any{"id": show}, nil)

	if retried, outstanding := a.reconcileRefunds(); retried != 2 || outstanding != 0 {
		t.Fatalf("reconcile: retried %d, outstanding %d; want 2, 0", retried, outstanding)
	}
	for _, id := range paid {
		if st := a.orderState(alice, id); st.Status != "PAID" || st.refund() != "SUCCEEDED" {
			t.Fatalf("order %s: %+v %+v, want PAID and refunded", id, st, st.Payment)
		}
	}
	if st := a.orderState(alice, pending.ID); st.Payment != nil {
		t.Fatalf("the unpaid order got a payment: %+v", st.Payment)
	}
	if retried, _ := a.reconcileRefunds(); retried != 0 {
		t.Fatalf("second run retried %d refunds, want 0", retried)
	}
}
