package payments_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"seatflow"
	"seatflow/internal/payments"
	"seatflow/internal/tooling/testenv"
)

// sent is a request the provider sent to Stripe.
type sent struct {
	method, path string
	form         url.Values
	header       http.Header
}

// recordingStripe is stripe-mock behind a proxy that records what reaches it, so a test
// can see what the provider asked Stripe for (stripe-mock itself echoes no metadata).
func recordingStripe(t *testing.T) (string, func() []sent) {
	target, err := url.Parse(testenv.StripeMock(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	var reqs []sent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		form, _ := url.ParseQuery(string(body))
		mu.Lock()
		reqs = append(reqs, sent{r.Method, r.URL.Path, form, r.Header.Clone()})
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []sent { mu.Lock(); defer mu.Unlock(); return append([]sent(nil), reqs...) }
}

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
		if got := r.form.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if r.method != http.MethodPost || r.path != "/v1/payment_intents" || r.header.Get("Idempotency-Key") != "seatflow-order-42-1-payment" {
		t.Fatalf("request = %s %s, Idempotency-Key %q", r.method, r.path, r.header.Get("Idempotency-Key"))
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
	if r := only(t, requests()); r.method != http.MethodGet || r.path != "/v1/payment_intents/pi_123" {
		t.Fatalf("request = %s %s", r.method, r.path)
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
	if r.path != "/v1/refunds" || r.form.Get("payment_intent") != "pi_123" || r.form.Has("amount") ||
		r.form.Get("metadata[order_id]") != "42" || r.header.Get("Idempotency-Key") != "seatflow-order-42-1-refund-0" {
		t.Fatalf("request = %s %v, Idempotency-Key %q", r.path, r.form, r.header.Get("Idempotency-Key"))
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
