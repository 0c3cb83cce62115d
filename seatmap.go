package seatflow

// SeatStatus is a seat's state as clients see it: never who holds it.
type SeatStatus string

// Seat statuses.
const (
	SeatAvailable   SeatStatus = "AVAILABLE"
	SeatHeld        SeatStatus = "HELD"
	SeatSold        SeatStatus = "SOLD"
	SeatUnavailable SeatStatus = "UNAVAILABLE"
)

// SeatMapEventKind tells a full seat map from a change.
type SeatMapEventKind string

// Seat-map event kinds.
const (
	EventSnapshot SeatMapEventKind = "SNAPSHOT"
	EventDelta    SeatMapEventKind = "DELTA"
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
	Seat   Seat       `json:"seat"`
	Status SeatStatus `json:"status"`
}

// SeatMapEvent is what a seat-map subscription receives: a SNAPSHOT of every seat or a
// DELTA with only the seats that changed.
type SeatMapEvent struct {
	Kind       SeatMapEventKind `json:"kind"`
	ShowtimeID int              `json:"showtimeId"`
	Version    int              `json:"version"`
	Seats      []SeatState      `json:"seats"`
}
