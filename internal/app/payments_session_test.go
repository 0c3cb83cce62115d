package app

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"seatflow/ent/payment"
	"seatflow/internal/nodeid"
)

func TestStripePaymentIsConfirmedByTheProviderOnly(t *testing.T) {
	a := newStripeApp(t)
	alice := a.token("alice", "customer")
	show, seats := a.onSaleShowtime()
	o := a.hold(alice, show, seats[:2], "k1")

	s := a.startPayment(alice, o.ID)
	if s.Provider != "stripe" || s.ClientSecret == nil || !strings.Contains(*s.ClientSecret, "_secret_") ||
		s.AmountCents != o.AmountCents || s.Currency != "USD" || s.ExpiresAt == nil || *s.ExpiresAt != o.ExpiresAt {
		t.Fatalf("session = %+v, want stripe's client secret for %d USD until %s", s, o.AmountCents, o.ExpiresAt)
	}
	st := a.orderState(alice, o.ID)
	if st.Payment == nil || st.Payment.Provider != "stripe" || st.Payment.Status != "PENDING" || !strings.HasPrefix(st.Payment.Reference, "pi_") {
		t.Fatalf("payment after startPayment = %+v", st.Payment)
	}
	pi := st.Payment.Reference

	t.Run("PayOrderIsForbidden", func(t *testing.T) {
		r := a.wantCode(alice, `mutation($id: ID!) { payOrder(orderId: $id, paymentRef: "fake") { status } }`,
			map[string]any{"id": o.ID}, "FORBIDDEN")
		if !strings.Contains(r.Errors[0].Message, "confirmed by the provider") {
			t.Fatalf("message = %q", r.Errors[0].Message)
		}
		if got := a.orderState(alice, o.ID).Status; got != "PENDING_PAYMENT" {
			t.Fatalf("status = %s, want PENDING_PAYMENT", got)
		}
	})

	t.Run("SecondStartGivesTheSameSession", func(t *testing.T) {
		again := a.startPayment(alice, o.ID)
		if !reflect.DeepEqual(again, s) {
			t.Fatalf("second session = %+v, want %+v", again, s)
		}
		n, err := a.DB.Payment.Query().Where(payment.OrderID(idOf(t, o.ID))).Count(context.Background())
		if err != nil || n != 1 {
			t.Fatalf("payment records = %d (%v), want 1", n, err)
		}
		if got := a.orderState(alice, o.ID).Payment.Reference; got != pi {
			t.Fatalf("reference = %s after the second start, want %s", got, pi)
		}
	})

	t.Run("WebhookPays", func(t *testing.T) {
		ev, _ := stripeEvent("payment_intent.succeeded", intent(pi, o.ID, o.AmountCents, "usd"))
		a.deliver(ev).want(t, http.StatusOK, "applied")
		st := a.orderState(alice, o.ID)
		if st.Status != "PAID" || st.Payment.Status != "SUCCEEDED" || st.Payment.Reference != pi || st.refund() != "" {
			t.Fatalf("after payment_intent.succeeded: %+v %+v", st, st.Payment)
		}
		if m, _ := a.seatStatuses(show); m[seats[0]] != "SOLD" || m[seats[1]] != "SOLD" {
			t.Fatalf("seats = %s %s, want SOLD", m[seats[0]], m[seats[1]])
		}
	})
}

// TestStartPaymentRefusals: what startPayment refuses, and that none of it touches a seat.
func TestStartPaymentRefusals(t *testing.T) {
	a := newStripeApp(t)
	alice, bob := a.token("alice", "customer"), a.token("bob", "customer")
	show, seats := a.onSaleShowtime()
	pending := a.hold(alice, show, seats[0:1], "pending")
	paid, _ := a.paidByStripe(alice, show, seats[1:2], "paid")
	expiring := a.hold(alice, show, seats[2:3], "expiring")
	cancelled := a.hold(alice, show, seats[3:4], "cancelled") // the row's end stays free: no gap
	a.must(alice, `mutation($id: ID!) { cancelOrder(orderId: $id) { status } }`, map[string]any{"id": cancelled.ID}, nil)
	// expiring's hold runs out, pending's was extended; the worker marks expiring EXPIRED.
	a.clock.Advance(10 * time.Minute)
	a.must(alice, `mutation($id: ID!) { extendHold(orderId: $id) { status } }`, map[string]any{"id": pending.ID}, nil)
	a.clock.Advance(6 * time.Minute)
	a.waitExpired(alice, expiring.ID, show, seats[2])
	before, _ := a.seatStatuses(show)

	for _, c := range []struct {
		name, token, id, code string
	}{
		{"SomeoneElsesOrder", bob, pending.ID, "NOT_FOUND"},
		{"MissingOrder", alice, nodeid.Encode(nodeid.Order, 999999), "NOT_FOUND"},
		{"PaidOrder", alice, paid.ID, "INVALID_STATE"},
		{"CancelledOrder", alice, cancelled.ID, "INVALID_STATE"},
		{"ExpiredOrder", alice, expiring.ID, "ORDER_EXPIRED"},
		{"Anonymous", "", pending.ID, "UNAUTHENTICATED"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a.wantCode(c.token, startPaymentQ, map[string]any{"id": c.id}, c.code)
		})
	}
	if after, _ := a.seatStatuses(show); !reflect.DeepEqual(after, before) {
		t.Fatalf("seats changed: before %v, after %v", before, after)
	}
	if st := a.orderState(alice, pending.ID); st.Status != "PENDING_PAYMENT" || st.Payment != nil {
		t.Fatalf("someone else's startPayment changed the order: %+v", st)
	}
}

func TestTestProviderPaysWithPayOrder(t *testing.T) {
	a := newTestApp(t)
	alice := a.token("alice", "customer")
	show, seats := a.onSaleShowtime()
	o := a.hold(alice, show, seats[:1], "k")

	s := a.startPayment(alice, o.ID)
	if s.Provider != "test" || s.ClientSecret != nil || s.AmountCents != o.AmountCents || s.Currency != "USD" {
		t.Fatalf("session = %+v, want the test provider's, with no client secret", s)
	}
	a.must(alice, `mutation($id: ID!) { payOrder(orderId: $id, paymentRef: "demo-1") { status } }`, map[string]any{"id": o.ID}, nil)
	st := a.orderState(alice, o.ID)
	if st.Status != "PAID" || st.Payment == nil || *st.Payment != (struct {
		Provider, Status, Reference string
		RefundStatus                *string
	}{"test", "SUCCEEDED", "demo-1", nil}) {
		t.Fatalf("after payOrder: %+v %+v", st, st.Payment)
	}
	if r := a.postWebhook([]byte(`{}`), "t=1,v1=00"); r.Status != http.StatusNotFound {
		t.Fatalf("POST /webhooks/stripe with the test provider answered %d, want 404 (no route)", r.Status)
	}
}

// TestStripeDeclinedPaymentKeepsTheHold: a declined or cancelled payment is recorded and
// the hold stays as it is (the customer may try again with the same session); events that
// arrive out of order never undo a payment that took money.
func TestStripeDeclinedPaymentKeepsTheHold(t *testing.T) {
	a := newStripeApp(t)
	alice := a.token("alice", "customer")
	show, seats := a.onSaleShowtime()
	o := a.hold(alice, show, seats[:1], "k")
	first := a.startPayment(alice, o.ID)
	pi := a.orderState(alice, o.ID).Payment.Reference

	declined := intent(pi, o.ID, o.AmountCents, "usd")
	declined["status"], declined["amount_received"] = "requires_payment_method", 0
	declined["last_payment_error"] = map[string]any{"message": "Your card was declined."}
	failed, _ := stripeEvent("payment_intent.payment_failed", declined)
	a.deliver(failed).want(t, http.StatusOK, "applied")
	st := a.orderState(alice, o.ID)
	if st.Status != "PENDING_PAYMENT" || st.Payment.Status != "FAILED" {
		t.Fatalf("after payment_failed: %+v %+v, want pending and FAILED", st, st.Payment)
	}
	if m, _ := a.seatStatuses(show); m[seats[0]] != "HELD" {
		t.Fatalf("seat = %s after a declined payment, want HELD", m[seats[0]])
	}
	if again := a.startPayment(alice, o.ID); !reflect.DeepEqual(again, first) {
		t.Fatalf("session after a decline = %+v, want the same %+v", again, first)
	}

	ok, _ := stripeEvent("payment_intent.succeeded", intent(pi, o.ID, o.AmountCents, "usd"))
	a.deliver(ok).want(t, http.StatusOK, "applied")
	late, _ := stripeEvent("payment_intent.canceled", intent(pi, o.ID, o.AmountCents, "usd"))
	a.deliver(late).want(t, http.StatusOK, "applied")
	a.deliver(failed).want(t, http.StatusOK, "replayed")
	if st := a.orderState(alice, o.ID); st.Status != "PAID" || st.Payment.Status != "SUCCEEDED" {
		t.Fatalf("after out-of-order events: %+v %+v, want PAID and SUCCEEDED", st, st.Payment)
	}
}
