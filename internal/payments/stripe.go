package payments

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"

	"seatflow"
	"seatflow/internal/telemetry"
)

// StripeConfig are the Stripe settings.
type StripeConfig struct {
	// APIKey is the secret key (sk_test_… or sk_live_…).
	APIKey string
	// WebhookSecret is the signing secret of the webhook endpoint (whsec_…).
	WebhookSecret string
	// APIBase replaces https://api.stripe.com (stripe-mock in tests); "" = Stripe itself.
	APIBase string
}

// stripeTimeout bounds one call to Stripe, retries included: a request waiting on Stripe
// holds a customer (or the reconciler) that long.
const stripeTimeout = 20 * time.Second

// Stripe is the Stripe provider: PaymentIntents for payments, Refunds for refunds, and
// webhooks (webhook.go) for their confirmations.
type Stripe struct {
	client *stripe.Client
}

var _ Provider = (*Stripe)(nil)

// NewStripe returns the Stripe provider; it needs the API key.
func NewStripe(cfg StripeConfig) (*Stripe, error) {
	if cfg.APIKey == "" {
		return nil, errors.New("the stripe provider needs an API key")
	}
	bc := &stripe.BackendConfig{
		HTTPClient: &http.Client{Timeout: stripeTimeout, Transport: telemetry.Transport(nil)},
		// Failures are returned and logged by the caller with their context.
		LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull},
	}
	if cfg.APIBase != "" {
		bc.URL = stripe.String(cfg.APIBase)
	}
	return &Stripe{client: stripe.NewClient(cfg.APIKey, stripe.WithBackends(stripe.NewBackendsWithConfig(bc)))}, nil
}

// Name is "stripe".
func (*Stripe) Name() string { return seatflow.ProviderStripe }

// ConfirmedByClient is false: only Stripe's signed webhook confirms a payment.
func (*Stripe) ConfirmedByClient() bool { return false }

// StartPayment creates a PaymentIntent for the order's amount and currency, with the order
// id in metadata.order_id (the webhook finds the order by it). Stripe answers a repeated
// idempotency key with the first PaymentIntent.
func (s *Stripe) StartPayment(ctx context.Context, req IntentRequest) (*Intent, error) {
	params := &stripe.PaymentIntentCreateParams{
		Amount:                  stripe.Int64(int64(req.AmountCents)),
		Currency:                stripe.String(strings.ToLower(req.Currency)),
		Metadata:                map[string]string{"order_id": req.OrderID},
		AutomaticPaymentMethods: &stripe.PaymentIntentCreateAutomaticPaymentMethodsParams{Enabled: stripe.Bool(true)},
	}
	params.SetIdempotencyKey(req.IdempotencyKey)
	pi, err := s.client.V1PaymentIntents.Create(ctx, params)
	if err != nil {
		return nil, stripeError("create payment intent", err)
	}
	return &Intent{Reference: pi.ID, ClientSecret: pi.ClientSecret}, nil
}

// ResumePayment reads a PaymentIntent again for its client secret (which SeatFlow does not
// store: it is the customer's to complete the payment with).
func (s *Stripe) ResumePayment(ctx context.Context, reference string) (*Intent, error) {
	pi, err := s.client.V1PaymentIntents.Retrieve(ctx, reference, nil)
	if err != nil {
		return nil, stripeError("retrieve payment intent", err)
	}
	return &Intent{Reference: pi.ID, ClientSecret: pi.ClientSecret}, nil
}

// Refund refunds a PaymentIntent: what is left of it, or req.AmountCents of it (a partial
// refund, whose metadata.seat_refund names SeatFlow's refund of some seats). A charge Stripe
// reports as refunded already (by hand in the dashboard, say) counts as a succeeded refund:
// the money is back.
func (s *Stripe) Refund(ctx context.Context, req RefundRequest) (*Refund, error) {
	params := &stripe.RefundCreateParams{PaymentIntent: stripe.String(req.Reference),
		Metadata: map[string]string{"order_id": req.OrderID, "reason": req.Reason}}
	if req.AmountCents > 0 {
		params.Amount = stripe.Int64(int64(req.AmountCents))
	}
	if req.SeatRefundID > 0 {
		params.Metadata[seatRefundKey] = strconv.Itoa(req.SeatRefundID)
	}
	params.SetIdempotencyKey(req.IdempotencyKey)
	r, err := s.client.V1Refunds.Create(ctx, params)
	var se *stripe.Error
	if errors.As(err, &se) && se.Code == stripe.ErrorCodeChargeAlreadyRefunded {
		return &Refund{Status: seatflow.RefundSucceeded}, nil
	} else if err != nil {
		return nil, stripeError("create refund", err)
	}
	return &Refund{Reference: r.ID, Status: stripeRefundStatus(r.Status)}, nil
}

// seatRefundKey is the refund metadata key that names SeatFlow's refund of some seats.
const seatRefundKey = "seat_refund"

// stripeRefundStatus maps a Stripe refund status to SeatFlow's: anything that is not yet
// final is PENDING, and a canceled refund has returned nothing, like a failed one.
func stripeRefundStatus(s stripe.RefundStatus) seatflow.RefundStatus {
	switch s {
	case stripe.RefundStatusSucceeded:
		return seatflow.RefundSucceeded
	case stripe.RefundStatusFailed, stripe.RefundStatusCanceled:
		return seatflow.RefundFailed
	}
	return seatflow.RefundPending
}

// stripeError classifies a failed Stripe call: Stripe unreachable, overloaded or failing
// is SERVICE_UNAVAILABLE (a retry may succeed), an amount Stripe refuses is BAD_USER_INPUT,
// anything else (a bad key, a bad request) is the server's fault and stays INTERNAL.
func stripeError(op string, err error) error {
	var se *stripe.Error
	if !errors.As(err, &se) {
		return seatflow.Unavailable("stripe: "+op, err) // no answer: network, timeout
	}
	switch {
	case se.HTTPStatusCode == http.StatusTooManyRequests || se.HTTPStatusCode >= 500 || se.Type == stripe.ErrorTypeAPI:
		return seatflow.Unavailable("stripe: "+op, err)
	case se.Code == stripe.ErrorCodeAmountTooSmall || se.Code == stripe.ErrorCodeAmountTooLarge:
		return fmt.Errorf("stripe: %s: %w: %w", op,
			seatflow.Errorf(seatflow.EINVALID, "the order's amount is outside what the payment provider accepts"), err)
	}
	return fmt.Errorf("stripe: %s: %w", op, err)
}
