package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"

	"seatflow"
)

// Refund is money returned from one payment: the refund of some seats of a PAID order
// (refundSeats), whose seats' lines point at it (order_seats.refund_id), or the payment's
// whole refund (whole), at most one per payment: staff's refundOrder, a cancelled
// showtime, a payment the order could not keep, or one refunded at the provider's
// dashboard. A payment refunded in parts and then whole has a row per part and its whole
// row for the rest. Only package booking writes it, in the transaction that decides the
// refund.
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
		// created_by is the token subject of the admin who refunded the seats; empty for a
		// whole refund.
		field.String("created_by").Default("").MaxLen(128),
		// whole says the row is its payment's whole refund: its amount is what the refunds
		// of some seats of the payment left of it. There is at most one per payment:
		// internal/booking/refund.go's requireRefund looks for it under the payment's row
		// lock before it writes one.
		field.Bool("whole").Default(false),
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
		index.Fields("payment_id", "whole"),
		index.Fields("status", "updated_at"),
		index.Fields("reference"),
	}
}
