package app

import (
	"bytes"
	"context"
	"net/http"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stripe/stripe-go/v82/webhook"

	"seatflow/internal/nodeid"
	"seatflow/internal/tooling/testenv"
)

// TestStripeWebhookRefusesBadDeliveries: each delivery that is not a valid, fresh, signed
// Stripe event is refused with 400 (or ignored with 200 when it is not about an order) and
// changes nothing: the order stays pending, its seats held, no event is recorded.
func TestStripeWebhookRefusesBadDeliveries(t *testing.T) {
	a := newStripeApp(t)
	alice := a.token("alice", "customer")
	show, seats := a.onSaleShowtime()
	o := a.hold(alice, show, seats[:2], "k")
	a.startPayment(alice, o.ID)
	pi := a.orderState(alice, o.ID).Payment.Reference
	good, _ := stripeEvent("payment_intent.succeeded", intent(pi, o.ID, o.AmountCents, "usd"))
	seatsBefore, _ := a.seatStatuses(show)

	for _, c := range []struct {
		name    string
		reply   func() webhookReply
		status  int
		outcome string
	}{
		{"BadSignature", func() webhookReply { return a.deliverSigned(good, "whsec_someone_else", time.Now()) }, 400, ""},
		{"StaleTimestamp", func() webhookReply { return a.deliverSigned(good, webhookSecret, time.Now().Add(-6*time.Minute)) }, 400, ""},
		// A signature dated ahead could be replayed until that date: the tolerance bounds both ways.
		{"FutureTimestamp", func() webhookReply {
			return a.deliverSigned(good, webhookSecret, time.Now().Add(100_000*time.Second))
		}, 400, ""},
		{"TimestampJustPastTheTolerance", func() webhookReply { return a.deliverSigned(good, webhookSecret, time.Now().Add(6*time.Minute)) }, 400, ""},
		{"NoSignature", func() webhookReply { return a.postWebhook(good, "") }, 400, ""},
		{"GarbledSignatureHeader", func() webhookReply { return a.postWebhook(good, "t=now,v1") }, 400, ""},
		{"BodyChangedAfterSigning", func() webhookReply {
			other := bytes.Replace(good, []byte(`"amount_received":`), []byte(`"amount_received":1`), 1)
			return a.postWebhook(other, signedHeader(good))
		}, 400, ""},
		{"MalformedJSON", func() webhookReply {
			return a.deliver([]byte(`{"id": "evt_1", "type": "payment_intent.succeeded", "data": {`))
		}, 400, ""},
		{"MalformedObject", func() webhookReply {
			ev, _ := stripeEvent("payment_intent.succeeded", map[string]any{"id": 42, "amount": "lots"})
			return a.deliver(ev)
		}, 400, ""},
		{"UnknownEventType", func() webhookReply {
			ev, _ := stripeEvent("customer.created", map[string]any{"id": "cus_1", "object": "customer"})
			return a.deliver(ev)
		}, 200, "ignored"},
		{"PaymentIntentOfNoOrder", func() webhookReply {
			obj := intent(pi, o.ID, o.AmountCents, "usd")
			obj["metadata"] = map[string]any{}
			ev, _ := stripeEvent("payment_intent.succeeded", obj)
			return a.deliver(ev)
		}, 200, "ignored"},
		{"BodyTooLarge", func() webhookReply { return a.postWebhook(bytes.Repeat([]byte(" "), 2<<20), signedHeader(good)) }, 413, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.reply().want(t, c.status, c.outcome)
			if st := a.orderState(alice, o.ID); st.Status != "PENDING_PAYMENT" || st.Payment.Status != "PENDING" {
				t.Fatalf("order after the delivery: %s, payment %s", st.Status, st.Payment.Status)
			}
			if n := a.eventsRecorded(""); n != 0 {
				t.Fatalf("%d events recorded, want 0", n)
			}
			if after, _ := a.seatStatuses(show); !reflect.DeepEqual(after, seatsBefore) {
				t.Fatalf("seats changed: %v, want %v", after, seatsBefore)
			}
		})
	}
	// The same event, delivered properly, pays: the refusals above were about the delivery.
	a.deliver(good).want(t, http.StatusOK, "applied")
}

// signedHeader is the Stripe-Signature header of payload signed now with the endpoint's secret.
func signedHeader(payload []byte) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: webhookSecret}).Header
}

// TestStripeReplayHasNoEffect: a second delivery of an event answers 200 and changes
// nothing, even when the order moved on since (here: refunded by staff).
func TestStripeReplayHasNoEffect(t *testing.T) {
	a := newStripeApp(t)
	alice := a.token("alice", "customer")
	show, seats := a.onSaleShowtime()
	o := a.hold(alice, show, seats[:1], "k")
	a.startPayment(alice, o.ID)
	pi := a.orderState(alice, o.ID).Payment.Reference
	ev, id := stripeEvent("payment_intent.succeeded", intent(pi, o.ID, o.AmountCents, "usd"))
	a.deliver(ev).want(t, http.StatusOK, "applied")
	a.must(a.admin, `mutation($id: ID!) { refundOrder(orderId: $id) { status } }`, map[string]any{"id": o.ID}, nil)
	before := a.orderState(alice, o.ID)
	if before.Status != "CANCELLED" || before.refund() != "SUCCEEDED" {
		t.Fatalf("after refundOrder: %+v %+v", before, before.Payment)
	}

	a.deliver(ev).want(t, http.StatusOK, "replayed")
	if after := a.orderState(alice, o.ID); after.Status != before.Status || after.refund() != before.refund() ||
		after.Payment.Status != before.Payment.Status {
		t.Fatalf("replay changed the order: %+v %+v, want %+v %+v", after, after.Payment, before, before.Payment)
	}
	if m, _ := a.seatStatuses(show); m[seats[0]] != "AVAILABLE" {
		t.Fatalf("seat = %s after the replay, want AVAILABLE (refunded)", m[seats[0]])
	}
	if n := a.eventsRecorded(id); n != 1 {
		t.Fatalf("event recorded %d times, want 1", n)
	}
}

// TestStripeAmountMismatchIsFlaggedNotPaid: a confirmation of another amount or currency
// than the order's leaves the order unpaid and its seats held, flags the payment MISMATCH
// and refunds it.
func TestStripeAmountMismatchIsFlaggedNotPaid(t *testing.T) {
	a := newStripeApp(t)
	alice := a.token("alice", "customer")
	show, seats := a.onSaleShowtime()
	for i, c := range []struct {
		name     string
		delta    int
		currency string
	}{{"Amount", -1, "usd"}, {"Currency", 0, "eur"}} {
		t.Run(c.name, func(t *testing.T) {
			o := a.hold(alice, show, seats[i:i+1], c.name)
			a.startPayment(alice, o.ID)
			pi := a.orderState(alice, o.ID).Payment.Reference
			ev, _ := stripeEvent("payment_intent.succeeded", intent(pi, o.ID, o.AmountCents+c.delta, c.currency))
			a.deliver(ev).want(t, http.StatusOK, "applied")
			st := a.orderState(alice, o.ID)
			if st.Status != "PENDING_PAYMENT" || st.Payment.Status != "MISMATCH" || st.refund() != "SUCCEEDED" {
				t.Fatalf("after a mismatched payment: %+v %+v, want pending, MISMATCH, refunded", st, st.Payment)
			}
			if m, _ := a.seatStatuses(show); m[seats[i]] != "HELD" {
				t.Fatalf("seat = %s, want HELD", m[seats[i]])
			}
		})
	}
}

// TestStripeWebhookBeforeTheOrderExists: a confirmation naming an order this instance
// cannot see (yet) answers 503, so Stripe delivers it again; once the order is there the
// same delivery pays it.
func TestStripeWebhookBeforeTheOrderExists(t *testing.T) {
	a := newStripeApp(t)
	alice := a.token("alice", "customer")
	show, seats := a.onSaleShowtime()
	ev, id := stripeEvent("payment_intent.succeeded", intent("pi_early", nodeid.Encode(nodeid.Order, 1), 1000, "usd"))

	if r := a.deliver(ev); r.Status != http.StatusServiceUnavailable || r.Error == "" {
		t.Fatalf("webhook before the order answered %+v, want 503 with a reason", r)
	}
	if n := a.eventsRecorded(id); n != 0 {
		t.Fatalf("event recorded %d times before its order existed, want 0", n)
	}
	o := a.hold(alice, show, seats[:1], "k") // the first order of this database: id 1, 1000 cents
	if o.ID != nodeid.Encode(nodeid.Order, 1) || o.AmountCents != 1000 {
		t.Fatalf("order = %s for %d cents, want 1 for 1000", o.ID, o.AmountCents)
	}
	a.deliver(ev).want(t, http.StatusOK, "applied")
	if st := a.orderState(alice, o.ID); st.Status != "PAID" || st.Payment.Reference != "pi_early" {
		t.Fatalf("after the redelivery: %+v %+v", st, st.Payment)
	}
}

// TestStripeEventForACancelledShowtime: the payment of an order whose showtime was
// cancelled is recorded and refunded; the order and its seats stay as they are.
func TestStripeEventForACancelledShowtime(t *testing.T) {
	a := newStripeApp(t)
	alice := a.token("alice", "customer")
	show, seats := a.onSaleShowtime()
	o := a.hold(alice, show, seats[:1], "k")
	a.startPayment(alice, o.ID)
	pi := a.orderState(alice, o.ID).Payment.Reference
	a.must(a.admin, `mutation($id: ID!) { cancelShowtime(id: $id) { status } }`, map[string]any{"id": show}, nil)
	before, _ := a.seatStatuses(show)

	ev, _ := stripeEvent("payment_intent.succeeded", intent(pi, o.ID, o.AmountCents, "usd"))
	a.deliver(ev).want(t, http.StatusOK, "applied")
	st := a.orderState(alice, o.ID)
	if st.Status != "PENDING_PAYMENT" || st.Payment.Status != "SUCCEEDED" || st.refund() != "SUCCEEDED" {
		t.Fatalf("after paying for a cancelled showtime: %+v %+v, want unpaid and refunded", st, st.Payment)
	}
	if after, _ := a.seatStatuses(show); !reflect.DeepEqual(after, before) {
		t.Fatalf("seats changed: %v, want %v", after, before)
	}
}

// TestStripeSameEventAtTwoInstances: the same delivery reaching two instances at the same
// moment has one effect: one answers applied, the other replayed, the event is recorded
// once. Half the orders are paid late (hold expired), where applying twice would have
// re-held the seats twice and refunded the payment.
func TestStripeSameEventAtTwoInstances(t *testing.T) {
	a := newStripeApp(t)
	b := a.siblingWith(stripeFlags(testenv.StripeMock(t))...)
	alice := a.token("alice", "customer")
	show, seats := a.onSaleShowtime()
	type paid struct {
		o  orderOut
		ev []byte
		id string
	}
	var orders []paid
	for i := range 6 {
		o := a.hold(alice, show, seats[i:i+1], "k"+o2s(i))
		a.startPayment(alice, o.ID)
		ev, id := stripeEvent("payment_intent.succeeded", intent(a.orderState(alice, o.ID).Payment.Reference, o.ID, o.AmountCents, "usd"))
		orders = append(orders, paid{o, ev, id})
	}
	for i, p := range orders {
		if i == len(orders)/2 { // the rest are paid after their hold ran out
			a.clock.Advance(16 * time.Minute)
			b.clock.Advance(16 * time.Minute)
		}
		payload := p.ev
		var wg sync.WaitGroup
		replies := make([]webhookReply, 2)
		start := make(chan struct{})
		for j, inst := range []*testApp{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				replies[j] = inst.deliver(payload)
			}()
		}
		close(start)
		wg.Wait()
		outcomes := map[string]int{replies[0].Outcome: 1}
		outcomes[replies[1].Outcome]++
		if replies[0].Status != 200 || replies[1].Status != 200 || outcomes["applied"] != 1 || outcomes["replayed"] != 1 {
			t.Fatalf("order %s: replies %+v, want 200 applied and 200 replayed", p.o.ID, replies)
		}
		if st := a.orderState(alice, p.o.ID); st.Status != "PAID" || st.RefundRequired || st.refund() != "" {
			t.Fatalf("order %s after both deliveries: %+v %+v, want PAID, no refund", p.o.ID, st, st.Payment)
		}
		if n := a.eventsRecorded(p.id); n != 1 {
			t.Fatalf("event of order %s recorded %d times, want 1", p.o.ID, n)
		}
	}
	m, _ := a.seatStatuses(show)
	for i := range orders {
		if m[seats[i]] != "SOLD" {
			t.Fatalf("seat %d = %s, want SOLD", i, m[seats[i]])
		}
	}
}

// TestStripePaidButNotSold: the webhook's transaction commits and the Redis confirm fails
// (the instance that got it has lost Redis): the order is PAID, its seats still show held,
// and the reconciler's paid-seat repair sells them.
func TestStripePaidButNotSold(t *testing.T) {
	a := newStripeApp(t)
	alice := a.token("alice", "customer")
	show, seats := a.onSaleShowtime()
	o := a.hold(alice, show, seats[:2], "k")
	a.startPayment(alice, o.ID)
	pi := a.orderState(alice, o.ID).Payment.Reference

	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { dead.Close() })
	cut := startTestApp(t, a.db, &testenv.Redis{Client: dead, Keys: a.Keys, URL: "redis://127.0.0.1:1/0"},
		stripeFlags(testenv.StripeMock(t))...)
	if err := cut.Redis.Ping(context.Background()).Err(); err == nil {
		t.Fatal("the cut-off instance reaches Redis")
	}
	ev, _ := stripeEvent("payment_intent.succeeded", intent(pi, o.ID, o.AmountCents, "usd"))
	cut.deliver(ev).want(t, http.StatusOK, "applied")

	if st := a.orderState(alice, o.ID); st.Status != "PAID" {
		t.Fatalf("order = %s, want PAID", st.Status)
	}
	if m, _ := a.seatStatuses(show); m[seats[0]] != "HELD" || m[seats[1]] != "HELD" {
		t.Fatalf("seats = %s %s before the repair, want HELD (the confirm never ran)", m[seats[0]], m[seats[1]])
	}
	var out struct{ RunReconcile struct{ PaidSeatsFixed int } }
	a.must(a.admin, `mutation { runReconcile { paidSeatsFixed } }`, nil, &out)
	if out.RunReconcile.PaidSeatsFixed != 2 {
		t.Fatalf("paidSeatsFixed = %d, want 2", out.RunReconcile.PaidSeatsFixed)
	}
	if m, _ := a.seatStatuses(show); m[seats[0]] != "SOLD" || m[seats[1]] != "SOLD" {
		t.Fatalf("seats = %s %s after the repair, want SOLD", m[seats[0]], m[seats[1]])
	}
}

func o2s(i int) string { return string(rune('a' + i)) }
