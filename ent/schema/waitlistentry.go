package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"

	"seatflow"
)

// WaitlistEntry is a customer's place on a sold-out showtime's waiting list
// (joinWaitingList): entries are offered seats that come back in id order, the join order
// (docs/DESIGN.md "Waiting list"). Its offer is an order (order_id): once it has one, the
// entry's status is its order's (seatflow.OfferStatus), written nowhere else.
type WaitlistEntry struct{ ent.Schema }

func (WaitlistEntry) Fields() []ent.Field {
	return []ent.Field{
		field.String("user_id").NotEmpty().MaxLen(seatflow.MaxUserIDBytes).Immutable(),
		field.Int("showtime_id").Immutable(),
		field.Int("seats").Positive().Immutable(),
		// ticket_types are the seats' ticket types, comma-separated, one per seat.
		field.String("ticket_types").MaxLen(200).Immutable(),
		// state is WAITING, OFFERED (order_id set) or LEFT; an offered entry's outcome is
		// its order's status.
		field.Enum("state").Values("WAITING", "OFFERED", "LEFT").Default("WAITING"),
		// order_id is the offer's order; unique, so an entry is offered once.
		field.Int("order_id").Optional().Nillable().Unique(),
		// active_key is "user|showtime" while the entry is active (WAITING, or OFFERED with
		// its order pending) and NULL after: unique, so a user has one active entry per
		// showtime. A join clears the key of an entry whose offer ended (package waitlist).
		field.String("active_key").Optional().Nillable().Unique().MaxLen(seatflow.MaxUserIDBytes + 12),
		field.Time("created_at").SchemaType(datetime6).Immutable(),
		field.Time("offered_at").SchemaType(datetime6).Optional().Nillable(),
		field.Time("left_at").SchemaType(datetime6).Optional().Nillable(),
	}
}

func (WaitlistEntry) Indexes() []ent.Index {
	return []ent.Index{
		// The offerer's and the positions' read: a showtime's waiting entries in join order.
		index.Fields("showtime_id", "state"),
		index.Fields("user_id", "created_at"),
	}
}
