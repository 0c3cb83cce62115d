package app

import (
	"strings"
	"testing"

	"seatflow/internal/tooling/testenv"
)

func TestPaymentProviderConfig(t *testing.T) {
	for _, k := range []string{"PAYMENT_PROVIDER", "STRIPE_API_KEY", "STRIPE_WEBHOOK_SECRET", "MYSQL_DSN", "REDIS_URL", "REDIS_CLUSTER", "JWT_SECRET"} {
		t.Setenv("SEATFLOW_"+k, "")
	}
	real := []string{"-mysql-dsn", "root@tcp(127.0.0.1:3306)/x", "-redis-url", "redis://127.0.0.1:6379/0", "-jwt-secret", "0123456789abcdef",
		"-ticket-key-secret", "0123456789abcdef0123456789abcdef"}
	for _, c := range []struct {
		name  string
		flags []string
		err   string // "" = valid
	}{
		{"RealModeWithoutProviderRefusesToStart", real, "set SEATFLOW_PAYMENT_PROVIDER outside embedded mode"},
		{"UnknownProvider", append(real[:8:8], "-payment-provider", "paypal"), `"paypal" for flag -payment-provider (SEATFLOW_PAYMENT_PROVIDER): want stripe or test`},
		{"StripeWithoutKeys", append(real[:8:8], "-payment-provider", "stripe"), "SEATFLOW_STRIPE_API_KEY and SEATFLOW_STRIPE_WEBHOOK_SECRET"},
		{"StripeWithoutWebhookSecret", append(real[:8:8], "-payment-provider", "stripe", "-stripe-api-key", "sk_test_1"), "SEATFLOW_STRIPE_WEBHOOK_SECRET"},
		{"Stripe", append(real[:8:8], "-payment-provider", "stripe", "-stripe-api-key", "sk_test_1", "-stripe-webhook-secret", "whsec_1"), ""},
		{"TestInRealMode", append(real[:8:8], "-payment-provider", "test"), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := ParseConfig("test", c.flags)
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("err = %v, want none", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("err = %v, want one saying %q", err, c.err)
			}
		})
	}
	t.Run("EmbeddedDefaultsToTest", func(t *testing.T) {
		cfg, _, err := ParseConfig("test", nil)
		if err != nil || cfg.PaymentProvider != "test" {
			t.Fatalf("embedded provider = %q (%v), want test", cfg.PaymentProvider, err)
		}
	})
}

// TestTestProviderWarnsInRealMode: a real-mode server taking no real payments says so loudly
// at start; one on Stripe does not.
func TestTestProviderWarnsInRealMode(t *testing.T) {
	const warning = "PAYMENTS ARE NOT REAL"
	if a := newTestApp(t); !strings.Contains(a.logBuf.String(), warning) {
		t.Fatalf("log of a real-mode test-provider instance: %q, want the warning", a.logBuf.String())
	}
	if a := newTestApp(t, stripeFlags(testenv.StripeMockURL())...); strings.Contains(a.logBuf.String(), warning) {
		t.Fatalf("a stripe instance warns: %q", a.logBuf.String())
	}
}
