package payments_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"seatflow"
	"seatflow/internal/payments"
	"seatflow/internal/tooling/testenv"
)

// sent is a request the provider sent to Stripe.
type sent = testenv.StripeRequest

// recordingStripe is stripe-mock behind a proxy that records what reaches it.
func recordingStripe(t *testing.T) (string, func() []sent) { return testenv.RecordingStripe(t) }

func newStripe(t *testing.T, base, key string) *payments.Stripe {
	t.Helper()
	s, err := payments.NewStripe(payments.StripeConfig{APIKey: key, WebhookSecret: "whsec_x", APIBase: base})
	if err != nil {
		t.Fatal(err)
	}
	// The provider's client (and the recording proxy) keep their connections in the
	// default transport: close them with the test, so they do not outlive it (TestMain).
	t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)
	return s
}

func only(t *testing.T, reqs []sent) sent {
	t.Helper()
	if len(reqs) != 1 {
		t.Fatalf("%d requests reached Stripe, want 1: %+v", len(reqs), reqs)
	}
	return reqs[0]
}

func TestStripeStartPaymentTagsTheIntentWithTheOrder(t *testing.T) {
	base, requests := recordingStripe(t)
	s := newStripe(t, base, testenv.StripeMockKey)
	in, err := s.StartPayment(context.Background(), payments.IntentRequest{OrderID: "42", AmountCents: 2500, Currency: "USD",
		IdempotencyKey: "seatflow-order-42-1-payment"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(in.Reference, "pi_") || !strings.Contains(in.ClientSecret, "_secret_") {
		t.Fatalf("intent = %+v, want a PaymentIntent id and its client secret", in)
	}
	r := only(t, requests())
	want := map[string]string{"amount": "2500", "currency": "usd", "metadata[order_id]": "42", "automatic_payment_methods[enabled]": "true"}
	for k, v := range want {
		if got := r.Form.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if r.Method != http.MethodPost || r.Path != "/v1/payment_intents" || r.Header.Get("Idempotency-Key") != "seatflow-order-42-1-payment" {
		t.Fatalf("request = %s %s, Idempotency-Key %q", r.Method, r.Path, r.Header.Get("Idempotency-Key"))
	}
}

func TestStripeResumePaymentReadsTheIntent(t *testing.T) {
	base, requests := recordingStripe(t)
	in, err := newStripe(t, base, testenv.StripeMockKey).ResumePayment(context.Background(), "pi_123")
	if err != nil {
		t.Fatal(err)
	}
	if in.Reference != "pi_123" || in.ClientSecret == "" {
		t.Fatalf("intent = %+v, want pi_123 with its client secret", in)
	}
	if r := only(t, requests()); r.Method != http.MethodGet || r.Path != "/v1/payment_intents/pi_123" {
		t.Fatalf("request = %s %s", r.Method, r.Path)
	}
}

func TestStripeRefundsTheWholeIntent(t *testing.T) {
	base, requests := recordingStripe(t)
	rf, err := newStripe(t, base, testenv.StripeMockKey).Refund(context.Background(), payments.RefundRequest{
		Reference: "pi_123", OrderID: "42", IdempotencyKey: "seatflow-order-42-1-refund-0", Reason: "refunded by staff"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rf.Reference, "re_") || rf.Status != seatflow.RefundSucceeded {
		t.Fatalf("refund = %+v, want a succeeded re_…", rf)
	}
	r := only(t, requests())
	if r.Path != "/v1/refunds" || r.Form.Get("payment_intent") != "pi_123" || r.Form.Has("amount") ||
		r.Form.Get("metadata[order_id]") != "42" || r.Header.Get("Idempotency-Key") != "seatflow-order-42-1-refund-0" {
		t.Fatalf("request = %s %v, Idempotency-Key %q", r.Path, r.Form, r.Header.Get("Idempotency-Key"))
	}
}

// TestStripeRefundsPartOfTheIntent: a refund of some seats asks Stripe for exactly their
// amount and names SeatFlow's refund in the metadata, for the events that follow it.
func TestStripeRefundsPartOfTheIntent(t *testing.T) {
	base, requests := recordingStripe(t)
	rf, err := newStripe(t, base, testenv.StripeMockKey).Refund(context.Background(), payments.RefundRequest{
		Reference: "pi_123", OrderID: "42", IdempotencyKey: "seatflow-order-42-1-seats-7-refund-0", Reason: "seats refunded by staff",
		AmountCents: 1250, SeatRefundID: 7})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rf.Reference, "re_") || rf.Status != seatflow.RefundSucceeded {
		t.Fatalf("refund = %+v, want a succeeded re_…", rf)
	}
	r := only(t, requests())
	if r.Path != "/v1/refunds" || r.Form.Get("payment_intent") != "pi_123" || r.Form.Get("amount") != "1250" ||
		r.Form.Get("metadata[seat_refund]") != "7" || r.Header.Get("Idempotency-Key") != "seatflow-order-42-1-seats-7-refund-0" {
		t.Fatalf("request = %s %v, Idempotency-Key %q", r.Path, r.Form, r.Header.Get("Idempotency-Key"))
	}
}

func TestStripeErrorsAreClassified(t *testing.T) {
	ctx := context.Background()
	req := payments.IntentRequest{OrderID: "1", AmountCents: 1000, Currency: "USD", IdempotencyKey: testenv.RandomName("k")}
	t.Run("UnreachableIsUnavailable", func(t *testing.T) {
		_, err := newStripe(t, "http://127.0.0.1:1", testenv.StripeMockKey).StartPayment(ctx, req)
		if code := seatflow.ErrorCode(err); code != seatflow.EUNAVAILABLE {
			t.Fatalf("code = %q (%v), want SERVICE_UNAVAILABLE", code, err)
		}
	})
	t.Run("BadKeyIsInternal", func(t *testing.T) {
		_, err := newStripe(t, testenv.StripeMock(t), "not-a-key").StartPayment(ctx, req)
		if code := seatflow.ErrorCode(err); err == nil || code != seatflow.EINTERNAL {
			t.Fatalf("code = %q (%v), want INTERNAL: a misconfiguration, not the customer's", code, err)
		}
	})
}

func TestTestProvider(t *testing.T) {
	ctx := context.Background()
	p, err := payments.New(payments.Config{Provider: seatflow.ProviderTest})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := p.StartPayment(ctx, payments.IntentRequest{IdempotencyKey: "k1"})
	b, _ := p.StartPayment(ctx, payments.IntentRequest{IdempotencyKey: "k1"})
	c, _ := p.StartPayment(ctx, payments.IntentRequest{IdempotencyKey: "k2"})
	if a.Reference != b.Reference || a.Reference == c.Reference || a.ClientSecret != "" || !p.ConfirmedByClient() {
		t.Fatalf("test provider: %+v %+v %+v", a, b, c)
	}
	if rf, err := p.Refund(ctx, payments.RefundRequest{Reference: a.Reference, IdempotencyKey: "r"}); err != nil || rf.Status != seatflow.RefundSucceeded {
		t.Fatalf("refund = %+v, %v", rf, err)
	}
}

func TestNewRefusesWhatItCannotRun(t *testing.T) {
	if _, err := payments.New(payments.Config{Provider: "paypal"}); !errors.Is(err, payments.ErrNoProvider) {
		t.Fatalf("paypal: %v, want ErrNoProvider", err)
	}
	if _, err := payments.New(payments.Config{Provider: seatflow.ProviderStripe}); err == nil {
		t.Fatal("stripe without an API key was accepted")
	}
}
