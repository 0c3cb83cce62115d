package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// OnSaleQueue is the record of a showtime's on-sale queue (setOnSaleQueue): its settings
// and the draw's seed, kept in MySQL so that the queue's state, which lives in Redis, can
// be rebuilt after a Redis loss and the draw stays verifiable. A showtime has at most one;
// its showtimes.has_queue says so (docs/DESIGN.md "On-sale queue").
type OnSaleQueue struct{ ent.Schema }

func (OnSaleQueue) Fields() []ent.Field {
	return []ent.Field{
		field.Int("showtime_id").Unique().Immutable(),
		field.Time("opens_at").SchemaType(datetime6),
		field.Int("admit_per_minute").Positive(),
		field.Int("max_active").Positive(),
		field.Int("pass_minutes").Positive(),
		field.Float("average_party_size"),
		// draw_seed is the secret seed in lowercase hex, revealed by the API only once the
		// queue is SOLD_OUT or CLOSED; draw_commitment its public SHA-256. Both are set once,
		// when the queue is created, and never changed (a new setOnSaleQueue keeps them).
		field.String("draw_seed").MaxLen(64).Sensitive().Immutable(),
		field.String("draw_commitment").MaxLen(64).Immutable(),
		// epoch counts the builds of the queue's state in Redis: passes name the epoch
		// they were issued in, and a rebuilt state accepts the older epochs' passes on their
		// signature alone (the record of which are in use was lost).
		field.Int("epoch").Default(1).Positive(),
		// admitted is the passes the queue's last state issued, recorded when it closed (its
		// state in Redis expires after a day; the count stays readable).
		field.Int("admitted").Default(0).NonNegative(),
		// created_by is the token subject of the admin who set the queue up.
		field.String("created_by").MaxLen(128),
		field.Time("created_at").SchemaType(datetime6).Immutable(),
		field.Time("updated_at").SchemaType(datetime6),
		// closed_at is when the queue was CLOSED (its showtime started or was cancelled):
		// instances stop running it.
		field.Time("closed_at").SchemaType(datetime6).Optional().Nillable(),
	}
}

func (OnSaleQueue) Indexes() []ent.Index {
	return []ent.Index{index.Fields("closed_at")}
}
