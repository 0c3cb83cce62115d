// Package payments holds SeatFlow's payment providers behind one Provider interface, one
// file per provider (stripe.go, test.go), and the Stripe webhook endpoint (webhook.go),
// which verifies each delivery and hands the event to booking. It never changes an order,
// a payment record or a seat: package booking decides what a payment means.
package payments

import (
	"context"
	"errors"
	"fmt"

	"seatflow"
)

// Provider is a payment provider: it starts payments and sends refunds. Its confirmations
// come back as seatflow.PaymentEvents (the webhook), except with the test provider, whose
// confirmation is the customer's own payOrder.
type Provider interface {
	// Name is the provider's name (seatflow.ProviderStripe or seatflow.ProviderTest),
	// stored with every payment.
	Name() string
	// ConfirmedByClient reports whether the customer's payOrder confirms a payment: true
	// only for the test provider, which takes no money.
	ConfirmedByClient() bool
	// StartPayment creates the payment of an order. The same IdempotencyKey returns the
	// payment the first call created.
	StartPayment(ctx context.Context, req IntentRequest) (*Intent, error)
	// ResumePayment returns a payment started before, by its reference, for a client that
	// asks for its session again.
	ResumePayment(ctx context.Context, reference string) (*Intent, error)
	// Refund returns a payment, whole or in part (RefundRequest.AmountCents). The same IdempotencyKey returns the refund
	// the first call created; a refund the provider reported failed needs a new key.
	Refund(ctx context.Context, req RefundRequest) (*Refund, error)
}

// IntentRequest asks a provider to start the payment of an order.
type IntentRequest struct {
	// OrderID is the order's id exactly as the API shows it; the provider keeps it with the
	// payment (Stripe: metadata.order_id) and its events carry it back.
	OrderID        string
	AmountCents    int
	Currency       string
	IdempotencyKey string
}

// Intent is a payment started with a provider.
type Intent struct {
	// Reference is the provider's id of the payment (Stripe: the PaymentIntent id).
	Reference string
	// ClientSecret lets the customer's browser complete the payment; "" when the provider
	// has none (test).
	ClientSecret string
}

// RefundRequest asks a provider to return a payment: the whole of it, or AmountCents of it.
type RefundRequest struct {
	// Reference is the payment's id with the provider.
	Reference      string
	OrderID        string
	IdempotencyKey string
	// Reason is kept with the refund (Stripe: metadata.reason), for people reading it there.
	Reason string
	// AmountCents is how much to return, in the payment's currency; 0 returns all of the
	// payment not yet returned.
	AmountCents int
	// SeatRefundID names SeatFlow's refund of some seats (refundSeats) the request is for,
	// 0 for a payment's whole refund; the provider keeps it (Stripe: metadata.seat_refund)
	// and its events about the refund carry it back (seatflow.PaymentEvent.SeatRefundID).
	SeatRefundID int
}

// Refund is a refund as the provider answered it.
type Refund struct {
	Reference string
	Status    seatflow.RefundStatus
}

// Outcome is what applying a verified provider event did.
type Outcome string

// Outcomes of an event.
const (
	// Applied: the event was recorded with its effect (which may be no change at all).
	Applied Outcome = "applied"
	// Replayed: the event was applied before; nothing changed.
	Replayed Outcome = "replayed"
	// Ignored: the event is not about SeatFlow's payments; nothing was recorded.
	Ignored Outcome = "ignored"
)

// Events applies verified provider events (package booking implements it).
type Events interface {
	// ApplyPaymentEvent applies an event once. An error with code NOT_FOUND means the
	// event's order is not there (yet): the provider must deliver it again later.
	ApplyPaymentEvent(ctx context.Context, ev seatflow.PaymentEvent) (Outcome, error)
}

// ErrNoProvider is returned by New for a provider name it does not know.
var ErrNoProvider = errors.New("unknown payment provider")

// Config selects and configures the provider (SEATFLOW_PAYMENT_PROVIDER, SEATFLOW_STRIPE_*).
type Config struct {
	Provider string
	Stripe   StripeConfig
}

// New returns the configured provider.
func New(cfg Config) (Provider, error) {
	switch cfg.Provider {
	case seatflow.ProviderStripe:
		return NewStripe(cfg.Stripe)
	case seatflow.ProviderTest:
		return Test{}, nil
	}
	return nil, fmt.Errorf("%w %q (want %s or %s)", ErrNoProvider, cfg.Provider, seatflow.ProviderStripe, seatflow.ProviderTest)
}
