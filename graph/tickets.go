package graph

import (
	"context"

	"seatflow"
	"seatflow/loaders"
)

// ticketCode is a ticket's code, signed over its showtime as the catalog has it now.
func (r *Resolver) ticketCode(ctx context.Context, t *seatflow.Ticket) (string, error) {
	show, err := found(loaders.For(ctx).Showtime.Load(ctx, t.ShowtimeID))
	if err != nil {
		return "", err
	}
	return r.Tickets.Code(ctx, t, show)
}
