package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"

	"seatflow"
)

// Movie is a film the cinema lists.
type Movie struct{ ent.Schema }

// Fields: the text limits count characters (MaxRuneLen), as MySQL's utf8mb4 varchar(n)
// does; MaxLen would count bytes and refuse what the column holds.
func (Movie) Fields() []ent.Field {
	return []ent.Field{
		field.String("title").NotEmpty().MaxRuneLen(seatflow.MaxMovieTitle),
		field.Text("synopsis").Default(""),
		field.Int("duration_min").Positive(),
		field.String("rating").Default("").MaxRuneLen(seatflow.MaxMovieRating),
		field.JSON("genres", []string{}).Optional(),
		field.String("poster_url").Default("").MaxRuneLen(seatflow.MaxPosterURL),
		field.Enum("status").GoType(seatflow.MovieListed).Default(string(seatflow.MovieListed)),
		field.Time("created_at").SchemaType(datetime6).Immutable(),
		field.Time("updated_at").SchemaType(datetime6),
	}
}

func (Movie) Edges() []ent.Edge {
	return []ent.Edge{edge.To("showtimes", Showtime.Type)}
}
