package faults

import (
	"context"
	"fmt"
	"slices"
	"time"

	"seatflow"
)

// The workload's operations on seats and orders: each is recorded as a Call of the
// history the linearizability checker checks (linearize.go).

const (
	qHold   = `mutation FaultHold($in: HoldSeatsInput!) { holdSeats(input: $in) { id status expiresAt seats { id } } }`
	qPay    = `mutation FaultPay($id: ID!, $ref: String!) { payOrder(orderId: $id, paymentRef: $ref) { id status seats { id } } }`
	qCancel = `mutation FaultCancel($id: ID!) { cancelOrder(orderId: $id) { id status } }`
	qExtend = `mutation FaultExtend($id: ID!) { extendHold(orderId: $id) { id status expiresAt } }`
	qRefund = `mutation FaultRefund($id: ID!) { refundOrder(orderId: $id) { id status } }`
	// qRefundSeats is the staff's refund of some seats of a paid order.
	qRefundSeats = `mutation FaultRefundSeats($id: ID!, $seats: [ID!]!) { refundSeats(orderId: $id, seatIds: $seats) { id status } }`
	qOrder       = `query FaultOrder($id: ID!) { order(id: $id) { id status } }`
	// qBlock and qUnblock keep one seat off sale and give it back (staff).
	qBlock   = `mutation FaultBlock($show: ID!, $seats: [ID!]!) { blockSeats(showtimeId: $show, seatIds: $seats, reason: "fault suite") { version } }`
	qUnblock = `mutation FaultUnblock($show: ID!, $seats: [ID!]!) { unblockSeats(showtimeId: $show, seatIds: $seats) { version } }`
)

// orderAnswer is the part of an order the workload reads in an answer.
type orderAnswer struct {
	ID        string
	Status    string
	ExpiresAt *time.Time
}

// record adds a call of the history from a request's answer.
func (w *Workload) record(op string, in *Instance, a answer, cust int, orderID string, out *orderAnswer, c Call) {
	c.Op, c.Instance, c.Start, c.End, c.Customer, c.Code = op, in.Index, a.start, a.end, cust, a.code
	if c.Order == 0 {
		c.Order = dbID(orderID)
	}
	if a.code == CodeOK && out != nil {
		c.Status = out.Status
		if out.ExpiresAt != nil {
			c.ExpiresAt = *out.ExpiresAt
		}
	}
	if a.code == seatflow.ESEATSUNAVAILABLE && len(a.errs) > 0 {
		c.Taken, c.Named = seatIDsOf(a.errs[0].Extensions)
	}
	w.Rec.addCall(c)
}

// readSeatMap reads the seat map; what it shows free is what the next holds pick from.
func (w *Workload) readSeatMap(ctx context.Context, in *Instance) {
	var out struct {
		SeatMap struct {
			Version int
			Seats   []struct {
				Seat   struct{ ID string }
				Status string
			}
		}
	}
	a := w.post(ctx, in, OpSeatMap, "", qSeatMap, map[string]any{"id": w.env.Show.GQLID}, &out,
		func(s *Sample) { s.Version = out.SeatMap.Version })
	if a.code != CodeOK {
		return
	}
	read := SeatRead{Start: a.start, End: a.end, Instance: in.Index, Version: out.SeatMap.Version, Seats: map[int]string{}}
	var free []string
	for _, s := range out.SeatMap.Seats {
		read.Seats[dbID(s.Seat.ID)] = s.Status
		if s.Status == "AVAILABLE" {
			free = append(free, s.Seat.ID)
		}
	}
	w.Rec.addRead(read)
	w.mu.Lock()
	w.free = free
	w.mu.Unlock()
}

// freed puts seats a client was told are on sale again back among those to pick.
func (w *Workload) freed(seats []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range seats {
		if !slices.Contains(w.free, s) {
			w.free = append(w.free, s)
		}
	}
}

// holdFree holds 1–2 seats the workload believes free, for a random customer.
func (w *Workload) holdFree(ctx context.Context, in *Instance) {
	w.mu.Lock()
	cust := w.rnd.IntN(len(w.env.Tokens))
	var pick []string
	for range 1 + w.rnd.IntN(2) {
		if len(w.free) == 0 {
			break
		}
		if id := w.free[w.rnd.IntN(len(w.free))]; !slices.Contains(pick, id) {
			pick = append(pick, id)
		}
	}
	key := fmt.Sprintf("k%d", w.rnd.Uint64())
	w.mu.Unlock()
	if len(pick) == 0 {
		return
	}
	if id, code := w.Hold(ctx, in, w.env.Tokens[cust], cust, pick, key); code == CodeOK {
		o := &heldOrder{id: id, cust: cust, seats: pick}
		w.mu.Lock()
		w.pending = append(w.pending, o)
		w.orders = append(w.orders, o)
		w.mu.Unlock()
	}
}

// Hold holds seats for the customer cust (token) with an idempotency key, records it,
// and returns the order's id ("" unless OK) and the answer's code.
func (w *Workload) Hold(ctx context.Context, in *Instance, token string, cust int, seats []string, key string) (string, string) {
	var out struct{ HoldSeats orderAnswer }
	a := w.post(ctx, in, OpHold, token, qHold, map[string]any{"in": map[string]any{
		"showtimeId": w.env.Show.GQLID, "seatIds": seats, "idempotencyKey": key}}, &out)
	w.record(OpHold, in, a, cust, out.HoldSeats.ID, &out.HoldSeats, Call{Seats: dbIDs(seats), Key: key})
	if a.code != CodeOK {
		return "", a.code
	}
	return out.HoldSeats.ID, a.code
}

// token is the bearer token of an order's customer.
func (w *Workload) token(o *heldOrder) string { return w.env.Tokens[o.cust] }

// readOrder reads one of the orders held, as its customer.
func (w *Workload) readOrder(ctx context.Context, in *Instance) {
	w.mu.Lock()
	var o *heldOrder
	if len(w.orders) > 0 {
		o = w.orders[w.rnd.IntN(len(w.orders))]
	}
	w.mu.Unlock()
	if o == nil {
		return
	}
	var out struct{ Order orderAnswer }
	a := w.post(ctx, in, OpOrder, w.token(o), qOrder, map[string]any{"id": o.id}, &out)
	w.record(OpOrder, in, a, o.cust, o.id, &out.Order, Call{})
}

// payPending pays a pending order (again with the same reference after a lost answer).
func (w *Workload) payPending(ctx context.Context, in *Instance) {
	o := w.take(&w.pending)
	if o == nil {
		return
	}
	if o.ref == "" {
		o.ref = fmt.Sprintf("fault-%s-%d", o.id, time.Now().UnixNano())
	}
	var out struct{ PayOrder orderAnswer }
	a := w.post(ctx, in, OpPay, w.token(o), qPay, map[string]any{"id": o.id, "ref": o.ref}, &out)
	w.record(OpPay, in, a, o.cust, o.id, &out.PayOrder, Call{Ref: o.ref})
	switch {
	case a.code == CodeOK && out.PayOrder.Status == "PAID":
		w.mu.Lock()
		w.Paid[o.id] = o
		w.paid = append(w.paid, o)
		w.mu.Unlock()
	case retryable(a.code):
		w.give(&w.pending, o)
	}
}

// cancelPending cancels a pending order; its seats may be picked again at once.
func (w *Workload) cancelPending(ctx context.Context, in *Instance) {
	o := w.take(&w.pending)
	if o == nil {
		return
	}
	var out struct{ CancelOrder orderAnswer }
	a := w.post(ctx, in, OpCancel, w.token(o), qCancel, map[string]any{"id": o.id}, &out)
	w.record(OpCancel, in, a, o.cust, o.id, &out.CancelOrder, Call{})
	switch {
	case a.code == CodeOK:
		w.freed(o.seats) // a customer who changed their mind may take them back
	case retryable(a.code):
		w.give(&w.pending, o)
	}
}

// extendHold extends a pending order's hold; it stays pending (an expired one may still
// be paid late).
func (w *Workload) extendPending(ctx context.Context, in *Instance) {
	o := w.take(&w.pending)
	if o == nil {
		return
	}
	if o.offer { // the next entry waits for its seats: the entrant pays or declines
		w.give(&w.pending, o)
		return
	}
	var out struct{ ExtendHold orderAnswer }
	a := w.post(ctx, in, OpExtend, w.token(o), qExtend, map[string]any{"id": o.id}, &out)
	w.record(OpExtend, in, a, o.cust, o.id, &out.ExtendHold, Call{})
	if a.code != seatflow.EINVALIDSTATE {
		w.give(&w.pending, o)
	}
}

// refundPaid has staff refund a paid order (its seats go back on sale); a refund whose
// answer was lost is sent again later, as staff would.
func (w *Workload) refundPaid(ctx context.Context, in *Instance) {
	o := w.take(&w.paid)
	if o == nil {
		return
	}
	w.mu.Lock()
	delete(w.Paid, o.id) // no longer promised PAID
	w.mu.Unlock()
	var out struct{ RefundOrder orderAnswer }
	a := w.post(ctx, in, OpRefund, w.env.Admin, qRefund, map[string]any{"id": o.id}, &out)
	w.record(OpRefund, in, a, o.cust, o.id, &out.RefundOrder, Call{})
	switch {
	case a.code == CodeOK:
		w.freed(o.seats)
	case retryable(a.code):
		w.give(&w.paid, o)
	}
}

// refundSomeSeats has staff refund one seat of a paid order of several seats: the order
// stays PAID with the others (the whole refund when a lost answer refunded them already).
// A refund whose answer was lost is sent again later, as staff would.
func (w *Workload) refundSomeSeats(ctx context.Context, in *Instance) {
	o := w.take(&w.paid)
	if o == nil {
		return
	}
	if len(o.seats) < 2 {
		w.give(&w.paid, o)
		return
	}
	w.mu.Lock()
	seat := o.seats[w.rnd.IntN(len(o.seats))]
	delete(w.Paid, o.id) // promised PAID again only by this answer
	w.mu.Unlock()
	var out struct{ RefundSeats orderAnswer }
	a := w.post(ctx, in, OpRefundSeats, w.env.Admin, qRefundSeats, map[string]any{"id": o.id, "seats": []string{seat}}, &out)
	w.record(OpRefundSeats, in, a, o.cust, o.id, &out.RefundSeats, Call{Seats: dbIDs([]string{seat})})
	switch {
	case a.code == CodeOK && out.RefundSeats.Status == "PAID":
		o.seats = slices.DeleteFunc(slices.Clone(o.seats), func(s string) bool { return s == seat })
		w.freed([]string{seat})
		w.mu.Lock()
		w.Paid[o.id] = o
		w.mu.Unlock()
		w.give(&w.paid, o)
	case a.code == CodeOK: // the whole order: a lost answer had refunded the other seats
		w.freed(o.seats)
	case retryable(a.code):
		w.give(&w.paid, o)
	}
}

// blockFree has staff keep a seat the workload believes free off sale (a house seat); the
// answer refuses a seat taken meanwhile (SEATS_UNAVAILABLE naming it). One whose answer
// was lost may be blocked: it is unblocked later, as staff would clear it up.
func (w *Workload) blockFree(ctx context.Context, in *Instance) {
	w.mu.Lock()
	if len(w.free) == 0 {
		w.mu.Unlock()
		return
	}
	seat := w.free[w.rnd.IntN(len(w.free))]
	w.free = slices.DeleteFunc(w.free, func(s string) bool { return s == seat })
	w.mu.Unlock()
	vars := map[string]any{"show": w.env.Show.GQLID, "seats": []string{seat}}
	a := w.post(ctx, in, OpBlock, w.env.Admin, qBlock, vars, nil)
	w.record(OpBlock, in, a, 0, "", nil, Call{Seats: dbIDs([]string{seat})})
	if a.code == CodeOK || retryable(a.code) {
		w.mu.Lock()
		w.blocked = append(w.blocked, seat)
		w.mu.Unlock()
	}
}

// unblockBlocked has staff give a house seat back to sale; one whose answer was lost is
// unblocked again later.
func (w *Workload) unblockBlocked(ctx context.Context, in *Instance) {
	w.mu.Lock()
	if len(w.blocked) == 0 {
		w.mu.Unlock()
		return
	}
	k := w.rnd.IntN(len(w.blocked))
	seat := w.blocked[k]
	w.blocked = append(w.blocked[:k], w.blocked[k+1:]...)
	w.mu.Unlock()
	vars := map[string]any{"show": w.env.Show.GQLID, "seats": []string{seat}}
	a := w.post(ctx, in, OpUnblock, w.env.Admin, qUnblock, vars, nil)
	w.record(OpUnblock, in, a, 0, "", nil, Call{Seats: dbIDs([]string{seat})})
	switch {
	case a.code == CodeOK:
		w.freed([]string{seat})
	case retryable(a.code):
		w.mu.Lock()
		w.blocked = append(w.blocked, seat)
		w.mu.Unlock()
	}
}
