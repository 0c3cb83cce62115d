package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"

	"seatflow"
)

// Order is a customer's hold on seats of one showtime, later paid, cancelled or expired.
type Order struct{ ent.Schema }

func (Order) Fields() []ent.Field {
	return []ent.Field{
		field.String("user_id").NotEmpty().MaxLen(seatflow.MaxUserIDBytes),
		field.Int("showtime_id"),
		// hold_token marks the order's seats in Redis (`1|TOKEN|...`, `2|TOKEN`).
		field.String("hold_token").NotEmpty().MaxLen(64).Unique(),
		field.String("idempotency_key").NotEmpty().MaxLen(128),
		field.Enum("status").GoType(seatflow.OrderPending).Default(string(seatflow.OrderPending)),
		field.Int("amount_cents").NonNegative(),
		field.String("currency").Default("USD").MaxLen(3),
		field.Time("expires_at").SchemaType(datetime6),
		field.Time("created_at").SchemaType(datetime6).Immutable(),
		field.Time("paid_at").SchemaType(datetime6).Optional().Nillable(),
		field.String("payment_ref").Optional().MaxLen(191),
		field.Bool("refund_required").Default(false),
	}
}

func (Order) Edges() []ent.Edge {
	return []ent.Edge{
		edge.To("seats", OrderSeat.Type),
		edge.To("occupancy", SeatOccupancy.Type),
		edge.To("payments", Payment.Type),
		edge.To("refunds", Refund.Type),
	}
}

func (Order) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("user_id", "idempotency_key").Unique(),
		index.Fields("status", "expires_at"),
		index.Fields("showtime_id", "status"),
		index.Fields("user_id", "created_at"),
		// The purchase limit's count in a hold's transaction (internal/booking/limit.go).
		index.Fields("user_id", "showtime_id"),
	}
}

// OrderSeat is one line of an order: a seat, its ticket type and what it cost. It is kept
// forever, whatever the order's fate, and never changes.
type OrderSeat struct{ ent.Schema }

func (OrderSeat) Fields() []ent.Field {
	return []ent.Field{
		field.Int("order_id"),
		field.Int("seat_id"),
		// ticket_type is ADULT for lines from before ticket types (the column's default).
		field.Enum("ticket_type").GoType(seatflow.TicketAdult).Default(string(seatflow.TicketAdult)),
		// amount_cents is the line's price when it was held; NULL only on lines from before
		// ticket types until the migration fills it (internal/database/prices.go).
		field.Int("amount_cents").NonNegative().Optional().Nillable(),
		// refunded_at marks a seat refunded (refundSeats, or the whole order by refundOrder):
		// no longer the customer's, not counted in the order's amount or the purchase limit.
		field.Time("refunded_at").SchemaType(datetime6).Optional().Nillable(),
		// refund_id is the refund of some seats (refunds) that returned this seat's money;
		// NULL for a seat refunded with the whole order (its payment's refund).
		field.Int("refund_id").Optional().Nillable(),
	}
}

func (OrderSeat) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("order", Order.Type).Ref("seats").Field("order_id").Unique().Required(),
	}
}

func (OrderSeat) Indexes() []ent.Index {
	return []ent.Index{index.Fields("order_id", "seat_id").Unique()}
}

// SeatOccupancy is the database's last line of defence against selling a seat twice:
// a row exists exactly while its order is PENDING_PAYMENT or PAID, and
// (showtime_id, seat_id) is unique.
type SeatOccupancy struct{ ent.Schema }

func (SeatOccupancy) Fields() []ent.Field {
	return []ent.Field{
		field.Int("showtime_id"),
		field.Int("seat_id"),
		field.Int("order_id"),
	}
}

func (SeatOccupancy) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("order", Order.Type).Ref("occupancy").Field("order_id").Unique().Required(),
	}
}

func (SeatOccupancy) Indexes() []ent.Index {
	return []ent.Index{index.Fields("showtime_id", "seat_id").Unique()}
}

// PurchaseCount is a customer's seats of one showtime that the purchase limit counts: the
// seats of their active orders not refunded, which is their seat_occupancies rows. It is
// changed only in the transactions that insert or delete those rows, by the seats they
// insert or delete (internal/booking/limit.go), and recounted by the reconciler.
type PurchaseCount struct{ ent.Schema }

func (PurchaseCount) Fields() []ent.Field {
	return []ent.Field{
		field.String("user_id").NotEmpty().MaxLen(seatflow.MaxUserIDBytes),
		field.Int("showtime_id"),
		field.Int("seats").Default(0),
	}
}

func (PurchaseCount) Indexes() []ent.Index {
	return []ent.Index{
		// The row a hold's transaction adds to (INSERT … ON DUPLICATE KEY UPDATE).
		index.Fields("user_id", "showtime_id").Unique(),
		// The reconciler's and verify's reads, a showtime at a time.
		index.Fields("showtime_id"),
	}
}
