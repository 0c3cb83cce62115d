package app

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"seatflow/ent/refund"
	"seatflow/internal/tooling/testenv"
)

// paymentOut is one payment of an order as its owner reads it.
type paymentOut struct {
	Provider, Status, Reference, Currency string
	RefundStatus                          *string
	AmountCents                           int
	CreatedAt                             string
}

func (p paymentOut) refund() string {
	if p.RefundStatus == nil {
		return ""
	}
	return *p.RefundStatus
}

// ordersPayments is an order with every payment it keeps, as its owner reads it.
type ordersPayments struct {
	Status   string
	Payment  *paymentOut
	Payments []paymentOut
}

const orderPaymentsQ = `query($id: ID!) { order(id: $id) { status
	payment { provider status reference refundStatus amountCents currency createdAt }
	payments { provider status reference refundStatus amountCents currency createdAt } } }`

func (a *testApp) orderPayments(token, id string) ordersPayments {
	a.t.Helper()
	var out struct{ Order ordersPayments }
	a.must(token, orderPaymentsQ, map[string]any{"id": id}, &out)
	return out.Order
}

// paidOnce checks that an order is PAID by the payment ref, holds n payments, and that
// every other payment that took money is refunded (refund state want).
func (a *testApp) paidOnce(token, id, ref string, n int, want string) ordersPayments {
	a.t.Helper()
	o := a.orderPayments(token, id)
	if o.Status != "PAID" || o.Payment == nil || o.Payment.Reference != ref || o.Payment.Status != "SUCCEEDED" || o.Payment.refund() != "" {
		a.t.Fatalf("order %s: %s paid by %+v, want PAID by %s, not refunded", id, o.Status, o.Payment, ref)
	}
	if len(o.Payments) != n {
		a.t.Fatalf("order %s has %d payments %+v, want %d", id, len(o.Payments), o.Payments, n)
	}
	for _, p := range o.Payments {
		if p.Reference != ref && (p.Status == "SUCCEEDED" || p.Status == "MISMATCH") && p.refund() != want {
			a.t.Fatalf("order %s: extra payment %+v refund %q, want %q", id, p, p.refund(), want)
		}
	}
	return o
}

// TestCorrectPaymentAfterAMismatchPays: a payment of another amount than the order's is
// MISMATCH and refunded, the order still pending; the customer starts a new payment
// (a new PaymentIntent) and pays the right amount: the order is PAID by it and keeps both.
// A late decline of the new intent's first attempt changes the new payment only.
func TestCorrectPaymentAfterAMismatchPays(t *testing.T) {
	a := newStripeApp(t)
	alice := a.token("alice", "customer")
	show, seats := a.onSaleShowtime()
	o := a.hold(alice, show, seats[:1], "k")
	a.startPayment(alice, o.ID)
	wrong := a.orderState(alice, o.ID).Payment.Reference
	ev, _ := stripeEvent("payment_intent.succeeded", intent(wrong, o.ID, o.AmountCents-1, "usd"))
	a.deliver(ev).want(t, http.StatusOK, "applied")
	if st := a.orderPayments(alice, o.ID); st.Status != "PENDING_PAYMENT" || len(st.Payments) != 1 ||
		st.Payments[0].Status != "MISMATCH" || st.Payments[0].refund() != "SUCCEEDED" || st.Payments[0].AmountCents != o.AmountCents-1 {
		t.Fatalf("after the mismatch: %+v, want pending with one MISMATCH payment refunded", st)
	}

	a.startPayment(alice, o.ID)
	st := a.orderPayments(alice, o.ID)
	if len(st.Payments) != 2 || st.Payments[1].Status != "PENDING" || st.Payments[1].Reference == wrong || st.Payment.Reference != st.Payments[1].Reference {
		t.Fatalf("startPayment after the mismatch: %+v, want a new pending payment", st)
	}
	right := st.Payments[1].Reference
	declined := intent(right, o.ID, o.AmountCents, "usd")
	declined["status"], declined["amount_received"] = "requires_payment_method", 0
	failed, _ := stripeEvent("payment_intent.payment_failed", declined)
	ok, _ := stripeEvent("payment_intent.succeeded", intent(right, o.ID, o.AmountCents, "usd"))
	a.deliver(failed).want(t, http.StatusOK, "applied")
	if st := a.orderPayments(alice, o.ID); st.Payments[0].Status != "MISMATCH" || st.Payments[1].Status != "FAILED" {
		t.Fatalf("after the decline: %+v, want MISMATCH then FAILED", st.Payments)
	}
	a.deliver(ok).want(t, http.StatusOK, "applied")
	a.deliver(ok).want(t, http.StatusOK, "replayed")
	got := a.paidOnce(alice, o.ID, right, 2, "SUCCEEDED")
	if got.Payments[0].Reference != wrong || got.Payments[0].Status != "MISMATCH" {
		t.Fatalf("payments = %+v, want the mismatch kept first", got.Payments)
	}
	if m, _ := a.seatStatuses(show); m[seats[0]] != "SOLD" {
		t.Fatalf("seat = %s, want SOLD", m[seats[0]])
	}
}

// TestSecondPaymentOfAPaidOrderIsRefunded: a second PaymentIntent of an order already paid
// (two tabs, say) is kept beside the first and refunded through Stripe; its replay, and a
// late failure of the first, change nothing. Another customer sees neither.
func TestSecondPaymentOfAPaidOrderIsRefunded(t *testing.T) {
	a := newStripeApp(t)
	alice, bob := a.token("alice", "customer"), a.token("bob", "customer")
	show, seats := a.onSaleShowtime()
	o, first := a.paidByStripe(alice, show, seats[:2], "k")

	second, _ := stripeEvent("payment_intent.succeeded", intent("pi_second_tab", o.ID, o.AmountCents, "usd"))
	a.deliver(second).want(t, http.StatusOK, "applied")
	a.deliver(second).want(t, http.StatusOK, "replayed")
	failed, _ := stripeEvent("payment_intent.payment_failed", intent(first, o.ID, o.AmountCents, "usd"))
	a.deliver(failed).want(t, http.StatusOK, "applied")
	st := a.paidOnce(alice, o.ID, first, 2, "SUCCEEDED")
	if st.Payments[1].Reference != "pi_second_tab" || st.Payments[1].Status != "SUCCEEDED" {
		t.Fatalf("payments = %+v, want the second tab's kept", st.Payments)
	}
	if m, _ := a.seatStatuses(show); m[seats[0]] != "SOLD" || m[seats[1]] != "SOLD" {
		t.Fatalf("seats = %s %s, want SOLD", m[seats[0]], m[seats[1]])
	}
	a.wantCode(bob, orderPaymentsQ, map[string]any{"id": o.ID}, "NOT_FOUND")
	if retried, outstanding := a.reconcileRefunds(); retried != 0 || outstanding != 0 {
		t.Fatalf("reconcile: retried %d, outstanding %d; want 0, 0", retried, outstanding)
	}
}

// TestTwoPaymentsAtOnce: two PaymentIntents of one order confirmed at the same moment, at
// two instances: exactly one pays the order, the other is kept and refunded. Half the
// orders are paid after their hold ran out (the late-payment path).
func TestTwoPaymentsAtOnce(t *testing.T) {
	a := newStripeApp(t)
	b := a.siblingWith(stripeFlags(testenv.StripeMock(t))...)
	alice := a.token("alice", "customer")
	show, seats := a.onSaleShowtime()
	var orders []orderOut
	for i := range 6 {
		orders = append(orders, a.hold(alice, show, seats[i:i+1], "k"+o2s(i)))
	}
	for i, o := range orders {
		if i == len(orders)/2 {
			a.clock.Advance(16 * time.Minute)
			b.clock.Advance(16 * time.Minute)
		}
		refs := []string{"pi_tab1_" + o2s(i), "pi_tab2_" + o2s(i)}
		var wg sync.WaitGroup
		replies := make([]webhookReply, 2)
		start := make(chan struct{})
		for j, inst := range []*testApp{a, b} {
			ev, _ := stripeEvent("payment_intent.succeeded", intent(refs[j], o.ID, o.AmountCents, "usd"))
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				replies[j] = inst.deliver(ev)
			}()
		}
		close(start)
		wg.Wait()
		for _, r := range replies {
			r.want(t, http.StatusOK, "applied")
		}
		st := a.orderPayments(alice, o.ID)
		if st.Payment == nil {
			t.Fatalf("order %s: no payment", o.ID)
		}
		a.paidOnce(alice, o.ID, st.Payment.Reference, 2, "SUCCEEDED")
	}
	m, _ := a.seatStatuses(show)
	for i := range orders {
		if m[seats[i]] != "SOLD" {
			t.Fatalf("seat %d = %s, want SOLD", i, m[seats[i]])
		}
	}
}

// TestExtraPaymentRefundIsSentByTheReconciler: the instance that receives a second
// payment of a paid order cannot reach Stripe, so its refund stays REQUIRED; the
// reconciler sends it after the grace. Then Stripe reports that refund failed: the
// reconciler sends a new one.
func TestExtraPaymentRefundIsSentByTheReconciler(t *testing.T) {
	a := newStripeApp(t)
	cut := a.siblingWith(stripeFlags("http://127.0.0.1:1")...) // nothing answers there
	alice := a.token("alice", "customer")
	show, seats := a.onSaleShowtime()
	o, first := a.paidByStripe(alice, show, seats[:1], "k")

	second, _ := stripeEvent("payment_intent.succeeded", intent("pi_extra", o.ID, o.AmountCents, "usd"))
	cut.deliver(second).want(t, http.StatusOK, "applied")
	a.paidOnce(alice, o.ID, first, 2, "REQUIRED")
	if retried, outstanding := a.reconcileRefunds(); retried != 0 || outstanding != 1 {
		t.Fatalf("reconcile within the grace: retried %d, outstanding %d; want 0, 1", retried, outstanding)
	}
	a.clock.Advance(2 * time.Minute)
	if retried, outstanding := a.reconcileRefunds(); retried != 1 || outstanding != 0 {
		t.Fatalf("reconcile: retried %d, outstanding %d; want 1, 0", retried, outstanding)
	}
	st := a.paidOnce(alice, o.ID, first, 2, "SUCCEEDED")

	refundRef := ""
	for _, p := range a.DB.Payment.Query().AllX(t.Context()) {
		if p.Reference == "pi_extra" {
			for _, r := range a.DB.Refund.Query().Where(refund.PaymentID(p.ID), refund.Whole(true)).AllX(t.Context()) {
				refundRef = r.Reference
			}
		}
	}
	if refundRef == "" {
		t.Fatalf("no refund reference recorded for the extra payment: %+v", st.Payments)
	}
	ev, _ := stripeEvent("refund.updated", refundObject(refundRef, "pi_extra", "failed"))
	a.deliver(ev).want(t, http.StatusOK, "applied")
	a.paidOnce(alice, o.ID, first, 2, "FAILED")
	a.clock.Advance(2 * time.Minute)
	if retried, outstanding := a.reconcileRefunds(); retried != 1 || outstanding != 0 {
		t.Fatalf("reconcile after the failure: retried %d, outstanding %d; want 1, 0", retried, outstanding)
	}
	a.paidOnce(alice, o.ID, first, 2, "SUCCEEDED")
}
