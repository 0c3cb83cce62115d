package seats

import (
	"context"

	"seatflow"
)

// ShowtimeReader reads a showtime (the catalog, through its cache: a showtime's hall
// never changes, so a cached copy is good enough to find it).
type ShowtimeReader interface {
	Showtime(ctx context.Context, id int) (*seatflow.Showtime, error)
}

// Maps answers the read side of seat state: seat maps and best-seat suggestions, the hall
// template from the catalog and the seat states from Redis (never cached).
type Maps struct {
	Store     *Store
	Layouts   *Layouts
	Showtimes ShowtimeReader
}

// SeatMap returns the live seat map of a showtime.
func (m *Maps) SeatMap(ctx context.Context, showID int) (*seatflow.SeatMap, error) {
	hall, err := m.HallOf(ctx, showID)
	if err != nil {
		return nil, err
	}
	return m.Store.Map(ctx, showID, hall)
}

// BestSeats suggests count seats for a showtime (see BestSeats for the rule); with
// accessible above 0, accessible ACCESSIBLE seats and the rest adjacent COMPANION seats
// (BestAccessibleSeats).
func (m *Maps) BestSeats(ctx context.Context, showID, count, accessible int) ([]seatflow.Seat, error) {
	if count < 1 || count > seatflow.MaxSeatsPerOrder {
		return nil, seatflow.Errorf(seatflow.EINVALID, "count must be between 1 and %d", seatflow.MaxSeatsPerOrder)
	}
	if accessible < 0 || accessible > count {
		return nil, seatflow.Errorf(seatflow.EINVALID, "accessible must be between 0 and count (%d)", count)
	}
	if accessible > 0 && !seatflow.CompanionsFit(accessible, count-accessible) {
		return nil, seatflow.Errorf(seatflow.EINVALID, "at most %d companion seats per accessible seat: ask for %d accessible seats or fewer seats",
			seatflow.MaxCompanions, seatflow.MinAccessible(count))
	}
	st, err := m.Showtimes.Showtime(ctx, showID)
	if err != nil {
		return nil, err
	}
	layout, err := m.Layouts.Of(ctx, st.HallID)
	if err != nil {
		return nil, err
	}
	states, _, err := m.Store.States(ctx, showID)
	if err != nil {
		return nil, err
	}
	if accessible > 0 {
		return BestAccessibleSeats(layout.Hall, states, count, accessible, st.AllowSeatGaps), nil
	}
	return BestSeats(layout.Hall, states, count, st.AllowSeatGaps), nil
}

// HallOf returns the hall (seat template) of a showtime: the one decoded copy its Layout
// keeps, which callers only read.
func (m *Maps) HallOf(ctx context.Context, showID int) (*seatflow.Hall, error) {
	st, err := m.Showtimes.Showtime(ctx, showID)
	if err != nil {
		return nil, err
	}
	l, err := m.Layouts.Of(ctx, st.HallID)
	if err != nil {
		return nil, err
	}
	return l.Hall, nil
}
