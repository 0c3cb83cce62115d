// Package seats is the only code that changes seat state, and the one that reads it. Seat
// state lives only in Redis (docs/DESIGN.md "Redis"), changed only by the embedded Lua
// scripts; every script that changes a seat bumps the showtime's version and publishes
// the delta in the same script. The package also prepares halls for holds (Layout) and
// answers seat maps and best-seat suggestions from them.
package seats

import (
	"time"

	"seatflow"
)

// State is a seat's raw state in Redis, with the token for the reconciler.
type State struct {
	Status seatflow.SeatStatus // SeatAvailable, SeatHeld, SeatSold or SeatBlocked
	Token  string
	HeldAt time.Time // zero unless held; when returned, the time it was
	// Returned says the seat came back while the waiting list had entries waiting: HELD to
	// everyone, with no token, until the list offers it or puts it on sale.
	Returned bool
}

// Occupancy is a taken seat to overlay when a seat hash is built (an active order's seat).
type Occupancy struct {
	SeatID int
	UserID string
	Token  string
	Sold   bool
	HeldAt time.Time
}

// HoldRequest asks to hold seats of a showtime for one order.
type HoldRequest struct {
	ShowtimeID int
	Layout     *Layout // the showtime's hall: the rows for the gap rule
	SeatIDs    []int
	Token      string
	UserID     string
	Limit      int // purchase limit per user and showtime; 0 = no limit
	AllowGaps  bool
	// TakeOver is a token whose seats count as free to this hold (and already counted in
	// the user's limit): a late payment moves its order's seats to a fresh token, so a
	// delayed release of the old token cannot free them. Empty for ordinary holds.
	TakeOver string
	// UseBlocked lets the hold take blocked seats (house seats) as well as free ones: an
	// admin's hold with useBlocked.
	UseBlocked bool
	// NeedsAccessible says the customer needs an accessible seat: only then may a hold
	// take an ACCESSIBLE seat while a STANDARD or PREMIUM seat of the showtime is free.
	NeedsAccessible bool
	// Admission is the on-sale queue's gate: nil when the showtime has no queue (or the
	// hold is a late payment's, which its order's admission covers); otherwise the pass
	// the caller showed, checked by hold.lua with the hold.
	Admission *Admission
}

// Admission is what a hold knows of the caller's admission pass before hold.lua: its id
// and expiry once its signature, user, showtime and expiry were verified (package queue),
// or the zero value when the caller showed none or an invalid one.
type Admission struct {
	PassID    string
	ExpiresAt time.Time
}

// Delta is the JSON a seat-changing script publishes on the showtime's events channel.
// Deltas published before At and Trace existed read with both zero.
type Delta struct {
	Version int           `json:"version"`
	Changes []DeltaChange `json:"changes"`
	// At is when the change was made, in Unix ms of Redis' clock (one clock for every
	// instance); 0 when unknown.
	At int64 `json:"at,omitempty"`
	// Trace is the W3C traceparent of the span that made the change, "" when it was not
	// traced.
	Trace string `json:"trace,omitempty"`
}

// DeltaChange is one seat's new status in a Delta (seat id as a string, as Lua sends it).
type DeltaChange struct {
	SeatID string              `json:"seatId"`
	Status seatflow.SeatStatus `json:"status"`
}
