package faults

import (
	"slices"
	"time"

	"seatflow/internal/nodeid"
)

// Operations of the history beyond the read mix (record.go's Sample names them too).
const (
	OpExtend = "extendHold"
	OpRefund = "refundOrder" // admin: the staff's release of a paid order's seats
	// OpRefundSeats is the staff's refund of some seats of a paid order (refundSeats).
	OpRefundSeats = "refundSeats"
	// OpBlock and OpUnblock are the staff's house seats: one seat kept off sale, or given
	// back to sale (blockSeats, unblockSeats).
	OpBlock   = "blockSeats"
	OpUnblock = "unblockSeats"
	OpOrder   = "order" // a customer reads one of their orders
)

// Call is one hold, payment, cancel, extend, refund or order read as the client saw it:
// what was asked, when, and what came back. The checker (linearize.go) turns the calls
// into porcupine operations.
type Call struct {
	Op       string    `json:"op"`
	Instance int       `json:"instance"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Customer int       `json:"customer"`
	// Order is the order's database id (a hold's from its answer; 0 when it was lost).
	Order int    `json:"order,omitempty"`
	Seats []int  `json:"seats,omitempty"` // a hold's seats, or the seats a refundSeats, a block or an unblock named
	Ref   string `json:"ref,omitempty"`   // a payment's reference
	Key   string `json:"key,omitempty"`   // a hold's idempotency key
	Code  string `json:"code"`
	// Status is the order's status in an OK answer.
	Status string `json:"status,omitempty"`
	// Taken are the seats a SEATS_UNAVAILABLE answer named (Named: it named any).
	Taken []int `json:"taken,omitempty"`
	Named bool  `json:"named,omitempty"`
	// ExpiresAt is the hold's expiry in a hold's or an extend's OK answer.
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
}

// SeatRead is a seat map answered OK: when it was asked and what it said of each seat.
type SeatRead struct {
	Start, End time.Time
	Instance   int
	Version    int
	Seats      map[int]string // seat id → AVAILABLE, HELD, SOLD
}

func (r *Recorder) addCall(c Call) {
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

func (r *Recorder) addRead(s SeatRead) {
	r.mu.Lock()
	r.reads = append(r.reads, s)
	r.mu.Unlock()
}

// Calls returns a copy of the history's calls, in the order they were answered.
func (r *Recorder) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// SeatReads returns the seat maps read, in the order they were answered.
func (r *Recorder) SeatReads() []SeatRead {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reads)
}

// dbID is the database id of an API id ("" and ids of no node are 0).
func dbID(id string) int {
	_, parts, err := nodeid.Decode(id)
	if err != nil || len(parts) != 1 {
		return 0
	}
	return parts[0]
}

func dbIDs(ids []string) []int {
	out := make([]int, 0, len(ids))
	for _, id := range ids {
		out = append(out, dbID(id))
	}
	return out
}

// seatIDsOf reads the seatIds of a SEATS_UNAVAILABLE error's extensions.
func seatIDsOf(ext map[string]any) ([]int, bool) {
	raw, ok := ext["seatIds"].([]any)
	if !ok {
		return nil, false
	}
	var out []int
	for _, v := range raw {
		switch id := v.(type) {
		case string:
			out = append(out, dbID(id))
		case float64:
			out = append(out, int(id))
		}
	}
	return out, true
}
