package testenv

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"
)

// StripeMockKey is an API key stripe-mock accepts (any test-mode-looking key).
const StripeMockKey = "sk_test_123"

// StripeMockURL is the base URL of the test stripe-mock (Stripe's API mock, started by
// `make services`): SEATFLOW_TEST_STRIPE_URL, default http://127.0.0.1:12111.
func StripeMockURL() string { return env("SEATFLOW_TEST_STRIPE_URL", "http://127.0.0.1:12111") }

// StripeMock returns the base URL of the test stripe-mock after checking that it answers,
// so a test that needs it fails with what to do rather than with a provider error.
func StripeMock(tb testing.TB) string {
	tb.Helper()
	url := StripeMockURL()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/v1/charges", nil)
	if err != nil {
		tb.Fatalf("SEATFLOW_TEST_STRIPE_URL %q: %v", url, err)
	}
	req.Header.Set("Authorization", "Bearer "+StripeMockKey)
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("GET /v1/charges answered %s", resp.Status)
		}
	}
	if err != nil {
		tb.Fatalf("stripe-mock does not answer at %s (is it running? `make services` starts it): %v", url, err)
	}
	return url
}

// StripeRequest is a request that reached Stripe (stripe-mock) through RecordingStripe.
type StripeRequest struct {
	Method, Path string
	Form         url.Values
	Header       http.Header
}

// RecordingStripe is stripe-mock behind a proxy that records what reaches it, so a test can
// see what SeatFlow asked Stripe for (stripe-mock echoes no metadata and keeps no state):
// its base URL, and the requests so far.
func RecordingStripe(tb testing.TB) (string, func() []StripeRequest) {
	tb.Helper()
	target, err := url.Parse(StripeMock(tb))
	if err != nil {
		tb.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	var reqs []StripeRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		form, _ := url.ParseQuery(string(body))
		mu.Lock()
		reqs = append(reqs, StripeRequest{r.Method, r.URL.Path, form, r.Header.Clone()})
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	tb.Cleanup(srv.Close)
	return srv.URL, func() []StripeRequest { mu.Lock(); defer mu.Unlock(); return append([]StripeRequest(nil), reqs...) }
}
