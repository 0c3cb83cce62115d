package seatflow

// SeatStatus is a seat's state as clients see it: never who holds it.
type SeatStatus string

// Seat statuses.
const (
	SeatAvailable   SeatStatus = "AVAILABLE"
	SeatHeld        SeatStatus = "HELD"
	SeatSold        SeatStatus = "SOLD"
	SeatUnavailable SeatStatus = "UNAVAILABLE"
	// SeatBlocked is a house seat: kept off sale for one showtime by staff (blockSeats).
	SeatBlocked SeatStatus = "BLOCKED"
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

// SeatState is one seat of one showtime and its status.
type SeatState struct {
	ShowtimeID int        `json:"-"`
	Seat       Seat       `json:"seat"`
	Status     SeatStatus `json:"status"`
}

// SeatRef names one seat of one showtime: what a seat's state is the state of.
type SeatRef struct{ ShowtimeID, SeatID int }

// Ref is the seat and showtime s is the state of.
func (s SeatState) Ref() SeatRef { return SeatRef{ShowtimeID: s.ShowtimeID, SeatID: s.Seat.ID} }

// SeatMapEvent is what a seat-map subscription receives: a SNAPSHOT of every seat or a
// DELTA with only the seats that changed.
type SeatMapEvent struct {
	Kind       SeatMapEventKind `json:"kind"`
	ShowtimeID int              `json:"showtimeId"`
	// FromVersion is the version a client's map must be at to apply a DELTA; 0 for a
	// SNAPSHOT, which replaces any map.
	FromVersion int `json:"fromVersion"`
	Version     int `json:"version"`
	// Available is the number of seats free after the event.
	Available int         `json:"available"`
	Seats     []SeatState `json:"seats"`
}

// CheckSeatsOnce refuses a list of seats that names one seat twice (BAD_USER_INPUT naming
// it): a hold, a block and an unblock each ask for every seat once.
func CheckSeatsOnce(seatIDs []int) error {
	seen := make(map[int]bool, len(seatIDs))
	for _, id := range seatIDs {
		if seen[id] {
			return Errorf(EINVALID, "seat %d is listed twice", id)
		}
		seen[id] = true
	}
	return nil
}
