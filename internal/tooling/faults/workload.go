package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// Operations of the workload.
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
	qHold     = `mutation FaultHold($in: HoldSeatsInput!) { holdSeats(input: $in) { id status seats { id } } }`
	qPay      = `mutation FaultPay($id: ID!, $ref: String!) { payOrder(orderId: $id, paymentRef: $ref) { id status seats { id } } }`
	qCancel   = `mutation FaultCancel($id: ID!) { cancelOrder(orderId: $id) { id status } }`
	qWatch    = `subscription FaultWatch($id: ID!) { seatMap(showtimeId: $id) { kind version seats { seat { id } status } } }`
)

// heldOrder is an order the workload holds and may pay or cancel.
type heldOrder struct {
	id    string
	cust  int
	seats []string
	// ref is the payment reference of its first pay: a retry (after SERVICE_UNAVAILABLE or
	// no answer) sends the same one, as a client retrying the same payment would.
	ref string
}

// Workload sends the bounded mix to the instances and records every answer.
type Workload struct {
	env *Env
	Rec *Recorder
	// Targets are the instances the workload sends to (default: all).
	Targets []*Instance

	mu      sync.Mutex
	rnd     *rand.Rand
	pending []*heldOrder
	free    []string // seat ids free in the last seat map read
	// Paid are the orders the workload saw answered PAID, by id.
	Paid    map[string]*heldOrder
	client  *http.Client
	next    int
	running sync.WaitGroup
	// holdOnly turns pays and cancels into holds: orders pile up unpaid (scenario 8 lets
	// them reach their expiry).
	holdOnly atomic.Bool
	// changes is held shared by every hold, pay and cancel the workload sends, and
	// exclusively by Alone.
	changes sync.RWMutex
}

// HoldOnly stops (true) or resumes (false) paying and cancelling.
func (w *Workload) HoldOnly(on bool) { w.holdOnly.Store(on) }

// Alone runs f once no hold, pay or cancel of the workload is in flight, and starts none
// until f returns (reads go on).
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

// one picks an operation and an instance and sends it.
func (w *Workload) one(ctx context.Context) {
	w.mu.Lock()
	in := w.Targets[w.next%len(w.Targets)]
	w.next++
	roll := w.rnd.IntN(100)
	if roll >= 80 && w.holdOnly.Load() {
		roll -= 30
	}
	cust := w.rnd.IntN(len(w.env.Tokens))
	var pend *heldOrder
	if roll >= 80 && len(w.pending) > 0 { // pay or cancel a pending order
		k := w.rnd.IntN(len(w.pending))
		pend = w.pending[k]
		w.pending = append(w.pending[:k], w.pending[k+1:]...)
	}
	var pick []string
	if roll >= 50 && roll < 80 && len(w.free) > 0 {
		for range 1 + w.rnd.IntN(2) {
			if id := w.free[w.rnd.IntN(len(w.free))]; !slices.Contains(pick, id) {
				pick = append(pick, id)
			}
		}
	}
	key := fmt.Sprintf("k%d", w.rnd.Uint64())
	w.mu.Unlock()
	show := w.env.Show.GQLID
	if roll >= 50 {
		w.changes.RLock()
		defer w.changes.RUnlock()
	}
	switch {
	case roll < 30:
		var out struct {
			SeatMap struct {
				Version int
				Seats   []struct {
					Seat   struct{ ID string }
					Status string
				}
			}
		}
		if w.send(ctx, in, OpSeatMap, "", qSeatMap, map[string]any{"id": show}, &out, func(s *Sample) { s.Version = out.SeatMap.Version }) == CodeOK {
			var free []string
			for _, s := range out.SeatMap.Seats {
				if s.Status == "AVAILABLE" {
					free = append(free, s.Seat.ID)
				}
			}
			w.mu.Lock()
			w.free = free
			w.mu.Unlock()
		}
	case roll < 42:
		w.send(ctx, in, OpShowtime, "", qShowtime, map[string]any{"id": show}, nil)
	case roll < 50:
		w.send(ctx, in, OpMovies, "", qMovies, nil, nil)
	case roll < 80:
		if len(pick) == 0 {
			return
		}
		var out struct{ HoldSeats struct{ ID string } }
		if w.send(ctx, in, OpHold, w.env.Tokens[cust], qHold, map[string]any{"in": map[string]any{
			"showtimeId": show, "seatIds": pick, "idempotencyKey": key}}, &out) == CodeOK {
			w.mu.Lock()
			w.pending = append(w.pending, &heldOrder{id: out.HoldSeats.ID, cust: cust, seats: pick})
			w.mu.Unlock()
		}
	case pend == nil:
		return
	case roll < 93:
		var out struct{ PayOrder struct{ Status string } }
		if pend.ref == "" {
			pend.ref = "fault-" + key
		}
		code := w.send(ctx, in, OpPay, w.env.Tokens[pend.cust], qPay, map[string]any{"id": pend.id, "ref": pend.ref}, &out)
		w.settle(pend, code, out.PayOrder.Status == "PAID")
	default:
		code := w.send(ctx, in, OpCancel, w.env.Tokens[pend.cust], qCancel, map[string]any{"id": pend.id}, nil)
		w.settle(pend, code, false)
	}
}

// settle records what became of a pending order: paid, gone, or (when the answer says a
// retry may succeed) pending again.
func (w *Workload) settle(o *heldOrder, code string, paid bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case paid:
		w.Paid[o.id] = o
	case code == seatflow.EUNAVAILABLE || code == CodeTimeout || code == CodeTransport || code == seatflow.EINPROGRESS:
		w.pending = append(w.pending, o)
	}
}

// send posts one GraphQL request to in, records it and returns its code (OK, the first
// error's extensions.code, or one of the recorder's own codes). The note functions add
// what an OK answer said to its sample.
func (w *Workload) send(ctx context.Context, in *Instance, op, token, query string, vars map[string]any, dst any, note ...func(*Sample)) string {
	code := CodeOK
	start := time.Now()
	defer func() {
		s := Sample{Op: op, Instance: in.Index, Start: start, Latency: time.Since(start), Code: code}
		if code == CodeOK {
			for _, f := range note {
				f(&s)
			}
		}
		w.Rec.add(s)
	}()
	ans, err := gqlclient.New(in.URL, w.client).Send(ctx, token, gqlclient.Body(query, vars))
	switch {
	case err != nil:
		code = failureCode(err)
	case ans.Code() != "":
		code = ans.Code()
	case dst != nil && json.Unmarshal(ans.Data, dst) != nil:
		code = CodeBadAnswer
	}
	return code
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
