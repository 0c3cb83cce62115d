package payments

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"seatflow"
	"seatflow/internal/nodeid"
)

// StripeWebhook is the endpoint Stripe posts its events to (POST /webhooks/stripe). A
// delivery is applied only when its Stripe-Signature header is valid for Secret and dated
// within Tolerance of now, before or after; anything else is refused with 400 before
// anything changes.
//
// Answers: 200 when the event was applied, replayed or ignored; 400 for a delivery that
// is not a valid signed event (Stripe never sends one: retrying cannot help); 503 when the
// event's order is not there yet or a store is down, and 500 for anything else: Stripe
// delivers those again later, for up to three days.
type StripeWebhook struct {
	Secret string
	Events Events
	// Log receives every refused or failed delivery; slog.Default when nil.
	Log *slog.Logger
	// Tolerance is how far a signature's timestamp may be from now, in the past or the
	// future; webhook.DefaultTolerance (5 minutes) when zero. It bounds how long a captured
	// delivery can be replayed.
	Tolerance time.Duration
	// Now is the clock signatures are dated against; time.Now when nil.
	Now seatflow.ClockFunc
}

// webhookAnswer is the body of every answer, for whoever reads Stripe's delivery log.
type webhookAnswer struct {
	Outcome Outcome `json:"outcome,omitempty"`
	Error   string  `json:"error,omitempty"`
}

// ServeHTTP applies one delivery and answers as StripeWebhook says.
func (h *StripeWebhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	log := h.Log
	if log == nil {
		log = slog.Default()
	}
	payload, err := io.ReadAll(r.Body)
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		h.answer(w, http.StatusRequestEntityTooLarge, webhookAnswer{Error: "the body is too large"})
		return
	} else if err != nil {
		h.answer(w, http.StatusBadRequest, webhookAnswer{Error: "the body could not be read"})
		return
	}
	// The event's API version is not checked: only fields that are the same in every
	// version are read (stripeEvent), so an endpoint on another version keeps working.
	ev, err := webhook.ConstructEventWithOptions(payload, r.Header.Get("Stripe-Signature"), h.Secret,
		webhook.ConstructEventOptions{Tolerance: h.Tolerance, IgnoreAPIVersionMismatch: true})
	if err == nil {
		err = h.notAhead(r.Header.Get("Stripe-Signature"))
	}
	if err != nil {
		log.Warn("stripe webhook: refused a delivery", "err", err)
		h.answer(w, http.StatusBadRequest, webhookAnswer{Error: refusal(err)})
		return
	}
	pe, ours, err := stripeEvent(ev)
	if err != nil {
		log.Warn("stripe webhook: malformed event", "event", ev.ID, "type", ev.Type, "err", err)
		h.answer(w, http.StatusBadRequest, webhookAnswer{Error: "malformed event: " + err.Error()})
		return
	}
	if !ours {
		h.answer(w, http.StatusOK, webhookAnswer{Outcome: Ignored})
		return
	}
	out, err := h.Events.ApplyPaymentEvent(r.Context(), pe)
	switch code := seatflow.ErrorCode(err); code {
	case "":
		h.answer(w, http.StatusOK, webhookAnswer{Outcome: out})
	case seatflow.ENOTFOUND, seatflow.EUNAVAILABLE:
		log.Warn("stripe webhook: not applied, Stripe will deliver it again", "event", pe.ID, "type", pe.Type, "order", pe.OrderID, "err", err)
		h.answer(w, http.StatusServiceUnavailable, webhookAnswer{Error: seatflow.ErrorMessage(err)})
	default:
		log.Error("stripe webhook: event failed", "event", pe.ID, "type", pe.Type, "order", pe.OrderID, "err", err)
		h.answer(w, http.StatusInternalServerError, webhookAnswer{Error: seatflow.ErrorMessage(err)})
	}
}

func (h *StripeWebhook) answer(w http.ResponseWriter, status int, body webhookAnswer) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// errFromTheFuture is the error of a signature dated more than the tolerance ahead.
var errFromTheFuture = errors.New("the signature's timestamp is in the future")

// notAhead refuses a signature dated more than the tolerance after now: stripe-go checks
// only the age of a timestamp, and a delivery signed for a date ahead could be replayed
// until then. It runs after the signature was verified, so header is well formed and its
// t= is the signed timestamp.
func (h *StripeWebhook) notAhead(header string) error {
	tolerance := h.Tolerance
	if tolerance <= 0 {
		tolerance = webhook.DefaultTolerance
	}
	for part := range strings.SplitSeq(header, ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(part), "t="); ok {
			t, err := strconv.ParseInt(v, 10, 64)
			if err != nil || time.Unix(t, 0).After(h.Now.Now().Add(tolerance)) {
				return errFromTheFuture
			}
			return nil
		}
	}
	return webhook.ErrInvalidHeader
}

// refusal says why a delivery was refused, without echoing what it carried.
func refusal(err error) string {
	switch {
	case errors.Is(err, errFromTheFuture):
		return err.Error()
	case errors.Is(err, webhook.ErrNotSigned):
		return "no Stripe-Signature header"
	case errors.Is(err, webhook.ErrTooOld):
		return "the signature's timestamp is too old"
	case errors.Is(err, webhook.ErrInvalidHeader), errors.Is(err, webhook.ErrNoValidSignature):
		return "invalid signature"
	}
	return "the body is not a Stripe event"
}

// stripeEvent reads a verified Stripe event as a payment event. ours is false for events
// that are not about an order's payment (other types, payments made elsewhere on the same
// account, partial refunds); err is set when the event's object cannot be read.
func stripeEvent(ev stripe.Event) (pe seatflow.PaymentEvent, ours bool, err error) {
	pe = seatflow.PaymentEvent{ID: ev.ID, Type: string(ev.Type), Provider: seatflow.ProviderStripe}
	if ev.ID == "" {
		return pe, false, errors.New("no event id")
	}
	kind, ok := stripeKinds[ev.Type]
	if !ok {
		return pe, false, nil
	}
	if ev.Data == nil || len(ev.Data.Raw) == 0 {
		return pe, false, errors.New("no data.object")
	}
	pe.Kind = kind
	switch {
	case strings.HasPrefix(string(ev.Type), "payment_intent."):
		var pi stripe.PaymentIntent
		if err := json.Unmarshal(ev.Data.Raw, &pi); err != nil || pi.ID == "" {
			return pe, false, fmt.Errorf("data.object is not a payment intent: %v", err)
		}
		typ, ids, err := nodeid.Decode(pi.Metadata["order_id"])
		if err != nil || typ != nodeid.Order || len(ids) != 1 {
			return pe, false, nil // started elsewhere: not an order's
		}
		pe.OrderID, pe.Reference, pe.Currency = ids[0], pi.ID, strings.ToUpper(string(pi.Currency))
		pe.AmountCents = int(pi.Amount)
		if kind == seatflow.EventPaymentSucceeded {
			pe.AmountCents = int(pi.AmountReceived) // what was taken, not what was asked
		}
		if pi.LastPaymentError != nil {
			pe.Reason = pi.LastPaymentError.Msg
		} else if pi.CancellationReason != "" {
			pe.Reason = string(pi.CancellationReason)
		}
	case ev.Type == "charge.refunded":
		var ch stripe.Charge
		if err := json.Unmarshal(ev.Data.Raw, &ch); err != nil || ch.ID == "" {
			return pe, false, fmt.Errorf("data.object is not a charge: %v", err)
		}
		if !ch.Refunded || ch.PaymentIntent == nil || ch.PaymentIntent.ID == "" {
			return pe, false, nil // partly refunded (its refund objects' events say which), or not a PaymentIntent's
		}
		pe.Reference, pe.RefundStatus = ch.PaymentIntent.ID, seatflow.RefundSucceeded
	default: // a refund object
		var rf stripe.Refund
		if err := json.Unmarshal(ev.Data.Raw, &rf); err != nil || rf.ID == "" {
			return pe, false, fmt.Errorf("data.object is not a refund: %v", err)
		}
		if rf.PaymentIntent == nil || rf.PaymentIntent.ID == "" {
			return pe, false, nil
		}
		pe.Reference, pe.RefundReference = rf.PaymentIntent.ID, rf.ID
		pe.RefundStatus, pe.Reason = stripeRefundStatus(rf.Status), string(rf.FailureReason)
		if id, err := strconv.Atoi(rf.Metadata[seatRefundKey]); err == nil && id > 0 {
			pe.SeatRefundID = id
		}
	}
	return pe, true, nil
}

// stripeKinds are the Stripe event types SeatFlow acts on; every other type is ignored.
var stripeKinds = map[stripe.EventType]seatflow.PaymentEventKind{
	"payment_intent.succeeded":      seatflow.EventPaymentSucceeded,
	"payment_intent.payment_failed": seatflow.EventPaymentFailed,
	"payment_intent.canceled":       seatflow.EventPaymentCanceled,
	"charge.refunded":               seatflow.EventRefundUpdated,
	"refund.created":                seatflow.EventRefundUpdated,
	"refund.updated":                seatflow.EventRefundUpdated,
	"refund.failed":                 seatflow.EventRefundUpdated,
	"charge.refund.updated":         seatflow.EventRefundUpdated,
}
