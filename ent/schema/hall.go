package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"

	"seatflow"
)

// Hall is a screen room; its seats are the template every showtime's seat map starts from.
type Hall struct{ ent.Schema }

func (Hall) Fields() []ent.Field {
	return []ent.Field{
		field.String("name").NotEmpty().MaxRuneLen(seatflow.MaxHallName),
		field.Time("created_at").SchemaType(datetime6).Immutable(),
		// Nullable in the table so that the migration can add it to existing halls; the
		// migration then puts every hall without one into the default cinema
		// (internal/database/cinema.go).
		field.Int("cinema_id").Optional(),
	}
}

func (Hall) Edges() []ent.Edge {
	return []ent.Edge{
		edge.To("seats", Seat.Type),
		edge.To("showtimes", Showtime.Type),
		edge.From("cinema", Cinema.Type).Ref("halls").Field("cinema_id").Unique(),
	}
}

// Seat is one seat of a hall, positioned for drawing (x, y).
type Seat struct{ ent.Schema }

func (Seat) Fields() []ent.Field {
	return []ent.Field{
		field.Int("hall_id"),
		field.String("row_label").NotEmpty().MaxRuneLen(seatflow.MaxRowLabel),
		field.Int("number").Positive(),
		field.Int("x"),
		field.Int("y"),
		field.Enum("kind").GoType(seatflow.SeatStandard).Default(string(seatflow.SeatStandard)),
		field.Bool("sellable").Default(true),
	}
}

func (Seat) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("hall", Hall.Type).Ref("seats").Field("hall_id").Unique().Required(),
	}
}

func (Seat) Indexes() []ent.Index {
	return []ent.Index{index.Fields("hall_id", "row_label", "number").Unique()}
}
