// Package catalog owns movies, halls (with their seat templates) and showtimes: reads
// through the two-level catalog cache, admin writes with their input rules, and the cache
// keys each write invalidates. It never touches seat state (package seats does).
package catalog

import "time"

// Movie statuses.
const (
	MovieListed   = "LISTED"
	MovieDelisted = "DELISTED"
)

// Showtime statuses.
const (
	ShowtimeScheduled = "SCHEDULED"
	ShowtimeOnSale    = "ON_SALE"
	ShowtimeClosed    = "CLOSED"
	ShowtimeCancelled = "CANCELLED"
)

// Seat kinds.
const (
	SeatStandard   = "STANDARD"
	SeatPremium    = "PREMIUM"
	SeatAccessible = "ACCESSIBLE"
)

// SeatKinds lists every seat kind.
var SeatKinds = []string{SeatStandard, SeatPremium, SeatAccessible}

// Movie is a film the cinema lists.
type Movie struct {
	ID              int      `json:"id"`
	Title           string   `json:"title"`
	Synopsis        string   `json:"synopsis"`
	DurationMinutes int      `json:"durationMinutes"`
	Rating          string   `json:"rating"`
	Genres          []string `json:"genres"`
	PosterURL       string   `json:"posterUrl"`
	Status          string   `json:"status"`
}

// Hall is a screen room with its seat template, ordered by row then number.
type Hall struct {
	ID    int    `json:"id"`
	Name  string `json:"name"`
	Seats []Seat `json:"seats"`
}

// Seat is one seat of a hall; X and Y place it for drawing.
type Seat struct {
	ID       int    `json:"id"`
	HallID   int    `json:"hallId"`
	Row      string `json:"row"`
	Number   int    `json:"number"`
	X        int    `json:"x"`
	Y        int    `json:"y"`
	Kind     string `json:"kind"`
	Sellable bool   `json:"sellable"`
}

// Showtime is one screening of a movie in a hall.
type Showtime struct {
	ID            int       `json:"id"`
	MovieID       int       `json:"movieId"`
	HallID        int       `json:"hallId"`
	StartsAt      time.Time `json:"startsAt"`
	EndsAt        time.Time `json:"endsAt"`
	Status        string    `json:"status"`
	PurchaseLimit int       `json:"purchaseLimit"`
	AllowSeatGaps bool      `json:"allowSeatGaps"`
	Prices        []Price   `json:"prices"`
	Currency      string    `json:"currency"`
}

// Price is what one seat of a kind costs at a showtime.
type Price struct {
	Kind        string `json:"kind"`
	AmountCents int    `json:"amountCents"`
}

// MovieInput creates or replaces a movie's details.
type MovieInput struct {
	Title           string   `json:"title"`
	Synopsis        *string  `json:"synopsis"`
	DurationMinutes int      `json:"durationMinutes"`
	Rating          *string  `json:"rating"`
	Genres          []string `json:"genres"`
	PosterURL       *string  `json:"posterUrl"`
}

// HallInput creates a hall; rows are laid out front (first) to back.
type HallInput struct {
	Name string         `json:"name"`
	Rows []HallRowInput `json:"rows"`
}

// HallRowInput is one row of seats numbered 1..Seats.
type HallRowInput struct {
	Label      string  `json:"label"`
	Seats      int     `json:"seats"`
	Kind       *string `json:"kind"`
	Unsellable []int   `json:"unsellable"`
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

// PriceInput is the price of one seat kind.
type PriceInput struct {
	Kind        string `json:"kind"`
	AmountCents int    `json:"amountCents"`
}

// SeatsByID returns the seats with the given ids, in the order of seats.
func SeatsByID(seats []Seat, ids []int) []Seat {
	want := make(map[int]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	var out []Seat
	for _, s := range seats {
		if want[s.ID] {
			out = append(out, s)
		}
	}
	return out
}
