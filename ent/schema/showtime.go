package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"

	"seatflow"
)

// Showtime is one screening of a movie in a hall.
type Showtime struct{ ent.Schema }

func (Showtime) Fields() []ent.Field {
	return []ent.Field{
		field.Int("movie_id"),
		field.Int("hall_id"),
		field.Time("starts_at").SchemaType(datetime6),
		field.Time("ends_at").SchemaType(datetime6),
		field.Enum("status").GoType(seatflow.ShowtimeScheduled).Default(string(seatflow.ShowtimeScheduled)),
		field.Int("purchase_limit").Default(6).Positive(),
		field.Bool("allow_seat_gaps").Default(false),
		// prices lists the price of each (seat kind, ticket type) sold, in cents: a JSON
		// array of {kind, ticketType, amountCents}. A row from before ticket types holds an
		// object of adult prices by kind; seatflow.PriceList reads both and the migration
		// rewrites the object (internal/database/prices.go).
		field.JSON("prices", seatflow.PriceList{}),
		field.String("currency").Default("USD").MaxLen(3),
		// seat_epoch counts the builds of the showtime's seat hash: the versions of the
		// n-th build start above seats.EpochBase(n), so they never go back below a version
		// an earlier build issued (docs/DESIGN.md "Live seat map").
		field.Int("seat_epoch").Default(0).NonNegative(),
		// has_queue says the showtime has an on-sale queue (an on_sale_queues row, written
		// in the same transaction): holds read it here, with the status, and need a pass
		// while the queue gates them (docs/DESIGN.md "On-sale queue").
		field.Bool("has_queue").Default(false),
		field.Time("created_at").SchemaType(datetime6).Immutable(),
		field.Time("updated_at").SchemaType(datetime6),
	}
}

func (Showtime) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("movie", Movie.Type).Ref("showtimes").Field("movie_id").Unique().Required(),
		edge.From("hall", Hall.Type).Ref("showtimes").Field("hall_id").Unique().Required(),
	}
}

func (Showtime) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("starts_at"),
		index.Fields("movie_id", "starts_at"),
		index.Fields("status"),
	}
}
