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

// fetchNodes loads the objects raws name, in order, nil where there is none (or it is
// someone else's order): node(id:) and nodes(ids:) answer null there, as Relay expects.
// The ids of one type are read together, however many are missing: one batch of the
// request's loaders (cinemas, movies, showtimes, halls: the catalog cache keeps what is missing a
// while), one query for seats and one for orders.
func (r *Resolver) fetchNodes(ctx context.Context, raws []any) ([]model.Node, error) {
	ids := make([]int, len(raws))
	at := map[string][]int{} // type → positions in raws
	for i, raw := range raws {
		s, _ := raw.(string)
		typ, parts, err := nodeid.Decode(s)
		if err != nil || len(parts) != 1 {
			return nil, seatflow.Errorf(seatflow.EINVALID, "%q is not a valid id", s)
		}
		ids[i] = parts[0]
		at[typ] = append(at[typ], i)
	}
	out := make([]model.Node, len(raws))
	for typ, positions := range at {
		of := make([]int, len(positions))
		for j, i := range positions {
			of[j] = ids[i]
		}
		nodes, err := r.loadNodes(ctx, typ, of)
		if err != nil {
			return nil, err
		}
		for j, i := range positions {
			out[i] = nodes[j]
		}
	}
	return out, nil
}

// loadNodes loads the objects of type typ with database ids ids, in order.
func (r *Resolver) loadNodes(ctx context.Context, typ string, ids []int) ([]model.Node, error) {
	l := loaders.For(ctx)
	switch typ {
	case nodeid.Cinema:
		return asNodes(l.Cinema.LoadAll(ctx, ids))
	case nodeid.Movie:
		return asNodes(l.Movie.LoadAll(ctx, ids))
	case nodeid.Showtime:
		return asNodes(l.Showtime.LoadAll(ctx, ids))
	case nodeid.Hall:
		return asNodes(l.Hall.LoadAll(ctx, ids))
	case nodeid.Seat:
		return asNodes(r.Catalog.Seats(ctx, ids))
	case nodeid.Order:
		u, err := auth.RequireUser(ctx)
		if err != nil {
			return make([]model.Node, len(ids)), nil // nobody's orders are visible without a user
		}
		return asNodes(r.Booking.Orders(ctx, u.ID, ids))
	case nodeid.Ticket:
		return r.ticketNodes(ctx, ids)
	case nodeid.WaitingListEntry:
		out := make([]model.Node, len(ids))
		u, err := auth.RequireUser(ctx)
		if err != nil {
			return out, nil // nobody's entries are visible without a user
		}
		for i, id := range ids {
			e, err := r.Waitlist.Entry(ctx, u.ID, id)
			if seatflow.ErrorCode(err) == seatflow.ENOTFOUND {
				continue
			} else if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	}
	return nil, fmt.Errorf("node: no loader for type %s", typ)
}

// ticketNodes loads tickets: a customer sees its own only, staff and admins any (the
// door); nobody's are visible without a user.
func (r *Resolver) ticketNodes(ctx context.Context, ids []int) ([]model.Node, error) {
	out := make([]model.Node, len(ids))
	u, err := auth.RequireUser(ctx)
	if err != nil {
		return out, nil
	}
	for i, id := range ids {
		t, err := r.Tickets.Ticket(ctx, id)
		if err != nil {
			return nil, err
		}
		if t != nil && (t.UserID == u.ID || auth.IsStaff(ctx)) {
			out[i] = t
		}
	}
	return out, nil
}

// asNodes turns missing objects (nil pointers) into nil Nodes, not typed nils.
func asNodes[T any](vs []*T, err error) ([]model.Node, error) {
	if err != nil {
		return nil, err
	}
	out := make([]model.Node, len(vs))
	for i, v := range vs {
		if v != nil {
			out[i] = v
		}
	}
	return out, nil
}
