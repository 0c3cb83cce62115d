package payments

import (
	"encoding/json"
	"testing"

	"github.com/stripe/stripe-go/v82"

	"seatflow"
	"seatflow/internal/nodeid"
)

// TestStripeEventReading: what each Stripe event type becomes, and which are not an
// order's (the endpoint's answers for them are tested against the real server in
// internal/app).
func TestStripeEventReading(t *testing.T) {
	pi := func(extra string) string {
		return `{"id":"pi_1","object":"payment_intent","amount":1000,"amount_received":900,"currency":"usd","metadata":{"order_id":"` + nodeid.Encode(nodeid.Order, 7) + `"}` + extra + `}`
	}
	for _, c := range []struct {
		name, typ, object string
		ours, fails       bool
		want              seatflow.PaymentEvent
	}{
		{"SucceededCountsWhatWasReceived", "payment_intent.succeeded", pi(""), true, false,
			seatflow.PaymentEvent{Kind: seatflow.EventPaymentSucceeded, OrderID: 7, Reference: "pi_1", AmountCents: 900, Currency: "USD"}},
		{"FailedKeepsTheReason", "payment_intent.payment_failed", pi(`,"last_payment_error":{"message":"card declined"}`), true, false,
			seatflow.PaymentEvent{Kind: seatflow.EventPaymentFailed, OrderID: 7, Reference: "pi_1", AmountCents: 1000, Currency: "USD", Reason: "card declined"}},
		{"Canceled", "payment_intent.canceled", pi(`,"cancellation_reason":"abandoned"`), true, false,
			seatflow.PaymentEvent{Kind: seatflow.EventPaymentCanceled, OrderID: 7, Reference: "pi_1", AmountCents: 1000, Currency: "USD", Reason: "abandoned"}},
		{"OrderIDNotAnID", "payment_intent.succeeded", `{"id":"pi_1","metadata":{"order_id":"seven"}}`, false, false, seatflow.PaymentEvent{}},
		{"DatabaseOrderID", "payment_intent.succeeded", `{"id":"pi_1","metadata":{"order_id":"7"}}`, false, false, seatflow.PaymentEvent{}},
		{"OtherTypesID", "payment_intent.succeeded", `{"id":"pi_1","metadata":{"order_id":"` + nodeid.Encode(nodeid.Showtime, 7) + `"}}`, false, false, seatflow.PaymentEvent{}},
		{"NoOrderID", "payment_intent.succeeded", `{"id":"pi_1","metadata":{}}`, false, false, seatflow.PaymentEvent{}},
		{"NotAnIntent", "payment_intent.succeeded", `{"id":42,"amount":"lots"}`, false, true, seatflow.PaymentEvent{}},
		{"RefundFailed", "refund.failed", `{"id":"re_1","object":"refund","payment_intent":"pi_1","status":"failed","failure_reason":"lost_or_stolen_card"}`, true, false,
			seatflow.PaymentEvent{Kind: seatflow.EventRefundUpdated, Reference: "pi_1", RefundReference: "re_1", RefundStatus: seatflow.RefundFailed, Reason: "lost_or_stolen_card"}},
		{"RefundNeedsAction", "refund.updated", `{"id":"re_1","object":"refund","payment_intent":"pi_1","status":"requires_action"}`, true, false,
			seatflow.PaymentEvent{Kind: seatflow.EventRefundUpdated, Reference: "pi_1", RefundReference: "re_1", RefundStatus: seatflow.RefundPending}},
		{"RefundOfSomeSeats", "refund.updated", `{"id":"re_2","object":"refund","payment_intent":"pi_1","status":"succeeded","metadata":{"order_id":"x","seat_refund":"12"}}`, true, false,
			seatflow.PaymentEvent{Kind: seatflow.EventRefundUpdated, Reference: "pi_1", RefundReference: "re_2", RefundStatus: seatflow.RefundSucceeded, SeatRefundID: 12}},
		{"RefundOfSomeSeatsBadID", "refund.updated", `{"id":"re_2","object":"refund","payment_intent":"pi_1","status":"succeeded","metadata":{"seat_refund":"-3"}}`, true, false,
			seatflow.PaymentEvent{Kind: seatflow.EventRefundUpdated, Reference: "pi_1", RefundReference: "re_2", RefundStatus: seatflow.RefundSucceeded}},
		{"RefundOfACharge", "refund.updated", `{"id":"re_1","object":"refund","charge":"ch_1","status":"succeeded"}`, false, false, seatflow.PaymentEvent{}},
		{"ChargeRefunded", "charge.refunded", `{"id":"ch_1","object":"charge","payment_intent":"pi_1","refunded":true}`, true, false,
			seatflow.PaymentEvent{Kind: seatflow.EventRefundUpdated, Reference: "pi_1", RefundStatus: seatflow.RefundSucceeded}},
		{"ChargePartlyRefunded", "charge.refunded", `{"id":"ch_1","object":"charge","payment_intent":"pi_1","refunded":false}`, false, false, seatflow.PaymentEvent{}},
		{"OtherType", "customer.created", `{"id":"cus_1"}`, false, false, seatflow.PaymentEvent{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var ev stripe.Event
			raw := `{"id":"evt_1","type":"` + c.typ + `","data":{"object":` + c.object + `}}`
			if err := json.Unmarshal([]byte(raw), &ev); err != nil {
				t.Fatal(err)
			}
			got, ours, err := stripeEvent(ev)
			if (err != nil) != c.fails || ours != c.ours {
				t.Fatalf("ours = %v, err = %v; want ours %v, failure %v", ours, err, c.ours, c.fails)
			}
			if !c.ours {
				return
			}
			c.want.ID, c.want.Type, c.want.Provider = "evt_1", c.typ, seatflow.ProviderStripe
			if got != c.want {
				t.Fatalf("event = %+v\nwant    %+v", got, c.want)
			}
		})
	}
}
