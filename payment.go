package seatflow

import "time"

// Payment providers (SEATFLOW_PAYMENT_PROVIDER): ProviderStripe takes real payments and
// confirms them server to server; ProviderTest confirms whatever the client's payOrder says,
// for the demo and the tests only.
const (
	ProviderStripe = "stripe"
	ProviderTest   = "test"
)

// PaymentStatus is where an order's payment is with its provider: PENDING once a session is
// started, then SUCCEEDED when the provider confirms the money was taken, FAILED (an attempt
// was declined; the customer may try again), CANCELED, or MISMATCH when the provider
// confirmed an amount or currency other than the order's (the order is not paid and the
// money goes back).
type PaymentStatus string

// Payment statuses.
const (
	PaymentPending   PaymentStatus = "PENDING"
	PaymentSucceeded PaymentStatus = "SUCCEEDED"
	PaymentFailed    PaymentStatus = "FAILED"
	PaymentCanceled  PaymentStatus = "CANCELED"
	PaymentMismatch  PaymentStatus = "MISMATCH"
)

// Values lists every payment status (ent builds its enum column from it).
func (PaymentStatus) Values() []string {
	return []string{string(PaymentPending), string(PaymentSucceeded), string(PaymentFailed),
		string(PaymentCanceled), string(PaymentMismatch)}
}

// Settled reports whether money was taken (SUCCEEDED or MISMATCH): a later failure or
// cancellation of the same payment must not overwrite it, as provider events can arrive
// out of order.
func (s PaymentStatus) Settled() bool { return s == PaymentSucceeded || s == PaymentMismatch }

// RefundStatus is where the refund of a payment is: REQUIRED (decided, not yet accepted by
// the provider), PENDING (accepted, not yet confirmed), SUCCEEDED, or FAILED (the provider
// could not return the money; the reconciler sends it again).
type RefundStatus string

// Refund statuses.
const (
	RefundRequired  RefundStatus = "REQUIRED"
	RefundPending   RefundStatus = "PENDING"
	RefundSucceeded RefundStatus = "SUCCEEDED"
	RefundFailed    RefundStatus = "FAILED"
)

// Values lists every refund status (ent builds its enum column from it).
func (RefundStatus) Values() []string {
	return []string{string(RefundRequired), string(RefundPending), string(RefundSucceeded), string(RefundFailed)}
}

// MaxRefundAttempts is how many refunds of one payment the provider may report failed
// before SeatFlow stops sending new ones: the rest is a person's (the reconciler keeps
// reporting it as outstanding).
const MaxRefundAttempts = 5

// Due reports whether a refund in status s still has to be sent to the provider.
func (s RefundStatus) Due() bool { return s == RefundRequired || s == RefundFailed }

// ToSend reports whether a refund in status s, after attempts the provider reported
// failed, still has to be sent: due, and failed fewer than MaxRefundAttempts times (after
// that it is left to a person).
func (s RefundStatus) ToSend(attempts int) bool { return s.Due() && attempts < MaxRefundAttempts }

// Payment is one payment of an order as its provider reported it, with its refund if any.
// An order keeps every payment it receives: the one that pays it, and any other (another
// amount than the order's, a second payment of an order already paid, one that arrived
// after the order ended), which is refunded.
type Payment struct {
	OrderID  int           `json:"-"`
	Provider string        `json:"provider"`
	Status   PaymentStatus `json:"status"`
	// Reference is the provider's id of the payment (Stripe: the PaymentIntent id; test:
	// the client's paymentRef).
	Reference    string        `json:"reference"`
	AmountCents  int           `json:"amountCents"`
	Currency     string        `json:"currency"`
	RefundStatus *RefundStatus `json:"refundStatus"`
	// CreatedAt is when SeatFlow first recorded the payment (started, or received).
	CreatedAt time.Time `json:"createdAt"`
}

// PaymentSession is what a client needs to complete an order's payment with the provider.
type PaymentSession struct {
	Provider string `json:"provider"`
	// ClientSecret completes a Stripe PaymentIntent in the browser (Stripe.js); nil with
	// the test provider, where the client calls payOrder instead.
	ClientSecret *string `json:"clientSecret"`
	AmountCents  int     `json:"amountCents"`
	Currency     string  `json:"currency"`
	// ExpiresAt is the end of the order's hold: starting a payment does not extend it.
	ExpiresAt *time.Time `json:"expiresAt"`
}

// PaymentEventKind is what a provider's event reports, in the provider's neutral terms.
type PaymentEventKind string

// Payment event kinds.
const (
	EventPaymentSucceeded PaymentEventKind = "payment.succeeded"
	EventPaymentFailed    PaymentEventKind = "payment.failed"
	EventPaymentCanceled  PaymentEventKind = "payment.canceled"
	// EventRefundUpdated reports a refund's status (RefundStatus of the event).
	EventRefundUpdated PaymentEventKind = "refund.updated"
)

// PaymentEvent is one verified event of a payment provider. Each ID is applied once.
type PaymentEvent struct {
	// ID is the provider's event id; Type its own name for the event (for the record).
	ID       string
	Type     string
	Provider string
	Kind     PaymentEventKind
	// OrderID is the order the payment was started for (payment events only: Stripe's
	// metadata.order_id); 0 for refund events, found by Reference.
	OrderID int
	// Reference is the provider's payment id (Stripe: the PaymentIntent id).
	Reference string
	// AmountCents and Currency (upper case) are what the provider received.
	AmountCents int
	Currency    string
	// RefundReference and RefundStatus describe the refund of a refund event.
	RefundReference string
	RefundStatus    RefundStatus
	// SeatRefundID is SeatFlow's refund of some seats (refundSeats) a refund event is about,
	// as the provider kept it; 0 for a payment's whole refund.
	SeatRefundID int
	// Reason is the provider's explanation of a failure, for the log.
	Reason string
}
