package booking_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"seatflow"
	"seatflow/internal/booking"
)

// childAndSenior are a showtime's prices beyond the ADULT ones (STANDARD 1000, PREMIUM
// 1500): children pay less for both kinds, seniors only have a STANDARD price.
var childAndSenior = []seatflow.Price{
	{Kind: seatflow.SeatStandard, TicketType: seatflow.TicketChild, AmountCents: 600},
	{Kind: seatflow.SeatPremium, TicketType: seatflow.TicketChild, AmountCents: 900},
	{Kind: seatflow.SeatStandard, TicketType: seatflow.TicketSenior, AmountCents: 700},
}

func (e *env) holdTyped(userID, key string, seats ...booking.SeatTicketInput) (*seatflow.Order, error) {
	return e.svc.HoldSeats(context.Background(), userID, booking.HoldSeatsInput{ShowtimeID: e.show, Seats: seats, IdempotencyKey: key})
}

func typed(seatID int, typ seatflow.TicketType) booking.SeatTicketInput {
	return booking.SeatTicketInput{SeatID: seatID, TicketType: typ}
}

// seatHash is the showtime's whole seat hash in Redis, and the customers' counts.
func (e *env) seatHash(t testing.TB) (map[string]string, map[string]string) {
	t.Helper()
	ctx := context.Background()
	h, err := e.rdb.HGetAll(ctx, e.store.Keys.Seats(e.show)).Result()
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.rdb.HGetAll(ctx, e.store.Keys.Limits(e.show)).Result()
	if err != nil {
		t.Fatal(err)
	}
	return h, c
}

// TestMixedOrderIsPricedPerSeat holds an adult, a child and a senior seat of two kinds in
// one order: the amount is the sum of each seat's (kind, type) price, and the lines keep
// each seat's type and price, through payment, tickets and a reread.
func TestMixedOrderIsPricedPerSeat(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 3, 6, showOpts{ticketPrices: childAndSenior})
	a1, a2, b1, b2 := e.seat("A", 1), e.seat("A", 2), e.seat("B", 1), e.seat("B", 2)
	o, err := e.holdTyped("u1", "k1", typed(b2, seatflow.TicketSenior), typed(a1, seatflow.TicketAdult),
		typed(a2, seatflow.TicketChild), typed(b1, seatflow.TicketChild))
	if err != nil {
		t.Fatal(err)
	}
	want := []seatflow.OrderLine{
		{ShowtimeID: e.show, SeatID: a1, TicketType: seatflow.TicketAdult, AmountCents: 1500},
		{ShowtimeID: e.show, SeatID: a2, TicketType: seatflow.TicketChild, AmountCents: 900},
		{ShowtimeID: e.show, SeatID: b1, TicketType: seatflow.TicketChild, AmountCents: 600},
		{ShowtimeID: e.show, SeatID: b2, TicketType: seatflow.TicketSenior, AmountCents: 700},
	}
	check := func(when string, got *seatflow.Order) {
		t.Helper()
		if got.AmountCents != 3700 {
			t.Errorf("%s: amount = %d, want 3700", when, got.AmountCents)
		}
		if !slices.Equal(got.Lines, want) {
			t.Errorf("%s: lines = %+v, want %+v", when, got.Lines, want)
		}
		if !slices.Equal(got.SeatIDs, []int{a1, a2, b1, b2}) {
			t.Errorf("%s: seats = %v", when, got.SeatIDs)
		}
	}
	check("held", o)
	reread, err := e.svc.Order(ctx, "u1", o.ID)
	if err != nil {
		t.Fatal(err)
	}
	check("reread", reread)
	paid, err := e.svc.PayOrder(ctx, "u1", o.ID, "p1")
	if err != nil {
		t.Fatal(err)
	}
	check("paid", paid)

	// seatIds is ADULT for every seat.
	adult := e.mustHold(t, "u2", "k2", e.seat("C", 1), e.seat("A", 6))
	if adult.AmountCents != 2500 || adult.Lines[0].TicketType != seatflow.TicketAdult || adult.Lines[1].TicketType != seatflow.TicketAdult {
		t.Errorf("seatIds order = %d %+v, want 2500 of ADULT lines", adult.AmountCents, adult.Lines)
	}
}

// TestUnpricedCombinationHoldsNothing asks for a seat whose (kind, type) the showtime has
// no price for: BAD_USER_INPUT naming the seat, no order, and Redis exactly as before.
func TestUnpricedCombinationHoldsNothing(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 2, 6, showOpts{ticketPrices: childAndSenior})
	e.mustHold(t, "u0", "k0", e.seat("B", 6)) // something in the hash besides free seats
	seatsBefore, countsBefore := e.seatHash(t)
	// A PREMIUM seat has no SENIOR price; STUDENT has none at all.
	for _, c := range []struct {
		seats []booking.SeatTicketInput
		label string
	}{
		{[]booking.SeatTicketInput{typed(e.seat("B", 1), seatflow.TicketSenior), typed(e.seat("A", 1), seatflow.TicketSenior)}, "A1"},
		{[]booking.SeatTicketInput{typed(e.seat("B", 2), seatflow.TicketStudent)}, "B2"},
	} {
		_, err := e.holdTyped("u1", "k-"+c.label, c.seats...)
		wantCode(t, err, seatflow.EINVALID)
		if msg := err.(*seatflow.Error).Message; !strings.Contains(msg, "seat "+c.label) {
			t.Errorf("message %q does not name seat %s", msg, c.label)
		}
	}
	seatsAfter, countsAfter := e.seatHash(t)
	if !maps.Equal(seatsBefore, seatsAfter) || !maps.Equal(countsBefore, countsAfter) {
		t.Errorf("Redis changed:\nseats %v\n   -> %v\ncounts %v -> %v", seatsBefore, seatsAfter, countsBefore, countsAfter)
	}
	if n := e.db.Order.Query().CountX(ctx); n != 1 {
		t.Errorf("%d orders, want only the first", n)
	}
}

// TestHoldInputTakesSeatIdsOrSeats refuses both and neither, and an unknown type.
func TestHoldInputTakesSeatIdsOrSeats(t *testing.T) {
	e := newEnv(t, 2, 6, showOpts{ticketPrices: childAndSenior})
	ctx := context.Background()
	for name, in := range map[string]booking.HoldSeatsInput{
		"Both":    {SeatIDs: []int{e.seat("B", 1)}, Seats: []booking.SeatTicketInput{typed(e.seat("B", 2), seatflow.TicketChild)}},
		"Neither": {},
		"Unknown": {Seats: []booking.SeatTicketInput{typed(e.seat("B", 2), "PET")}},
		"Twice":   {Seats: []booking.SeatTicketInput{typed(e.seat("B", 2), seatflow.TicketChild), typed(e.seat("B", 2), seatflow.TicketAdult)}},
	} {
		in.ShowtimeID, in.IdempotencyKey = e.show, "k-"+name
		_, err := e.svc.HoldSeats(ctx, "u1", in)
		if seatflow.ErrorCode(err) != seatflow.EINVALID {
			t.Errorf("%s: %v, want BAD_USER_INPUT", name, err)
		}
	}
}

// TestPurchaseLimitCountsSeatsNotTypes: a limit of 3 lets three seats of three types
// through and refuses a fourth, whatever its type.
func TestPurchaseLimitCountsSeatsNotTypes(t *testing.T) {
	e := newEnv(t, 2, 8, showOpts{limit: 3, ticketPrices: childAndSenior})
	if _, err := e.holdTyped("u1", "k1", typed(e.seat("B", 1), seatflow.TicketChild), typed(e.seat("B", 2), seatflow.TicketSenior)); err != nil {
		t.Fatal(err)
	}
	_, err := e.holdTyped("u1", "k2", typed(e.seat("B", 3), seatflow.TicketChild), typed(e.seat("B", 4), seatflow.TicketChild))
	wantCode(t, err, seatflow.ELIMIT)
	if _, err := e.holdTyped("u1", "k3", typed(e.seat("B", 3), seatflow.TicketAdult)); err != nil {
		t.Fatalf("the third seat: %v", err)
	}
	_, err = e.holdTyped("u1", "k4", typed(e.seat("B", 5), seatflow.TicketChild))
	wantCode(t, err, seatflow.ELIMIT)
	if got := e.count(t, "u1"); got != 3 {
		t.Errorf("count = %d, want 3", got)
	}
}

// TestRefundAndLatePaymentKeepLines: an order paid late (after its expiry) and then
// refunded keeps its lines, types and amounts, the refund marking each refunded; its
// tickets carry the types.
func TestRefundAndLatePaymentKeepLines(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 2, 8, showOpts{ticketPrices: childAndSenior})
	o, err := e.holdTyped("u1", "k1", typed(e.seat("A", 1), seatflow.TicketChild), typed(e.seat("B", 1), seatflow.TicketSenior))
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(o.Lines)
	e.clock.Advance(16 * time.Minute)
	if n, err := e.svc.ExpireDue(ctx); err != nil || n != 1 {
		t.Fatalf("ExpireDue = %d, %v", n, err)
	}
	paid, err := e.svc.PayOrder(ctx, "u1", o.ID, "late")
	if err != nil || paid.Status != seatflow.OrderPaid {
		t.Fatalf("late payment = %+v, %v", paid, err)
	}
	if !slices.Equal(paid.Lines, want) || paid.AmountCents != 1600 {
		t.Errorf("after the late payment: %d %+v, want 1600 %+v", paid.AmountCents, paid.Lines, want)
	}
	refunded, err := e.svc.RefundOrder(ctx, o.ID)
	if err != nil || refunded.Status != seatflow.OrderCancelled {
		t.Fatalf("refund = %+v, %v", refunded, err)
	}
	now := e.clock.Now()
	for i := range want {
		want[i].RefundedAt = &now
	}
	if !slices.EqualFunc(refunded.Lines, want, sameLine) || refunded.AmountCents != 1600 {
		t.Errorf("after the refund: %d %+v, want 1600 %+v", refunded.AmountCents, refunded.Lines, want)
	}
	if again, err := e.svc.Order(ctx, "u1", o.ID); err != nil || !slices.EqualFunc(again.Lines, want, sameLine) {
		t.Errorf("read again: %+v, %v; want lines %+v", again, err, want)
	}
}

// sameLine compares two order lines, their refund times as instants.
func sameLine(a, b seatflow.OrderLine) bool {
	sameTime := (a.RefundedAt == nil) == (b.RefundedAt == nil) && (a.RefundedAt == nil || a.RefundedAt.Equal(*b.RefundedAt))
	a.RefundedAt, b.RefundedAt = nil, nil
	return a == b && sameTime
}
