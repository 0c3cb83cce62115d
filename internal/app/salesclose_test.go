package app

import (
	"net/http"
	"testing"
	"time"
)

// salesCloseShowtime creates a showtime that starts in 20 minutes in a 2×8 hall and opens
// its sale; it returns the showtime and its seats in row order.
func (a *testApp) salesCloseShowtime() (string, []string) {
	a.t.Helper()
	hall := a.createHall("Late", 2, 8)
	show := a.createShowtime(a.createMovie("Tenet", 150), hall, a.clock.Now().Add(20*time.Minute))
	return show, a.openSales(show)
}

func (a *testApp) showtimeStatus(show string) string {
	a.t.Helper()
	var out struct{ Showtime struct{ Status string } }
	a.must("", `query($id: ID!) { showtime(id: $id) { status } }`, map[string]any{"id": show}, &out)
	return out.Showtime.Status
}

// Finding: sales never closed: a showtime whose film had ended stayed ON_SALE and an
// order for it was PAID later. Its sales close by themselves 15 minutes after it starts
// (SEATFLOW_SALES_CLOSE_AFTER): holds are NOT_ON_SALE at once, the instance's closer moves
// it to CLOSED (the cached showtime too) and expires its pending orders, a payment after
// that is refunded without taking the seats, and a paid order stays paid. Which
// showtimes the closer closes is shown in internal/sales (TestCloseDue).
func TestSalesCloseByThemselves(t *testing.T) {
	a := newTestApp(t)
	alice, bob := a.token("alice", "customer"), a.token("bob", "customer")
	show, seats := a.salesCloseShowtime()
	paid := a.hold(alice, show, seats[0:2], "paid")
	a.must(alice, `mutation($id: ID!) { payOrder(orderId: $id, paymentRef: "before") { status } }`, map[string]any{"id": paid.ID}, nil)
	a.clock.Advance(25 * time.Minute) // started 5 minutes ago: latecomers still buy
	pending := a.hold(bob, show, seats[2:4], "late-comer")
	if got := a.showtimeStatus(show); got != "ON_SALE" { // and now cached
		t.Fatalf("showtime is %s 5 minutes after its start, want ON_SALE", got)
	}
	a.clock.Advance(10 * time.Minute) // startsAt + 15m; bob's hold would run 5 more minutes

	a.wantCode(bob, holdQ, holdVars(show, seats[4:6], "too-late"), "NOT_ON_SALE")
	deadline := time.Now().Add(15 * time.Second) // the closer runs every 5 s
	for a.showtimeStatus(show) != "CLOSED" {
		if time.Now().After(deadline) {
			t.Fatalf("showtime still %s 15 s after its sales were due to close", a.showtimeStatus(show))
		}
		time.Sleep(50 * time.Millisecond)
	}
	a.waitExpired(bob, pending.ID, show, seats[2])
	a.wantCode(bob, `mutation($id: ID!) { payOrder(orderId: $id, paymentRef: "after") { status } }`, map[string]any{"id": pending.ID}, "NOT_ON_SALE")
	if st := a.orderState(bob, pending.ID); st.Status != "EXPIRED" || !st.RefundRequired || st.refund() != "SUCCEEDED" {
		t.Fatalf("bob's order after a payment past the close: %+v, refund %q; want EXPIRED, refunded", st, st.refund())
	}
	if st := a.orderState(alice, paid.ID); st.Status != "PAID" || st.refund() != "" {
		t.Fatalf("alice's paid order: %+v, want PAID and not refunded", st)
	}
	m, _ := a.seatStatuses(show)
	if m[seats[0]] != "SOLD" || m[seats[2]] != "AVAILABLE" || m[seats[3]] != "AVAILABLE" {
		t.Fatalf("seats %s %s %s, want SOLD (paid before) and AVAILABLE (refunded)", m[seats[0]], m[seats[2]], m[seats[3]])
	}
	a.wantCode(a.admin, `mutation($id: ID!) { openSales(showtimeId: $id) { status } }`, map[string]any{"id": show}, "INVALID_STATE")
}

// A Stripe payment confirmed after the showtime's sales closed is recorded and refunded;
// the order does not take its seats.
func TestSalesClosedStripePaymentRefunded(t *testing.T) {
	a := newStripeApp(t)
	alice := a.token("alice", "customer")
	show, seats := a.salesCloseShowtime()
	a.clock.Advance(25 * time.Minute)
	o := a.hold(alice, show, seats[:2], "late")
	a.startPayment(alice, o.ID)
	pi := a.orderState(alice, o.ID).Payment.Reference
	a.clock.Advance(10 * time.Minute) // sales close; the customer pays at Stripe meanwhile
	ev, _ := stripeEvent("payment_intent.succeeded", intent(pi, o.ID, o.AmountCents, "usd"))
	a.deliver(ev).want(t, http.StatusOK, "applied")
	st := a.orderState(alice, o.ID)
	if st.Status != "EXPIRED" || !st.RefundRequired || st.Payment.Status != "SUCCEEDED" || st.refund() == "" {
		t.Fatalf("order after a payment past the close: %+v %+v, want EXPIRED with the payment recorded and refunded", st, st.Payment)
	}
	if m, _ := a.seatStatuses(show); m[seats[0]] == "SOLD" || m[seats[1]] == "SOLD" {
		t.Fatalf("seats %s %s: a payment after the close took them", m[seats[0]], m[seats[1]])
	}
}
