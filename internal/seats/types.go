// Package seats is the only code that changes seat state. Seat state lives only in Redis
// (DESIGN.md "Redis"), changed only by the embedded Lua scripts; every script that changes
// a seat bumps the showtime's version and publishes the delta in the same script.
package seats

import "seatflow/internal/catalog"

// Seat statuses as clients see them (never who holds a seat).
const (
	StatusAvailable   = "AVAILABLE"
	StatusHeld        = "HELD"
	StatusSold        = "SOLD"
	StatusUnavailable = "UNAVAILABLE"
)

// Seat-map event kinds.
const (
	EventSnapshot = "SNAPSHOT"
	EventDelta    = "DELTA"
)

// SeatMap is the live state of every seat of a showtime at one version.
type SeatMap struct {
	ShowtimeID int         `json:"showtimeId"`
	Version    int         `json:"version"`
	Available  int         `json:"available"`
	Seats      []SeatState `json:"seats"`
}

// SeatState is one seat and its status.
type SeatState struct {
	Seat   catalog.Seat `json:"seat"`
	Status string       `json:"status"`
}

// SeatMapEvent is what a seat-map subscription receives: a SNAPSHOT of every seat or a
// DELTA with only the seats that changed.
type SeatMapEvent struct {
	Kind       string      `json:"kind"`
	ShowtimeID int         `json:"showtimeId"`
	Version    int         `json:"version"`
	Seats      []SeatState `json:"seats"`
}
