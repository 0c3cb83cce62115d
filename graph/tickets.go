package graph

import (
	"context"

	"seatflow"
	"seatflow/internal/auth"
	"seatflow/internal/googlewallet"
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

// ownTicket is the caller's ticket id: NOT_FOUND when it is nobody's or someone else's.
func (r *Resolver) ownTicket(ctx context.Context, id int) (*seatflow.Ticket, error) {
	u, err := auth.RequireUser(ctx)
	if err != nil {
		return nil, err
	}
	t, err := r.Tickets.Ticket(ctx, id)
	if err != nil {
		return nil, err
	}
	if t == nil || t.UserID != u.ID {
		return nil, seatflow.Errorf(seatflow.ENOTFOUND, "you have no ticket with this id")
	}
	return t, nil
}

// googleWalletLink is ticket t's "Save to Google Wallet" link: WALLET_UNAVAILABLE without an
// issuer, INVALID_STATE for a revoked ticket.
func (r *Resolver) googleWalletLink(ctx context.Context, t *seatflow.Ticket) (string, error) {
	if r.GoogleWallet == nil {
		return "", seatflow.Errorf(seatflow.EWALLETUNAVAILABLE, "Google Wallet is not set up on this server")
	}
	if t.Status() == seatflow.TicketRevoked {
		return "", seatflow.Errorf(seatflow.EINVALIDSTATE, "this ticket was revoked: it cannot be saved to a wallet")
	}
	l := loaders.For(ctx)
	show, err := found(l.Showtime.Load(ctx, t.ShowtimeID))
	if err != nil {
		return "", err
	}
	wt := &googlewallet.Ticket{Ticket: t, Showtime: show}
	if wt.Movie, err = found(l.Movie.Load(ctx, show.MovieID)); err != nil {
		return "", err
	}
	if wt.Cinema, err = found(l.Cinema.Load(ctx, show.CinemaID)); err != nil {
		return "", err
	}
	if wt.Hall, err = found(l.Hall.Load(ctx, show.HallID)); err != nil {
		return "", err
	}
	seats, err := showtimeSeats(ctx, t.ShowtimeID, []int{t.SeatID})
	if err != nil || len(seats) == 0 {
		_, err = found[seatflow.Seat](nil, err)
		return "", err
	}
	wt.Seat = &seats[0]
	if wt.Code, err = r.Tickets.Code(ctx, t, show); err != nil {
		return "", err
	}
	return r.GoogleWallet.Link(wt)
}
