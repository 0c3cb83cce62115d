package faults

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"seatflow"
	"seatflow/internal/nodeid"
	"seatflow/internal/tooling/gqlclient"
)

// Operations of the workload (history.go names the rest).
const (
	OpSeatMap  = "seatMap"
	OpShowtime = "showtime" // catalog read: showtime, movie, hall with its seats
	OpMovies   = "movies"   // catalog read: the movie list
	OpHold     = "holdSeats"
	OpPay      = "payOrder"
	OpCancel   = "cancelOrder"
)

const (
	qSeatMap  = `query FaultSeatMap($id: ID!) { seatMap(showtimeId: $id) { version seats { seat { id } status } } }`
	qShowtime = `query FaultShowtime($id: ID!) { showtime(id: $id) { id startsAt status purchaseLimit prices { kind amountCents } movie { id title } hall { id name seats { id row number } } } }`
	qMovies   = `query FaultMovies { movies(first: 10) { edges { node { id title } } } }`
	qWatch    = `subscription FaultWatch($id: ID!) { seatMap(showtimeId: $id) { kind fromVersion version seats { seat { id } status } } }`
)

// mixEntry is one operation of the workload's mix: its share, and how it is sent.
type mixEntry struct {
	op     string
	weight int
	// change marks holds, payments, cancels, extends and refunds: Alone waits for them, and
	// HoldOnly turns all but holds into holds.
	change bool
	run    func(w *Workload, ctx context.Context, in *Instance)
}

// mix is the workload, in shares of 100: half reads, 30 % holds of 1–2 seats picked from
// the last map read, and the rest what customers and staff do with the orders held.
var mix = []mixEntry{
	{OpSeatMap, 24, false, (*Workload).readSeatMap},
	{OpShowtime, 10, false, func(w *Workload, ctx context.Context, in *Instance) {
		w.send(ctx, in, OpShowtime, "", qShowtime, map[string]any{"id": w.env.Show.GQLID}, nil)
	}},
	{OpMovies, 7, false, func(w *Workload, ctx context.Context, in *Instance) { w.send(ctx, in, OpMovies, "", qMovies, nil, nil) }},
	{OpHold, 30, true, (*Workload).holdFree},
	{OpOrder, 4, false, (*Workload).readOrder},
	{OpPay, 12, true, (*Workload).payPending},
	{OpCancel, 5, true, (*Workload).cancelPending},
	{OpExtend, 2, true, (*Workload).extendPending},
	{OpRefund, 2, true, (*Workload).refundPaid},
	{OpRefundSeats, 2, true, (*Workload).refundSomeSeats},
	{OpBlock, 1, true, (*Workload).blockFree},
	{OpUnblock, 1, true, (*Workload).unblockBlocked},
}

// heldOrder is an order the workload holds and may pay, cancel, extend, read or refund.
type heldOrder struct {
	id    string
	cust  int
	seats []string
	// ref is the payment reference of its first pay: a retry (after SERVICE_UNAVAILABLE or
	// no answer) sends the same one, as a client retrying the same payment would.
	ref string
	// offer marks a waiting-list offer's order (waitlist.go): its hold cannot be extended.
	offer bool
}

// Workload sends the bounded mix to the instances and records every answer.
type Workload struct {
	env *Env
	Rec *Recorder
	// Targets are the instances the workload sends to (default: all).
	Targets []*Instance

	mu      sync.Mutex
	rnd     *rand.Rand
	pending []*heldOrder // may be paid, cancelled or extended (out of it while one is in flight)
	paid    []*heldOrder // may be refunded
	orders  []*heldOrder // every order held, for order reads
	free    []string     // seat ids free in the last seat map read (and those released since)
	blocked []string     // seat ids blocked (or maybe, after a lost answer) by the workload's staff
	// Paid are the orders the workload saw answered PAID and never asked to refund, by id.
	Paid    map[string]*heldOrder
	client  *http.Client
	next    int
	running sync.WaitGroup
	// holdOnly turns pays, cancels, extends and refunds into holds: orders pile up unpaid
	// (scenario 8 lets them reach their expiry).
	holdOnly atomic.Bool
	// changes is held shared by every change the workload sends, and exclusively by Alone.
	changes sync.RWMutex
	// wl is the waiting list's part (nil without one) and extra its operations in the mix
	// (WithWaitlist).
	wl    *waitlist
	extra []mixEntry
}

// HoldOnly stops (true) or resumes (false) paying, cancelling, extending and refunding.
func (w *Workload) HoldOnly(on bool) { w.holdOnly.Store(on) }

// Alone runs f once no change of the workload is in flight, and starts none until f
// returns (reads go on).
func (w *Workload) Alone(f func()) {
	w.changes.Lock()
	defer w.changes.Unlock()
	f()
}

// NewWorkload prepares the mix over every instance of e.
func NewWorkload(e *Env) *Workload {
	w := &Workload{env: e, Rec: &Recorder{}, Targets: e.Instances, rnd: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 19)),
		Paid: map[string]*heldOrder{}, client: &http.Client{Timeout: e.Plan.Deadline + time.Second,
			Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	for _, id := range e.Show.SeatIDs {
		w.free = append(w.free, nodeid.Encode(nodeid.Seat, id))
	}
	return w
}

// Run sends the mix at the plan's rate for d; it returns when every request sent has
// been answered (or timed out).
func (w *Workload) Run(ctx context.Context, d time.Duration) {
	tick := time.NewTicker(time.Second / time.Duration(max(1, w.env.Plan.Rate)))
	defer tick.Stop()
	end := time.After(d)
	for {
		select {
		case <-ctx.Done():
			w.running.Wait()
			return
		case <-end:
			w.running.Wait()
			return
		case <-tick.C:
			w.running.Add(1)
			go func() { defer w.running.Done(); w.one(ctx) }()
		}
	}
}

// one picks an operation of the mix and an instance and sends it.
func (w *Workload) one(ctx context.Context) {
	w.mu.Lock()
	all := append(slices.Clip(mix), w.extra...)
	total := 0
	for _, m := range all {
		total += m.weight
	}
	in := w.Targets[w.next%len(w.Targets)]
	w.next++
	roll := w.rnd.IntN(total)
	w.mu.Unlock()
	var pick mixEntry
	for _, m := range all {
		if roll -= m.weight; roll < 0 {
			pick = m
			break
		}
	}
	if pick.change && w.holdOnly.Load() {
		pick.run = (*Workload).holdFree
	}
	if pick.change {
		w.changes.RLock()
		defer w.changes.RUnlock()
	}
	pick.run(w, ctx, in)
}

// take removes a random order from list (nil when it is empty).
func (w *Workload) take(list *[]*heldOrder) *heldOrder {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(*list) == 0 {
		return nil
	}
	k := w.rnd.IntN(len(*list))
	o := (*list)[k]
	*list = append((*list)[:k], (*list)[k+1:]...)
	return o
}

// give puts o back on list.
func (w *Workload) give(list *[]*heldOrder, o *heldOrder) {
	w.mu.Lock()
	*list = append(*list, o)
	w.mu.Unlock()
}

// retryable reports whether an answer leaves the order as the client knew it, or may:
// a customer would try again.
func retryable(code string) bool {
	return code == seatflow.EUNAVAILABLE || code == CodeTimeout || code == CodeTransport || code == seatflow.EINPROGRESS
}

// answer is one request as the workload saw it: its code, when it was sent and answered,
// and its errors.
type answer struct {
	code       string
	start, end time.Time
	errs       []gqlclient.Error
}

// send posts one GraphQL request to in, records it and returns its code (OK, the first
// error's extensions.code, or one of the recorder's own codes). The note functions add
// what an OK answer said to its sample.
func (w *Workload) send(ctx context.Context, in *Instance, op, token, query string, vars map[string]any, dst any, note ...func(*Sample)) string {
	return w.post(ctx, in, op, token, query, vars, dst, note...).code
}

// post is send, with the answer's times and errors.
func (w *Workload) post(ctx context.Context, in *Instance, op, token, query string, vars map[string]any, dst any, note ...func(*Sample)) answer {
	a := answer{code: CodeOK, start: time.Now()}
	ans, err := gqlclient.New(in.URL, w.client).Send(ctx, token, gqlclient.Body(query, vars))
	switch {
	case err != nil:
		a.code = failureCode(err)
	case ans.Code() != "":
		a.code, a.errs = ans.Code(), ans.Errors
	case dst != nil && json.Unmarshal(ans.Data, dst) != nil:
		a.code = CodeBadAnswer
	}
	a.end = time.Now()
	s := Sample{Op: op, Instance: in.Index, Start: a.start, Latency: a.end.Sub(a.start), Code: a.code}
	if a.code == CodeOK {
		for _, f := range note {
			f(&s)
		}
	}
	w.Rec.add(s)
	return a
}

// failureCode is the recorder's code of a request that got no GraphQL answer: an answer
// cut off while being read is the transport's failure, a deadline passed before the
// answer began a timeout.
func failureCode(err error) string {
	var cut *gqlclient.ReadError
	var ne interface{ Timeout() bool }
	switch {
	case errors.Is(err, gqlclient.ErrNotJSON):
		return CodeBadAnswer
	case errors.As(err, &cut):
		return CodeTransport
	case errors.As(err, &ne) && ne.Timeout():
		return CodeTimeout
	}
	return CodeTransport
}
