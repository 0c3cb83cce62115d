package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"

	"seatflow"
)

// TicketKey is a key pair that signs ticket codes (Ed25519). The private key is stored
// sealed (AES-GCM under a key derived from SEATFLOW_TICKET_KEY_SECRET, the kid as
// associated data); the newest key signs new tickets. Only package tickets writes it.
type TicketKey struct{ ent.Schema }

func (TicketKey) Fields() []ent.Field {
	return []ent.Field{
		field.String("kid").NotEmpty().MaxLen(64).Unique().Immutable(),
		// generation orders the keys (1, 2, …): unique, so two instances creating the first
		// key at once, or two rotations at once, make one key each time, not two.
		field.Int("generation").Positive().Unique().Immutable(),
		field.Bytes("public_key").MaxLen(32).Immutable(),
		field.Bytes("sealed_private_key").MaxLen(128).Immutable(),
		field.Time("created_at").SchemaType(datetime6).Immutable(),
	}
}

func (TicketKey) Edges() []ent.Edge {
	return []ent.Edge{edge.To("tickets", Ticket.Type)}
}

// Ticket is one seat of a PAID order, made in the transaction that made the order PAID.
// Its admission is the conditional update of its row (checked_in_at from NULL): the row lock
// lets exactly one of any number of simultaneous scans change it, and orders a check-in
// against a revocation of the same ticket. revoked_at is never cleared.
type Ticket struct{ ent.Schema }

func (Ticket) Fields() []ent.Field {
	return []ent.Field{
		field.Int("order_id").Immutable(),
		field.Int("showtime_id").Immutable(),
		field.Int("seat_id").Immutable(),
		// ticket_type is its order line's (ADULT for tickets from before ticket types).
		field.Enum("ticket_type").GoType(seatflow.TicketAdult).Default(string(seatflow.TicketAdult)).Immutable(),
		field.Int("key_id").Immutable(),
		field.Time("created_at").SchemaType(datetime6).Immutable(),
		field.Time("revoked_at").SchemaType(datetime6).Optional().Nillable(),
		// checked_in_at is the admission (the earliest scan, offline scans included);
		// check_in_nonce the nonce of that scan, checked_in_by the staff member's user id.
		field.Time("checked_in_at").SchemaType(datetime6).Optional().Nillable(),
		field.String("check_in_nonce").Optional().Nillable().MaxLen(seatflow.MaxScanNonce),
		field.String("checked_in_by").Optional().Nillable().MaxLen(seatflow.MaxUserIDBytes),
		// admissions counts the people let in on the ticket: 1 once admitted, more when
		// offline scanners let others in on it too (each beyond the first is a duplicate scan).
		field.Int("admissions").Default(0).NonNegative(),
	}
}

func (Ticket) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("key", TicketKey.Type).Ref("tickets").Field("key_id").Unique().Required().Immutable(),
		edge.To("offline_scans", OfflineScan.Type),
	}
}

func (Ticket) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("order_id", "seat_id").Unique(),
		index.Fields("showtime_id", "revoked_at"),
	}
}

// OfflineScan is a scan an offline scanner uploaded: it let the holder in on its own.
// (ticket_id, nonce) is unique, so a scan uploaded twice is applied once.
type OfflineScan struct{ ent.Schema }

func (OfflineScan) Fields() []ent.Field {
	return []ent.Field{
		field.Int("ticket_id").Immutable(),
		field.Int("showtime_id").Immutable(),
		field.String("nonce").NotEmpty().MaxLen(seatflow.MaxScanNonce).Immutable(),
		// scanned_at is when the scanner read the code; recorded_at when the server learned it.
		field.Time("scanned_at").SchemaType(datetime6).Immutable(),
		field.Time("recorded_at").SchemaType(datetime6).Immutable(),
		field.String("staff_id").MaxLen(seatflow.MaxUserIDBytes).Immutable(),
	}
}

func (OfflineScan) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("ticket", Ticket.Type).Ref("offline_scans").Field("ticket_id").Unique().Required().Immutable(),
	}
}

func (OfflineScan) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("ticket_id", "nonce").Unique(),
		index.Fields("showtime_id"),
	}
}
