package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"

	"seatflow"
)

// Refund is the refund of some seats of a PAID order (refundSeats): the money of those
// seats' lines, returned from the payment that paid the order. Its seats' lines point at it
// (order_seats.refund_id). A payment's whole refund stays on its payments row; a payment
// refunded in parts and then whole has refunds rows for the parts and its own refund for
// the rest. Only package booking writes it, in the transaction that refunds the seats.
type Refund struct{ ent.Schema }

func (Refund) Fields() []ent.Field {
	return []ent.Field{
		field.Int("order_id"),
		// payment_id is the payment the money goes back from (the one that paid the order).
		field.Int("payment_id"),
		field.Int("amount_cents").NonNegative(),
		field.String("currency").MaxLen(3),
		field.Enum("status").GoType(seatflow.RefundRequired),
		// reference is the provider's id of the refund last sent.
		field.String("reference").Default("").MaxLen(255),
		// attempts counts refunds the provider reported failed: the next one is a new request
		// (a new idempotency key), not a repeat of the failed one.
		field.Int("attempts").Default(0).NonNegative(),
		field.String("reason").Default("").MaxLen(255),
		// created_by is the token subject of the admin who refunded the seats.
		field.String("created_by").MaxLen(128),
		field.Time("created_at").SchemaType(datetime6).Immutable(),
		field.Time("updated_at").SchemaType(datetime6),
	}
}

func (Refund) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("order", Order.Type).Ref("refunds").Field("order_id").Unique().Required(),
	}
}

func (Refund) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("payment_id"),
		index.Fields("status", "updated_at"),
		index.Fields("reference"),
	}
}
