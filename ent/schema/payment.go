package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"

	"seatflow"
)

// Payment is one payment of an order with its provider. An order keeps
// every payment it receives: the one that pays it, and any other (a mismatched amount, a
// second payment of an order already paid), each refunded on its own. Only package booking
// writes it, in the same transaction as the order change it goes with.
type Payment struct{ ent.Schema }

func (Payment) Fields() []ent.Field {
	return []ent.Field{
		field.Int("order_id"),
		field.String("provider").NotEmpty().MaxLen(16),
		// reference is the provider's payment id: Stripe's PaymentIntent id, or the test
		// provider's paymentRef (not unique: test clients may reuse one).
		field.String("reference").NotEmpty().MaxLen(255),
		field.Enum("status").GoType(seatflow.PaymentPending),
		field.Int("amount_cents").NonNegative(),
		field.String("currency").MaxLen(3),
		// refund_status, refund_reference, refund_attempts and refund_reason are no longer
		// written or read: a payment's whole refund is its refunds row (whole) since the
		// migration in internal/database/refunds.go copied them there.
		field.Enum("refund_status").GoType(seatflow.RefundRequired).Optional().Nillable(),
		// refund_reference is the provider's id of the latest refund sent.
		field.String("refund_reference").Default("").MaxLen(255),
		// refund_attempts counts refunds the provider reported failed: the next one is a
		// new request (a new idempotency key), not a repeat of the failed one.
		field.Int("refund_attempts").Default(0).NonNegative(),
		field.String("refund_reason").Default("").MaxLen(255),
		field.Time("created_at").SchemaType(datetime6).Immutable(),
		field.Time("updated_at").SchemaType(datetime6),
	}
}

func (Payment) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("order", Order.Type).Ref("payments").Field("order_id").Unique().Required(),
	}
}

func (Payment) Indexes() []ent.Index {
	return []ent.Index{
		// One record per payment of an order: a second event about the same payment (a
		// concurrent one included) finds the record instead of making another.
		index.Fields("order_id", "provider", "reference").Unique(),
		index.Fields("provider", "reference"),
		index.Fields("refund_status", "updated_at"),
	}
}

// PaymentEvent records a provider event that was applied: its id is unique, and the row is
// written in the same transaction as the event's effect, so a second delivery (a retry, or
// the same event at another instance at once) changes nothing.
type PaymentEvent struct{ ent.Schema }

func (PaymentEvent) Fields() []ent.Field {
	return []ent.Field{
		field.String("provider").NotEmpty().MaxLen(16),
		field.String("event_id").NotEmpty().MaxLen(255),
		field.String("type").MaxLen(100),
		field.Int("order_id").Optional().Nillable(),
		field.Time("received_at").SchemaType(datetime6).Immutable(),
	}
}

func (PaymentEvent) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("provider", "event_id").Unique(),
		index.Fields("order_id"),
	}
}
