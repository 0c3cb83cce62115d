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

// showtimeSeats returns the seats ids of showtime showID's hall, in the hall's order,
// through the request's loaders.
func showtimeSeats(ctx context.Context, showID int, ids []int) ([]seatflow.Seat, error) {
	show, err := found(loaders.For(ctx).Showtime.Load(ctx, showID))
	if err != nil {
		return nil, err
	}
	seats, err := loaders.For(ctx).SeatsByHall.Load(ctx, show.HallID)
	if err != nil {
		return nil, err
	}
	return seatflow.SeatsByID(seats, ids), nil
}
