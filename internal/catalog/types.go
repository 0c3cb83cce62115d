// Package catalog owns cinemas (with their time zones), movies, halls (with their seat templates) and showtimes: reads
// through the two-level catalog cache, admin writes with their input rules, and the cache
// keys each write invalidates. It never touches seat state (package seats does).
package catalog

import (
	"time"

	"seatflow"
)

// MovieInput creates or replaces a movie's details.
type MovieInput struct {
	Title           string   `json:"title"`
	Synopsis        *string  `json:"synopsis"`
	DurationMinutes int      `json:"durationMinutes"`
	Rating          *string  `json:"rating"`
	Genres          []string `json:"genres"`
	PosterURL       *string  `json:"posterUrl"`
}

// HallInput creates a hall; rows are laid out front (first) to back. Without a cinema the
// hall joins the default cinema (the oldest: the one the migration makes).
type HallInput struct {
	Name     string         `json:"name"`
	Rows     []HallRowInput `json:"rows"`
	CinemaID *int           `json:"cinemaId"`
}

// CinemaInput creates or replaces a cinema's details; TimeZone is an IANA name.
type CinemaInput struct {
	Name     string  `json:"name"`
	TimeZone string  `json:"timeZone"`
	Address  *string `json:"address"`
}

// HallRowInput is one row of seats numbered 1..Seats.
type HallRowInput struct {
	Label      string             `json:"label"`
	Seats      int                `json:"seats"`
	Kind       *seatflow.SeatKind `json:"kind"`
	Unsellable []int              `json:"unsellable"`
	// Accessible and Companion are numbers of the row's seats of those kinds, whatever Kind
	// says.
	Accessible []int `json:"accessible"`
	Companion  []int `json:"companion"`
}

// ShowtimeInput schedules a showtime; EndsAt is StartsAt plus the movie's duration.
type ShowtimeInput struct {
	MovieID       int          `json:"movieId"`
	HallID        int          `json:"hallId"`
	StartsAt      time.Time    `json:"startsAt"`
	Prices        []PriceInput `json:"prices"`
	PurchaseLimit *int         `json:"purchaseLimit"`
	AllowSeatGaps *bool        `json:"allowSeatGaps"`
}

// PriceInput is the price of one seat kind for one ticket type (ADULT when empty).
type PriceInput struct {
	Kind        seatflow.SeatKind   `json:"kind"`
	TicketType  seatflow.TicketType `json:"ticketType"`
	AmountCents int                 `json:"amountCents"`
}
