package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"

	"seatflow"
)

// PassRegistration is a device registered for updates of an Apple Wallet pass (the
// PassKit web service, package passkit): a device library, its push token, and the pass
// (pass type and serial number; ticket_id is the ticket the serial names). pushed_tag is the
// pass's update tag (Unix microseconds of its last update) the device last heard of: set
// at registration, moved by the push loop's conditional update after each push, so each
// change is pushed once. push_claim and push_claimed_until are the claim and lease of an
// instance pushing it now (all of a device's changed passes are claimed at once).
type PassRegistration struct{ ent.Schema }

func (PassRegistration) Fields() []ent.Field {
	return []ent.Field{
		field.String("device_library_id").NotEmpty().MaxLen(seatflow.MaxPassKitIDBytes).Immutable(),
		field.String("push_token").NotEmpty().MaxLen(seatflow.MaxPushTokenBytes),
		field.String("pass_type_id").NotEmpty().MaxLen(seatflow.MaxPassKitIDBytes).Immutable(),
		field.String("serial_number").NotEmpty().MaxLen(seatflow.MaxPassKitIDBytes).Immutable(),
		field.Int("ticket_id").Immutable(),
		field.Time("created_at").SchemaType(datetime6).Immutable(),
		field.Int64("pushed_tag"),
		field.Time("push_claimed_until").SchemaType(datetime6).Optional().Nillable(),
		// push_claim is the random id of the claim: the instance that made it marks its
		// rows done, and only those.
		field.String("push_claim").Optional().Nillable().MaxLen(32),
	}
}

func (PassRegistration) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("device_library_id", "pass_type_id", "serial_number").Unique(),
		index.Fields("ticket_id"),
	}
}
