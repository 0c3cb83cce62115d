package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"

	"seatflow"
)

// Movie is a film the cinema lists.
type Movie struct{ ent.Schema }

func (Movie) Fields() []ent.Field {
	return []ent.Field{
		field.String("title").NotEmpty().MaxLen(200),
		field.Text("synopsis").Default(""),
		field.Int("duration_min").Positive(),
		field.String("rating").Default("").MaxLen(20),
		field.JSON("genres", []string{}).Optional(),
		field.String("poster_url").Default("").MaxLen(500),
		field.Enum("status").GoType(seatflow.MovieListed).Default(string(seatflow.MovieListed)),
		field.Time("created_at").SchemaType(datetime6).Immutable(),
		field.Time("updated_at").SchemaType(datetime6),
	}
}

func (Movie) Edges() []ent.Edge {
	return []ent.Edge{edge.To("showtimes", Showtime.Type)}
}
