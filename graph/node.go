package graph

import (
	"context"
	"fmt"

	"github.com/99designs/gqlgen/graphql"

	"seatflow"
	"seatflow/graph/model"
	"seatflow/internal/auth"
	"seatflow/internal/nodeid"
	"seatflow/loaders"
)

// maxNodes bounds nodes(ids:).
const maxNodes = 100

// rawIDs returns the id arguments of the field being resolved as the client sent them:
// node(id:) needs the type its id names, which the decoded database id no longer carries
// (model.UnmarshalID checked it is a node type).
func rawIDs(ctx context.Context, arg string) []any {
	fc := graphql.GetFieldContext(ctx)
	v := fc.Field.ArgumentMap(graphql.GetOperationContext(ctx).Variables)[arg]
	if list, ok := v.([]any); ok {
		return list
	}
	return []any{v}
}

// fetchNode loads the object id names, or nil when there is none (or it is someone
// else's order): node(id:) answers null then, as Relay expects.
func (r *Resolver) fetchNode(ctx context.Context, raw any) (model.Node, error) {
	s, _ := raw.(string)
	typ, parts, err := nodeid.Decode(s)
	if err != nil || len(parts) != 1 {
		return nil, seatflow.Errorf(seatflow.EINVALID, "%q is not a valid id", s)
	}
	id := parts[0]
	var node model.Node
	switch typ {
	case nodeid.Movie:
		node, err = orNil(loaders.For(ctx).Movie.Load(ctx, id))
	case nodeid.Showtime:
		node, err = orNil(loaders.For(ctx).Showtime.Load(ctx, id))
	case nodeid.Hall:
		node, err = orNil(loaders.For(ctx).Hall.Load(ctx, id))
	case nodeid.Seat:
		node, err = orNil(r.Catalog.Seat(ctx, id))
	case nodeid.Order:
		u, authErr := auth.RequireUser(ctx)
		if authErr != nil {
			return nil, nil
		}
		node, err = orNil(r.Booking.Order(ctx, u.ID, id))
	case nodeid.Ticket:
		// A customer sees its own tickets only; staff and admins see any (the door).
		u, authErr := auth.RequireUser(ctx)
		if authErr != nil {
			return nil, nil
		}
		t, err := r.Tickets.Ticket(ctx, id)
		if err != nil || t == nil || (t.UserID != u.ID && !auth.IsStaff(ctx)) {
			return nil, err
		}
		node = t
	default:
		return nil, fmt.Errorf("node: no loader for type %s", typ)
	}
	if seatflow.ErrorCode(err) == seatflow.ENOTFOUND {
		return nil, nil
	}
	return node, err
}

// orNil turns a missing object (nil pointer) into a nil Node, not a typed nil.
func orNil[T any](v *T, err error) (model.Node, error) {
	if v == nil || err != nil {
		return nil, err
	}
	return v, nil
}
