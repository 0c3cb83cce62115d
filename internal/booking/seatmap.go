package booking

import (
	"context"

	"seatflow"
	"seatflow/internal/catalog"
	"seatflow/internal/seats"
)

// SeatMap returns the live seat map of a showtime: the hall template from the catalog
// (cached) and the seat states from Redis (never cached).
func (s *Service) SeatMap(ctx context.Context, showID int) (*seats.SeatMap, error) {
	hall, err := s.HallOf(ctx, showID)
	if err != nil {
		return nil, err
	}
	return s.Seats.Map(ctx, showID, hall)
}

// BestSeats suggests count seats for a showtime (see seats.BestSeats for the rule).
func (s *Service) BestSeats(ctx context.Context, showID, count int) ([]catalog.Seat, error) {
	if count < 1 || count > MaxSeatsPerHold {
		return nil, seatflow.Errorf(seatflow.EINVALID, "count must be between 1 and %d", MaxSeatsPerHold)
	}
	st, err := s.Catalog.Showtime(ctx, showID)
	if err != nil {
		return nil, err
	}
	layout, err := s.layout(ctx, st.HallID)
	if err != nil {
		return nil, err
	}
	states, _, err := s.Seats.States(ctx, showID)
	if err != nil {
		return nil, err
	}
	return seats.BestSeats(layout.Hall, states, count, st.AllowSeatGaps), nil
}

// HallOf returns the hall (seat template) of a showtime. Halls never change once created,
// so it is the one decoded copy the hall's layout keeps: callers only read it.
func (s *Service) HallOf(ctx context.Context, showID int) (*catalog.Hall, error) {
	st, err := s.Catalog.Showtime(ctx, showID)
	if err != nil {
		return nil, err
	}
	l, err := s.layout(ctx, st.HallID)
	if err != nil {
		return nil, err
	}
	return l.Hall, nil
}
