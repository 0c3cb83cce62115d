package faults

import (
	"maps"
	"slices"
	"sync"
	"time"

	"seatflow/internal/tooling/gqlclient"
)

// Codes the recorder gives answers that carry no extensions.code of the product.
const (
	CodeOK        = "OK"
	CodeTimeout   = "TIMEOUT"        // no answer within the deadline + 1 s
	CodeTransport = "TRANSPORT"      // the connection failed
	CodeBadAnswer = "BAD_RESPONSE"   // not a GraphQL answer
	CodeNoCode    = gqlclient.NoCode // an error without extensions.code
)

// Sample is one request of the workload as the client saw it.
type Sample struct {
	Op       string
	Instance int
	Start    time.Time
	Latency  time.Duration
	Code     string
	// Version is the version of a seat map answered OK (0 otherwise).
	Version int
}

// Recorder keeps every request's sample and the fault's window.
type Recorder struct {
	mu       sync.Mutex
	samples  []Sample
	calls    []Call     // the history of holds, payments, cancels, extends, refunds, order reads
	reads    []SeatRead // the seat maps answered OK
	faultOn  time.Time
	faultOff time.Time
	// lost are the seats whose Redis state a fault lost (scenario 9), from when.
	lost map[int]time.Time
}

// SeatsLost records that a fault made Redis lose the state of seats from at on (their
// hold is in MySQL, Redis shows them free until the reconciler holds them again).
func (r *Recorder) SeatsLost(at time.Time, seats []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lost == nil {
		r.lost = map[int]time.Time{}
	}
	for _, s := range seats {
		if _, ok := r.lost[s]; !ok {
			r.lost[s] = at
		}
	}
}

// Lost returns the seats SeatsLost recorded.
func (r *Recorder) Lost() map[int]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.lost)
}

func (r *Recorder) add(s Sample) {
	r.mu.Lock()
	r.samples = append(r.samples, s)
	r.mu.Unlock()
}

// FaultOn marks the start of the fault, FaultOff its healing.
func (r *Recorder) FaultOn()  { r.mu.Lock(); r.faultOn = time.Now(); r.mu.Unlock() }
func (r *Recorder) FaultOff() { r.mu.Lock(); r.faultOff = time.Now(); r.mu.Unlock() }

// Samples returns a copy of the samples and the fault's window.
func (r *Recorder) Samples() (out []Sample, on, off time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.samples), r.faultOn, r.faultOff
}

// during reports whether s started while the fault was on.
func during(s Sample, on, off time.Time) bool {
	return !on.IsZero() && !s.Start.Before(on) && (off.IsZero() || s.Start.Before(off))
}

// p99 of the latencies (0 when there are none).
func p99(ls []time.Duration) time.Duration {
	if len(ls) == 0 {
		return 0
	}
	slices.Sort(ls)
	return ls[min(len(ls)-1, (len(ls)*99+99)/100-1)]
}

// changesSeats reports whether op may change seats: a hold, a payment, a cancel or a
// refund (an extend changes only the order's expiry).
func changesSeats(op string) bool { return isMutation(op) && op != OpExtend }

// isMutation reports whether op changes orders or seats.
func isMutation(op string) bool {
	switch op {
	case OpHold, OpPay, OpCancel, OpExtend, OpRefund, OpRefundSeats, OpBlock, OpUnblock:
		return true
	}
	return false
}
