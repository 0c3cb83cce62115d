package app

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"seatflow/ent/paymentevent"
	"seatflow/internal/nodeid"
	"seatflow/internal/tooling/testenv"
)

// webhookSecret is the signing secret of the test instances' Stripe webhook endpoint.
const webhookSecret = "whsec_seatflow_test_secret"

// stripeFlags configures the stripe provider against the Stripe API at base (stripe-mock,
// or an address where nothing answers).
func stripeFlags(base string) []string {
	return []string{"-payment-provider", "stripe", "-stripe-api-key", testenv.StripeMockKey,
		"-stripe-webhook-secret", webhookSecret, "-stripe-api-base", base}
}

// newStripeApp starts an instance that takes payments through Stripe (stripe-mock).
func newStripeApp(t testing.TB) *testApp {
	t.Helper()
	return newTestApp(t, stripeFlags(testenv.StripeMock(t))...)
}

// siblingWith starts a second instance on the same database and Redis prefix with its own
// flags, its clock at the same time as a's.
func (a *testApp) siblingWith(flags ...string) *testApp {
	a.t.Helper()
	b := startTestApp(a.t, a.db, &testenv.Redis{Client: testenv.NewRedisClient(a.t), Keys: a.Keys, URL: testenv.RedisURL()}, flags...)
	b.clock.Advance(a.clock.Now().Sub(b.clock.Now()))
	return b
}

// stripeEvent returns a Stripe event of type typ about object, as Stripe sends it, and
// its id.
func stripeEvent(typ string, object map[string]any) ([]byte, string) {
	id := testenv.RandomName("evt_")
	payload, _ := json.Marshal(map[string]any{"id": id, "object": "event", "api_version": stripe.APIVersion,
		"created": time.Now().Unix(), "livemode": false, "pending_webhooks": 1, "type": typ,
		"data": map[string]any{"object": object}})
	return payload, id
}

// intent is a PaymentIntent of the given order as Stripe describes it in an event.
func intent(ref, orderID string, cents int, currency string) map[string]any {
	return map[string]any{"id": ref, "object": "payment_intent", "amount": cents, "amount_received": cents,
		"currency": currency, "status": "succeeded", "metadata": map[string]any{"order_id": orderID}}
}

// refundObject is a refund of the PaymentIntent pi as Stripe describes it in an event.
func refundObject(id, pi, status string) map[string]any {
	return map[string]any{"id": id, "object": "refund", "amount": 1000, "currency": "usd", "payment_intent": pi,
		"status": status, "failure_reason": "expired_or_canceled_card"}
}

// webhookReply is the instance's answer to a delivery.
type webhookReply struct {
	Status  int
	Outcome string `json:"outcome"`
	Error   string `json:"error"`
}

// deliver signs payload with the endpoint's secret now, as Stripe does, and posts it.
func (a *testApp) deliver(payload []byte) webhookReply {
	a.t.Helper()
	return a.deliverSigned(payload, webhookSecret, time.Now())
}

// deliverSigned signs payload with secret at time at (stripe-go's test signing helper)
// and posts it to the instance's real HTTP server.
func (a *testApp) deliverSigned(payload []byte, secret string, at time.Time) webhookReply {
	a.t.Helper()
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: at})
	return a.postWebhook(payload, signed.Header)
}

// postWebhook posts body to /webhooks/stripe with the Stripe-Signature header sig.
func (a *testApp) postWebhook(body []byte, sig string) webhookReply {
	a.t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, a.srv.URL+"/webhooks/stripe", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if sig != "" {
		req.Header.Set("Stripe-Signature", sig)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := webhookReply{Status: resp.StatusCode}
	_ = json.Unmarshal(raw, &out)
	return out
}

func (r webhookReply) want(t testing.TB, status int, outcome string) {
	t.Helper()
	if r.Status != status || r.Outcome != outcome {
		t.Fatalf("webhook answered %d %+v, want %d %q", r.Status, r, status, outcome)
	}
}

const orderPaymentQ = `query($id: ID!) { order(id: $id) { status refundRequired payment { provider status reference refundStatus } } }`

// orderState is an order's status and payment as its owner reads them.
type orderState struct {
	Status         string
	RefundRequired bool
	Payment        *struct {
		Provider, Status, Reference string
		RefundStatus                *string
	}
}

func (s orderState) refund() string {
	if s.Payment == nil || s.Payment.RefundStatus == nil {
		return ""
	}
	return *s.Payment.RefundStatus
}

func (a *testApp) orderState(token, id string) orderState {
	a.t.Helper()
	var out struct{ Order orderState }
	a.must(token, orderPaymentQ, map[string]any{"id": id}, &out)
	return out.Order
}

const startPaymentQ = `mutation($id: ID!) { startPayment(orderId: $id) { provider clientSecret amountCents currency expiresAt } }`

type sessionOut struct {
	Provider     string
	ClientSecret *string
	AmountCents  int
	Currency     string
	ExpiresAt    *string
}

func (a *testApp) startPayment(token, id string) sessionOut {
	a.t.Helper()
	var out struct{ StartPayment sessionOut }
	a.must(token, startPaymentQ, map[string]any{"id": id}, &out)
	return out.StartPayment
}

// eventsRecorded counts the provider events recorded as applied.
func (a *testApp) eventsRecorded(eventID string) int {
	a.t.Helper()
	q := a.DB.PaymentEvent.Query()
	if eventID != "" {
		q = q.Where(paymentevent.EventID(eventID))
	}
	n, err := q.Count(context.Background())
	if err != nil {
		a.t.Fatal(err)
	}
	return n
}

// paidByStripe holds seats for token and pays them through Stripe: startPayment, then the
// signed payment_intent.succeeded. It returns the order and its PaymentIntent id.
func (a *testApp) paidByStripe(token, show string, seats []string, key string) (orderOut, string) {
	a.t.Helper()
	o := a.hold(token, show, seats, key)
	a.startPayment(token, o.ID)
	pi := a.orderState(token, o.ID).Payment.Reference
	ev, _ := stripeEvent("payment_intent.succeeded", intent(pi, o.ID, o.AmountCents, "usd"))
	a.deliver(ev).want(a.t, http.StatusOK, "applied")
	if st := a.orderState(token, o.ID).Status; st != "PAID" {
		a.t.Fatalf("order %s is %s after its payment, want PAID", o.ID, st)
	}
	return o, pi
}

// waitExpired waits until the expiry worker has expired the order and released its seat,
// and fails the test if that takes more than 5 s.
func (a *testApp) waitExpired(token, orderID, show, seat string) {
	a.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		m, _ := a.seatStatuses(show)
		st := a.orderState(token, orderID).Status
		if st == "EXPIRED" && m[seat] == "AVAILABLE" {
			return
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("order %s is %s and its seat %s after 5 s, want EXPIRED and AVAILABLE", orderID, st, m[seat])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// idOf is the database id of an object the API gave the id s.
func idOf(t testing.TB, s string) int {
	t.Helper()
	_, ids, err := nodeid.Decode(s)
	if err != nil || len(ids) != 1 {
		t.Fatalf("%q is not an API id: %v", s, err)
	}
	return ids[0]
}
