package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// CacheOutbox holds catalog cache keys to invalidate, written in the same transaction as
// the catalog change, so a crash after commit cannot lose an invalidation.
type CacheOutbox struct{ ent.Schema }

func (CacheOutbox) Fields() []ent.Field {
	return []ent.Field{
		field.JSON("keys", []string{}),
		field.Time("created_at").SchemaType(datetime6).Immutable(),
		field.Time("processed_at").SchemaType(datetime6).Optional().Nillable(),
	}
}

func (CacheOutbox) Indexes() []ent.Index {
	return []ent.Index{index.Fields("processed_at", "created_at")}
}

// ReconcileRun is the record of one reconciler run that repaired something.
type ReconcileRun struct{ ent.Schema }

func (ReconcileRun) Fields() []ent.Field {
	return []ent.Field{
		field.Time("started_at").SchemaType(datetime6),
		field.Time("finished_at").SchemaType(datetime6),
		field.Int("expired_cancelled").Default(0),
		field.Int("paid_seats_fixed").Default(0),
		field.Int("hashes_rebuilt").Default(0),
		field.Int("orphan_holds_released").Default(0),
		field.Int("sold_orphans_released").Default(0),
		field.Int("limits_recounted").Default(0),
		field.Int("pending_seats_reheld").Default(0),
		field.Int("blocks_repaired").Default(0),
		field.Int("refunds_retried").Default(0),
		field.Int("refunds_outstanding").Default(0),
		field.Int("purchase_counts_recounted").Default(0),
		field.Int("waitlist_counts_recounted").Default(0),
		field.Int("returned_seats_offered").Default(0),
		field.JSON("showtimes", []int{}).Optional(),
	}
}

func (ReconcileRun) Indexes() []ent.Index {
	return []ent.Index{index.Fields("started_at")}
}
