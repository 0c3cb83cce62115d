package schema

import (
	"time"

	"entgo.io/ent"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"

	"seatflow"
)

// Cinema is one cinema of the chain: its halls, and the time zone its days are counted in.
type Cinema struct{ ent.Schema }

func (Cinema) Fields() []ent.Field {
	return []ent.Field{
		field.String("name").NotEmpty().MaxRuneLen(seatflow.MaxCinemaName),
		field.String("time_zone").NotEmpty().MaxLen(64).Validate(validZone),
		field.String("address").Default("").MaxRuneLen(seatflow.MaxCinemaAddress),
		field.Time("created_at").SchemaType(datetime6).Immutable().Default(time.Now),
	}
}

func (Cinema) Edges() []ent.Edge {
	return []ent.Edge{edge.To("halls", Hall.Type)}
}

// validZone accepts an IANA time zone name only (seatflow.Zone: time.LoadLocation also
// takes "Local", which depends on the server's machine).
func validZone(name string) error {
	_, err := seatflow.Zone(name)
	return err
}
