package seatflow

import (
	"slices"
	"time"
)

// ShowtimeStatus is where a showtime is in its life: SCHEDULED → ON_SALE ⇄ CLOSED, and
// CANCELLED from any of them.
type ShowtimeStatus string

// Showtime statuses.
const (
	ShowtimeScheduled ShowtimeStatus = "SCHEDULED"
	ShowtimeOnSale    ShowtimeStatus = "ON_SALE"
	ShowtimeClosed    ShowtimeStatus = "CLOSED"
	ShowtimeCancelled ShowtimeStatus = "CANCELLED"
)

// Values lists every showtime status (ent builds its enum column from it).
func (ShowtimeStatus) Values() []string {
	return []string{string(ShowtimeScheduled), string(ShowtimeOnSale), string(ShowtimeClosed), string(ShowtimeCancelled)}
}

// showtimeMoves are the status changes a showtime may make.
var showtimeMoves = map[ShowtimeStatus][]ShowtimeStatus{
	ShowtimeScheduled: {ShowtimeOnSale, ShowtimeCancelled},
	ShowtimeOnSale:    {ShowtimeClosed, ShowtimeCancelled},
	ShowtimeClosed:    {ShowtimeOnSale, ShowtimeCancelled},
}

// CanMoveTo reports whether a showtime in status s may change to status to.
func (s ShowtimeStatus) CanMoveTo(to ShowtimeStatus) bool {
	return slices.Contains(showtimeMoves[s], to)
}

// Showtime is one screening of a movie in a hall; CinemaID is the hall's cinema, whose
// time zone its day and local start are counted in.
type Showtime struct {
	ID            int            `json:"id"`
	MovieID       int            `json:"movieId"`
	HallID        int            `json:"hallId"`
	CinemaID      int            `json:"cinemaId"`
	StartsAt      time.Time      `json:"startsAt"`
	EndsAt        time.Time      `json:"endsAt"`
	Status        ShowtimeStatus `json:"status"`
	PurchaseLimit int            `json:"purchaseLimit"`
	AllowSeatGaps bool           `json:"allowSeatGaps"`
	Prices        []Price        `json:"prices"`
	Currency      string         `json:"currency"`
	// HasQueue says an on-sale queue decides who may hold its seats (OnSaleQueue): read
	// from MySQL by every hold, so a queue's state lost with Redis never opens the sale
	// to everyone.
	HasQueue bool `json:"hasQueue"`
	// UpdatedAt is the last change of the showtime's row (a reschedule, a status change):
	// what tells a wallet pass its content moved (internal/wallet LastUpdated).
	UpdatedAt time.Time `json:"updatedAt"`
}

// DefaultSalesCloseAfter is how long after its start a showtime's sales close by
// themselves (SEATFLOW_SALES_CLOSE_AFTER): latecomers may still buy while the trailers run.
const DefaultSalesCloseAfter = 15 * time.Minute

// SalesCloseAt is when the showtime's sales close by themselves: closeAfter after it
// starts. From then on no hold is made and no payment takes its seats, whatever its status
// still says.
func (s *Showtime) SalesCloseAt(closeAfter time.Duration) time.Time {
	return s.StartsAt.Add(closeAfter)
}

// QueueGates reports whether the showtime's on-sale queue decides who may hold its seats at
// now, as far as MySQL knows: it has one and has not started (its queue closes then). The
// queue's state in Redis may still say it gates nothing (SOLD_OUT, CLOSED); the hold
// script reads it with the hold.
func (s *Showtime) QueueGates(now time.Time) bool { return s.HasQueue && now.Before(s.StartsAt) }

// SalesEnded reports whether the showtime's sales have closed by themselves at now.
func (s *Showtime) SalesEnded(now time.Time, closeAfter time.Duration) bool {
	return !now.Before(s.SalesCloseAt(closeAfter))
}
