package app

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"seatflow/ent"
	"seatflow/ent/refund"
	"seatflow/internal/tooling/testenv"
)

// Refunding some seats of a paid order (admin refundSeats) through Stripe: what reaches
// the provider, the tickets, the seat map, the provider's word and the reconciler.

const refundSeatsQ = `mutation($id: ID!, $seats: [ID!]!) {
  refundSeats(orderId: $id, seatIds: $seats) { id status amountCents lines { seat { id } amountCents refunded refundedAt } } }`

type refundSeatsOut struct {
	RefundSeats struct {
		ID, Status  string
		AmountCents int
		Lines       []struct {
			Seat        struct{ ID string }
			AmountCents int
			Refunded    bool
			RefundedAt  *time.Time
		}
	}
}

// refundedSeats are the seats the answer's lines say were refunded.
func (o refundSeatsOut) refundedSeats() []string {
	var out []string
	for _, l := range o.RefundSeats.Lines {
		if l.Refunded != (l.RefundedAt != nil) {
			return []string{"refunded and refundedAt disagree on " + l.Seat.ID}
		}
		if l.Refunded {
			out = append(out, l.Seat.ID)
		}
	}
	return out
}

// seatRefunds are the order's refunds of some seats, oldest first.
func (a *testApp) seatRefunds(orderID string) []*ent.Refund {
	a.t.Helper()
	rs, err := a.DB.Refund.Query().Where(refund.OrderID(idOf(a.t, orderID)), refund.Whole(false)).Order(ent.Asc(refund.FieldID)).All(context.Background())
	if err != nil {
		a.t.Fatal(err)
	}
	return rs
}

// refundsSent are the requests for refunds that reached Stripe.
func refundsSent(sent func() []testenv.StripeRequest) []testenv.StripeRequest {
	var out []testenv.StripeRequest
	for _, r := range sent() {
		if r.Path == "/v1/refunds" {
			out = append(out, r)
		}
	}
	return out
}

func TestRefundSeatsThroughStripe(t *testing.T) {
	base, sent := testenv.RecordingStripe(t)
	a := newTestApp(t, stripeFlags(base)...)
	alice, staff := a.token("alice", "customer"), a.token("door-1", "staff")
	show, seats := a.onSaleShowtime()
	o, pi := a.paidByStripe(alice, show, seats[:3], "three") // 3 × 1000
	c := dialWS(t, a, "graphql-transport-ws", "")
	c.subscribe(show)
	snap := c.event()
	vars := func(seats ...string) map[string]any { return map[string]any{"id": o.ID, "seats": seats} }

	a.wantCode(alice, refundSeatsQ, vars(seats[1]), "FORBIDDEN")
	var out refundSeatsOut
	a.must(a.admin, refundSeatsQ, vars(seats[1]), &out)
	if out.RefundSeats.Status != "PAID" || out.RefundSeats.AmountCents != 2000 || !slices.Equal(out.refundedSeats(), []string{seats[1]}) {
		t.Fatalf("refundSeats answered %+v", out.RefundSeats)
	}
	c.wantDelta(snap.Version+1, "AVAILABLE", seats[1])
	rs := a.seatRefunds(o.ID)
	if len(rs) != 1 || rs[0].AmountCents != 1000 || rs[0].Status != "SUCCEEDED" || rs[0].Reference == "" || rs[0].CreatedBy != "admin-1" {
		t.Fatalf("refunds = %+v", rs)
	}
	reqs := refundsSent(sent)
	if len(reqs) != 1 || reqs[0].Form.Get("payment_intent") != pi || reqs[0].Form.Get("amount") != "1000" ||
		reqs[0].Form.Get("metadata[seat_refund]") != fmt.Sprint(rs[0].ID) {
		t.Fatalf("Stripe was asked %+v, want one refund of 1000 of %s", reqs, pi)
	}
	tickets := a.tickets(alice, o.ID)
	for _, tk := range tickets {
		if want := map[bool]string{true: "REVOKED", false: "VALID"}[tk.Seat.ID == seats[1]]; tk.Status != want {
			t.Errorf("ticket of seat %s is %s, want %s", tk.Seat.ID, tk.Status, want)
		}
	}
	a.must(a.admin, refundSeatsQ, vars(seats[1]), &out) // staff clicks twice
	if n := len(refundsSent(sent)); n != 1 || len(a.seatRefunds(o.ID)) != 1 || out.RefundSeats.AmountCents != 2000 {
		t.Fatalf("the repeat sent %d refunds, answered %+v", n, out.RefundSeats)
	}
	a.mustAgree()

	t.Run("FailedIsSentAgainByTheReconciler", func(t *testing.T) {
		r := a.seatRefunds(o.ID)[0]
		ev, _ := stripeEvent("refund.updated", map[string]any{"id": r.Reference, "object": "refund", "amount": 1000,
			"currency": "usd", "payment_intent": pi, "status": "failed", "failure_reason": "expired_or_canceled_card",
			"metadata": map[string]any{"seat_refund": fmt.Sprint(r.ID)}})
		a.deliver(ev).want(t, http.StatusOK, "applied")
		if got := a.seatRefunds(o.ID)[0]; got.Status != "FAILED" || got.Attempts != 1 {
			t.Fatalf("after the provider's failure: %s, %d attempts", got.Status, got.Attempts)
		}
		if got := a.orderState(alice, o.ID); got.refund() != "" || got.Status != "PAID" {
			t.Fatalf("the seats' refund touched the payment's own refund: %+v", got)
		}
		a.clock.Advance(2 * time.Minute)
		if retried, outstanding := a.reconcileRefunds(); retried != 1 || outstanding != 0 {
			t.Fatalf("reconciler retried %d, %d outstanding; want 1, 0", retried, outstanding)
		}
		reqs := refundsSent(sent)
		if len(reqs) != 2 || reqs[1].Form.Get("amount") != "1000" || reqs[1].Header.Get("Idempotency-Key") == reqs[0].Header.Get("Idempotency-Key") {
			t.Fatalf("the retry = %+v, want a new request for 1000", reqs[1:])
		}
		if got := a.seatRefunds(o.ID)[0]; got.Status != "SUCCEEDED" {
			t.Fatalf("after the retry: %s", got.Status)
		}
	})

	t.Run("CheckedInSeatRefused", func(t *testing.T) {
		a.doorOpen()
		if r := a.checkIn(staff, show, tickets[0].Code, ""); r.Status != "ADMITTED" {
			t.Fatalf("check-in: %s", r.Status)
		}
		r := a.wantCode(a.admin, refundSeatsQ, vars(seats[0], seats[2]), "INVALID_STATE")
		if ids := fmt.Sprint(r.Errors[0].Extensions["seatIds"]); ids != fmt.Sprint([]string{seats[0]}) {
			t.Errorf("extensions.seatIds = %s, want [%s]", ids, seats[0])
		}
		if m, _ := a.seatStatuses(show); m[seats[0]] != "SOLD" || m[seats[2]] != "SOLD" {
			t.Fatalf("seats after the refusal: %s %s", m[seats[0]], m[seats[2]])
		}
		if n := len(a.seatRefunds(o.ID)); n != 1 {
			t.Fatalf("%d refunds after the refusal", n)
		}
		a.mustAgree()
	})

	t.Run("TheLastSeatsAreTheWholeRefund", func(t *testing.T) {
		o2, pi2 := a.paidByStripe(alice, show, seats[3:5], "two")
		a.must(a.admin, refundSeatsQ, map[string]any{"id": o2.ID, "seats": []string{seats[4]}}, &out)
		before := len(refundsSent(sent))
		a.must(a.admin, refundSeatsQ, map[string]any{"id": o2.ID, "seats": []string{seats[3], seats[4]}}, &out)
		if out.RefundSeats.Status != "CANCELLED" || len(out.refundedSeats()) != 2 {
			t.Fatalf("refunding the rest answered %+v", out.RefundSeats)
		}
		reqs := refundsSent(sent)[before:]
		if len(reqs) != 1 || reqs[0].Form.Get("payment_intent") != pi2 || reqs[0].Form.Get("amount") != "1000" || reqs[0].Form.Has("metadata[seat_refund]") {
			t.Fatalf("the whole refund asked Stripe %+v, want the rest (1000) of %s as the payment's refund", reqs, pi2)
		}
		if st := a.orderState(alice, o2.ID); st.refund() != "SUCCEEDED" {
			t.Fatalf("payment refund = %q", st.refund())
		}
		if m, _ := a.seatStatuses(show); m[seats[3]] != "AVAILABLE" || m[seats[4]] != "AVAILABLE" {
			t.Fatalf("seats after the whole refund: %s %s", m[seats[3]], m[seats[4]])
		}
		a.mustAgree()
	})
}

// TestConcurrentSeatRefundsThroughStripe: several admins refund overlapping seats of one
// order at once. Stripe is asked for each seat's money once: the amounts it was asked for
// add up to the lines refunded, and the order keeps the rest.
func TestConcurrentSeatRefundsThroughStripe(t *testing.T) {
	base, sent := testenv.RecordingStripe(t)
	a := newTestApp(t, stripeFlags(base)...)
	alice := a.token("alice", "customer")
	show, seats := a.onSaleShowtime()
	o, _ := a.paidByStripe(alice, show, seats[:6], "six") // 6 × 1000
	sets := [][]string{seats[0:2], seats[1:3], seats[2:4], seats[0:3], seats[3:5], {seats[0], seats[4]}}
	var wg sync.WaitGroup
	codes := make([]string, len(sets))
	for i, set := range sets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = a.do(a.admin, refundSeatsQ, map[string]any{"id": o.ID, "seats": set}).Code()
		}()
	}
	wg.Wait()
	for i, c := range codes {
		if c != "" && c != "INVALID_STATE" {
			t.Errorf("admin %d: %s", i, c)
		}
	}
	asked := 0
	for _, r := range refundsSent(sent) {
		n, err := strconv.Atoi(r.Form.Get("amount"))
		if err != nil {
			t.Fatalf("a refund without its amount: %v", r.Form)
		}
		asked += n
	}
	var out struct {
		Order struct {
			Status      string
			AmountCents int
			Lines       []struct{ Refunded bool }
		}
	}
	a.must(alice, `query($id: ID!) { order(id: $id) { status amountCents lines { refunded } } }`, map[string]any{"id": o.ID}, &out)
	refunded := 0
	for _, l := range out.Order.Lines {
		if l.Refunded {
			refunded++
		}
	}
	if asked != refunded*1000 || out.Order.AmountCents != 6000-asked || out.Order.Status != "PAID" || refunded < 2 {
		t.Fatalf("Stripe asked for %d, %d seats refunded, the order %s at %d", asked, refunded, out.Order.Status, out.Order.AmountCents)
	}
	a.mustAgree()
}
