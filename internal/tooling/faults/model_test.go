package faults

import (
	"os"
	"slices"
	"testing"
	"time"
)

// These tests feed the linearizability checker crafted histories (no stores, no
// instances: they run in every `go test`): the anomalies it exists to catch must fail it,
// and what a correct server may answer under faults (lost answers, orphan holds, late
// payments, expiry) must pass.

var t0 = time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC)

// at is t0 + ms milliseconds.
func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// call is a call sent at from and answered at to (ms).
func call(op string, from, to int, order int, code string) Call {
	return Call{Op: op, Start: at(from), End: at(to), Order: order, Code: code}
}

func hold(from, to, order int, code string, seats ...int) Call {
	c := call(OpHold, from, to, order, code)
	c.Seats = seats
	return c
}

// unavailable is a hold answered SEATS_UNAVAILABLE naming taken.
func unavailable(from, to int, seats []int, taken ...int) Call {
	c := hold(from, to, 0, "SEATS_UNAVAILABLE", seats...)
	c.Taken, c.Named = taken, true
	return c
}

func read(from, to, order int, status string) Call {
	c := call(OpOrder, from, to, order, CodeOK)
	c.Status = status
	return c
}

// history is calls with the final read at 10 s: seats as given (others free), orders as given.
func history(calls []Call, seats map[int]Answer, orders map[int]string) *History {
	h := &History{Calls: calls, Due: map[int]time.Time{}, FinalStart: at(10000), FinalEnd: at(10010),
		FinalSeats: map[int]Answer{}, FinalOrders: orders}
	for s := 1; s <= 4; s++ {
		h.FinalSeats[s] = seats[s]
	}
	return h
}

// refundSeats is a refundSeats of the order's seats answered code (status: the order's,
// when OK).
func refundSeats(from, to, order int, code, status string, seats ...int) Call {
	c := call(OpRefundSeats, from, to, order, code)
	c.Seats, c.Status = seats, status
	return c
}

// seatsCall is a staff call about seats (a block or an unblock) answered code; a
// SEATS_UNAVAILABLE names them all.
func seatsCall(op string, from, to int, code string, seats ...int) Call {
	c := call(op, from, to, 0, code)
	c.Seats = seats
	if code == "SEATS_UNAVAILABLE" {
		c.Taken, c.Named = seats, true
	}
	return c
}

func held(o int) Answer { return Answer{Owner: o} }
func sold(o int) Answer { return Answer{Owner: o, Sold: true} }

func TestCheckerCatches(t *testing.T) {
	cases := []struct {
		name    string
		h       *History
		due     map[int]int // order → ms its hold may first run out
		lost    map[int]int // seat → ms Redis lost its state
		illegal []string
	}{
		{name: "HoldRefusedWhileSeatFree", illegal: []string{"seat-1"}, h: history([]Call{
			hold(0, 10, 1, CodeOK, 1, 2),
			call(OpCancel, 20, 30, 1, CodeOK),
			unavailable(40, 50, []int{1, 3}, 1), // the cancel freed seat 1
		}, nil, map[int]string{1: orderCancelled})},
		{name: "SeatsNamedFreeWereHeld", illegal: []string{"seat-2"}, h: history([]Call{
			hold(0, 10, 1, CodeOK, 2),
			hold(0, 10, 2, CodeOK, 1),
			unavailable(20, 30, []int{1, 2}, 1), // seat 2 was held by order 1, not free
		}, map[int]Answer{1: held(2), 2: held(1)}, map[int]string{1: orderPending, 2: orderPending})},
		{name: "PaymentOKWithSeatsSoldToAnother", illegal: []string{"seat-3"}, due: map[int]int{1: 100}, h: history([]Call{
			hold(0, 10, 1, CodeOK, 3),
			read(200, 210, 1, orderExpired),
			hold(300, 310, 2, CodeOK, 3),
			call(OpPay, 320, 330, 2, CodeOK),
			call(OpPay, 400, 410, 1, CodeOK), // a late payment took seat 3 from order 2
		}, map[int]Answer{3: sold(2)}, map[int]string{1: orderPaid, 2: orderPaid})},
		{name: "CancelOKThatDidNotRelease", illegal: []string{"seat-4"}, h: history([]Call{
			hold(0, 10, 1, CodeOK, 4),
			call(OpCancel, 20, 30, 1, CodeOK),
		}, map[int]Answer{4: held(1)}, map[int]string{1: orderCancelled})},
		{name: "PaidAfterCancel", illegal: []string{"seat-1", "order-1"}, h: history([]Call{
			hold(0, 10, 1, CodeOK, 1),
			call(OpCancel, 20, 30, 1, CodeOK),
			call(OpPay, 40, 50, 1, CodeOK),
		}, map[int]Answer{1: sold(1)}, map[int]string{1: orderPaid})},
		{name: "ExpiredBeforeItsTime", illegal: []string{"order-1"}, due: map[int]int{1: 5000}, h: history([]Call{
			hold(0, 10, 1, CodeOK, 1),
			read(100, 110, 1, orderExpired),
		}, nil, map[int]string{1: orderExpired})},
		{name: "ExtendedAfterPaid", illegal: []string{"order-1"}, h: history([]Call{
			hold(0, 10, 1, CodeOK, 1),
			call(OpPay, 20, 30, 1, CodeOK),
			call(OpExtend, 40, 50, 1, CodeOK),
		}, map[int]Answer{1: sold(1)}, map[int]string{1: orderPaid})},
		{name: "RefundLeftSeatSold", illegal: []string{"seat-2"}, h: history([]Call{
			hold(0, 10, 1, CodeOK, 2),
			call(OpPay, 20, 30, 1, CodeOK),
			call(OpRefund, 40, 50, 1, CodeOK),
			hold(60, 70, 2, "SEATS_UNAVAILABLE", 2), // named below
		}, map[int]Answer{2: sold(1)}, map[int]string{1: orderCancelled})},
		{name: "RefundedSeatStillSold", illegal: []string{"seat-2"}, h: history([]Call{
			hold(0, 10, 1, CodeOK, 1, 2),
			call(OpPay, 20, 30, 1, CodeOK),
			refundSeats(40, 50, 1, CodeOK, orderPaid, 2),
		}, map[int]Answer{1: sold(1), 2: sold(1)}, map[int]string{1: orderPaid})},
		{name: "SomeSeatsRefundedOrderCancelled", illegal: []string{"order-1"}, h: history([]Call{
			hold(0, 10, 1, CodeOK, 1, 2),
			call(OpPay, 20, 30, 1, CodeOK),
			refundSeats(40, 50, 1, CodeOK, orderPaid, 2),
			read(60, 70, 1, orderCancelled),
		}, map[int]Answer{1: sold(1)}, map[int]string{1: orderCancelled})},
		{name: "HoldOfAHouseSeat", illegal: []string{"seat-3"}, h: history([]Call{
			seatsCall(OpBlock, 0, 10, CodeOK, 3),
			hold(20, 30, 1, CodeOK, 3),
		}, map[int]Answer{3: held(1)}, map[int]string{1: orderPending})},
		{name: "BlockedSeatFreeAtTheEnd", illegal: []string{"seat-3"}, h: history([]Call{
			seatsCall(OpBlock, 0, 10, CodeOK, 3),
		}, nil, nil)},
		// What a correct server may answer: all linearizable.
		{name: "HouseSeatBlockedAndGivenBack", h: history([]Call{
			seatsCall(OpBlock, 0, 10, CodeOK, 3),
			unavailable(20, 30, []int{3}, 3),      // a customer's hold of it is refused
			seatsCall(OpBlock, 40, 50, CodeOK, 3), // blocked again: kept so
			seatsCall(OpUnblock, 60, 70, CodeOK, 3),
			seatsCall(OpUnblock, 80, 90, CodeOK, 3), // not blocked: nothing changes
			hold(100, 110, 1, CodeOK, 3),
			seatsCall(OpBlock, 120, 130, "SEATS_UNAVAILABLE", 3), // held: refused, named
			seatsCall(OpBlock, 140, 5140, CodeTimeout, 4),        // it went through
		}, map[int]Answer{3: held(1), 4: {Owner: house}}, map[int]string{1: orderPending})},
		{name: "SomeSeatsRefundedAndSoldAgain", h: history([]Call{
			hold(0, 10, 1, CodeOK, 1, 2),
			call(OpPay, 20, 30, 1, CodeOK),
			refundSeats(40, 50, 1, CodeOK, orderPaid, 2),
			hold(60, 70, 2, CodeOK, 2),
			refundSeats(80, 90, 1, CodeOK, orderPaid, 2), // a repeat changes nothing
			read(100, 110, 1, orderPaid),
		}, map[int]Answer{1: sold(1), 2: held(2)}, map[int]string{1: orderPaid, 2: orderPending})},
		{name: "LostSeatRefundThenTheLastSeat", h: history([]Call{
			hold(0, 10, 1, CodeOK, 1, 2),
			call(OpPay, 20, 30, 1, CodeOK),
			refundSeats(40, 5040, 1, CodeTimeout, "", 2), // it went through
			refundSeats(6000, 6010, 1, CodeOK, orderCancelled, 1),
		}, nil, map[int]string{1: orderCancelled})},
		{name: "LostPaymentThenCancelRefused", h: history([]Call{
			hold(0, 10, 1, CodeOK, 1, 2),
			call(OpPay, 20, 5020, 1, CodeTimeout), // it went through after all
			call(OpCancel, 6000, 6010, 1, "INVALID_STATE"),
		}, map[int]Answer{1: sold(1), 2: sold(1)}, map[int]string{1: orderPaid})},
		{name: "LostPaymentThenCancelled", h: history([]Call{
			hold(0, 10, 1, CodeOK, 1),
			call(OpPay, 20, 30, 1, "SERVICE_UNAVAILABLE"), // it did not
			call(OpCancel, 40, 50, 1, CodeOK),
			hold(60, 70, 2, CodeOK, 1),
		}, map[int]Answer{1: held(2)}, map[int]string{1: orderCancelled, 2: orderPending})},
		{name: "LostHoldLeavesAnOrphan", h: history([]Call{
			hold(0, 5000, 0, CodeTimeout, 3),
			unavailable(6000, 6010, []int{3}, 3), // the lost hold has it
			hold(7000, 7010, 0, "PURCHASE_LIMIT_EXCEEDED", 4),
		}, map[int]Answer{3: {Owner: ghost}}, map[int]string{})},
		{name: "LateExpiryAndLatePayment", due: map[int]int{1: 100}, h: history([]Call{
			hold(0, 10, 1, CodeOK, 1, 2),
			read(50, 60, 1, orderPending),
			call(OpExtend, 150, 160, 1, "ORDER_EXPIRED"),
			read(200, 210, 1, orderExpired),
			call(OpPay, 300, 310, 1, CodeOK), // the seats were free again
			call(OpRefund, 400, 410, 1, CodeOK),
			call(OpRefund, 420, 430, 1, CodeOK), // a retry returns the order as it is
		}, nil, map[int]string{1: orderCancelled})},
		{name: "ConcurrentHoldsOneWins", h: history([]Call{
			hold(0, 100, 1, CodeOK, 1, 2),
			unavailable(10, 90, []int{2, 3}, 2), // after the first's script ran
			hold(20, 80, 2, CodeOK, 3),
		}, map[int]Answer{1: held(1), 2: held(1), 3: held(2)}, map[int]string{1: orderPending, 2: orderPending})},
		{name: "SeatsNamedFreeLostInRedis", lost: map[int]int{2: 15}, h: history([]Call{
			hold(0, 10, 1, CodeOK, 2),
			hold(0, 10, 2, CodeOK, 1),
			unavailable(20, 30, []int{1, 2}, 1), // Redis lost seat 2's hold: its script saw it free
		}, map[int]Answer{1: held(2), 2: held(1)}, map[int]string{1: orderPending, 2: orderPending})},
	}
	cases[7].h.Calls[3].Named, cases[7].h.Calls[3].Taken = true, []int{2}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for o, ms := range c.due {
				c.h.Due[o] = at(ms)
			}
			for seat, ms := range c.lost {
				if c.h.Lost == nil {
					c.h.Lost = map[int]time.Time{}
				}
				c.h.Lost[seat] = at(ms)
			}
			dir := t.TempDir()
			got := c.h.Check(dir, "case")
			if !slices.Equal(got.Illegal, c.illegal) {
				t.Fatalf("illegal partitions: got %v, want %v", got.Illegal, c.illegal)
			}
			if len(got.Undecided) > 0 {
				t.Fatalf("undecided: %v", got.Undecided)
			}
			if len(c.illegal) == 0 {
				if len(got.Failures()) > 0 || len(got.Files) > 0 {
					t.Fatalf("a linearizable history reported %v (files %v)", got.Failures(), got.Files)
				}
				return
			}
			if len(got.Failures()) == 0 {
				t.Fatal("no failure reported for a history with no linearization")
			}
			// One visualisation per illegal partition, and the history beside them.
			if len(got.Files) != len(c.illegal)+1 {
				t.Fatalf("files: got %v, want %d visualisations and the history", got.Files, len(c.illegal))
			}
			for _, f := range got.Files {
				if st, err := os.Stat(f); err != nil || st.Size() == 0 {
					t.Fatalf("visualisation %s: %v", f, err)
				}
			}
		})
	}
}

// TestStaleness measures crafted reads and frames against the linearization: seat 1 is
// held by order 1 during [0, 10] ms and freed by a cancel during [20, 30] ms.
func TestStaleness(t *testing.T) {
	h := history([]Call{hold(0, 10, 1, CodeOK, 1), call(OpCancel, 20, 30, 1, CodeOK)}, nil, map[int]string{1: orderCancelled})
	if got := h.Check(t.TempDir(), "case"); len(got.Illegal) > 0 {
		t.Fatalf("illegal: %v", got.Illegal)
	}
	reads := []SeatRead{
		{Start: at(25), End: at(35), Seats: map[int]string{1: "HELD"}},      // the cancel was in flight: current
		{Start: at(40), End: at(50), Seats: map[int]string{1: "HELD"}},      // 10 ms after the cancel returned
		{Start: at(12), End: at(15), Seats: map[int]string{1: "AVAILABLE"}}, // held since 10 ms: 2 ms stale
		{Start: at(5), End: at(8), Seats: map[int]string{1: "SOLD"}},        // never sold
	}
	r := h.readStaleness(reads)
	if r.Observations != 4 || r.Stale != 2 || r.Impossible != 1 || r.MaxMS != 10 {
		t.Errorf("reads: got %+v, want 4 observations, 2 stale (max 10 ms), 1 impossible", r)
	}
	watcher := map[int][]seen{1: {{at(3), "HELD"}, {at(34), "AVAILABLE"}}}
	late := map[int][]seen{1: {{at(12), "HELD"}}} // never told of the cancel
	f := h.frameLag([]map[int][]seen{watcher, late})
	if f.Observations != 4 || f.Stale != 2 || f.Missed != 1 || f.MaxMS != 4 {
		t.Errorf("frames: got %+v, want 4 observations, 2 late (max 4 ms), 1 missed", f)
	}
}

// TestCheckerWithWaitingList: with a waiting list, a seat freed may be returned to it
// (HELD to everyone) and then offered, an offer being a hold by the entrant's order; a
// double sale through an offer still has no linearization.
func TestCheckerWithWaitingList(t *testing.T) {
	cases := []struct {
		name    string
		h       *History
		illegal []string
	}{
		{name: "ReturnedSeatRefusedThenOffered", h: history([]Call{
			hold(0, 10, 1, CodeOK, 1),
			call(OpCancel, 20, 30, 1, CodeOK),
			unavailable(40, 50, []int{1}, 1), // returned to the list: held to everyone
			hold(55, 70, 2, CodeOK, 1),       // the offer (after its join at 55), seen by the entrant's poll at 70
		}, map[int]Answer{1: held(2)}, map[int]string{1: orderCancelled, 2: orderPending})},
		{name: "ReturnedSeatOnSaleAgain", h: history([]Call{
			hold(0, 10, 1, CodeOK, 1),
			call(OpCancel, 20, 30, 1, CodeOK),
			unavailable(40, 50, []int{1}, 1),
			hold(60, 70, 2, CodeOK, 1), // nobody fitted: on sale, held by a customer
		}, map[int]Answer{1: held(2)}, map[int]string{1: orderCancelled, 2: orderPending})},
		{name: "ReturnedSeatStillListedAtTheEnd", h: history([]Call{
			hold(0, 10, 1, CodeOK, 1),
			call(OpCancel, 20, 30, 1, CodeOK),
		}, map[int]Answer{1: {Owner: listed}}, map[int]string{1: orderCancelled})},
		{name: "OfferOfASeatSold", illegal: []string{"seat-1"}, h: history([]Call{
			hold(0, 10, 1, CodeOK, 1),
			call(OpPay, 20, 30, 1, CodeOK),
			hold(40, 50, 2, CodeOK, 1), // an offer of a seat order 1 bought
		}, map[int]Answer{1: held(2)}, map[int]string{1: orderPaid, 2: orderPending})},
		{name: "OfferOfASeatHeld", illegal: []string{"seat-1"}, h: history([]Call{
			hold(0, 10, 1, CodeOK, 1),
			hold(20, 30, 2, CodeOK, 1),
			call(OpCancel, 40, 50, 1, CodeOK),
		}, map[int]Answer{1: held(2)}, map[int]string{1: orderCancelled, 2: orderPending})},
		{name: "ListedWithoutARelease", illegal: []string{"seat-1"}, h: history([]Call{
			hold(0, 10, 1, CodeOK, 1),
		}, map[int]Answer{1: {Owner: listed}}, map[int]string{1: orderPending})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.h.Waitlist = true
			got := c.h.Check("", "case")
			if !slices.Equal(got.Illegal, c.illegal) || len(got.Undecided) > 0 {
				t.Fatalf("illegal partitions: got %v (undecided %v), want %v", got.Illegal, got.Undecided, c.illegal)
			}
		})
	}
	// Without a waiting list a seat cancelled is free: the refusal has no linearization.
	h := history(cases[0].h.Calls, map[int]Answer{1: held(2)}, map[int]string{1: orderCancelled, 2: orderPending})
	if got := h.Check("", "case"); !slices.Equal(got.Illegal, []string{"seat-1"}) {
		t.Fatalf("without a waiting list: illegal %v, want seat-1", got.Illegal)
	}
}
