package payments

import (
	"context"

	"seatflow"
)

// Test is the test provider: it moves no money. The customer's own payOrder confirms a
// payment and a refund succeeds at once. It is what embedded mode, the demo page and the
// tests pay with; a real-mode server running it logs a warning at start.
type Test struct{}

var _ Provider = Test{}

// Name is "test".
func (Test) Name() string { return seatflow.ProviderTest }

// ConfirmedByClient is true: payOrder is the confirmation.
func (Test) ConfirmedByClient() bool { return true }

// StartPayment returns a payment named after the idempotency key, so the same key gives
// the same payment, as with a real provider. It has no client secret: pay with payOrder.
func (Test) StartPayment(_ context.Context, req IntentRequest) (*Intent, error) {
	return &Intent{Reference: "test_" + req.IdempotencyKey}, nil
}

// ResumePayment returns the payment as it was started.
func (Test) ResumePayment(_ context.Context, reference string) (*Intent, error) {
	return &Intent{Reference: reference}, nil
}

// Refund succeeds at once: no money was taken.
func (Test) Refund(_ context.Context, req RefundRequest) (*Refund, error) {
	return &Refund{Reference: "test_refund_" + req.IdempotencyKey, Status: seatflow.RefundSucceeded}, nil
}
