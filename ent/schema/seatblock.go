package schema

import (
	"time"

	"entgo.io/ent"
	"entgo.io/ent/dialect"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// SeatBlock is a house seat: a seat of one showtime that staff keep off sale (blockSeats).
// MySQL is the record of blocks; the seat hash shows them as BLOCKED ("3") and is rebuilt
// from these rows (docs/DESIGN.md "House seats"). (showtime_id, seat_id) is unique: a seat
// is blocked once.
type SeatBlock struct{ ent.Schema }

func (SeatBlock) Fields() []ent.Field {
	return []ent.Field{
		field.Int("showtime_id"),
		field.Int("seat_id"),
		// reason is what staff wrote: 1 to 200 characters (not bytes: internal/sales/blocks.go
		// checks them), no control characters.
		field.String("reason").SchemaType(map[string]string{dialect.MySQL: "varchar(200)"}),
		// created_by is the token subject of the admin who blocked the seat.
		field.String("created_by").MaxLen(128),
		field.Time("created_at").SchemaType(datetime6).Immutable().Default(time.Now),
	}
}

func (SeatBlock) Indexes() []ent.Index {
	return []ent.Index{index.Fields("showtime_id", "seat_id").Unique()}
}
