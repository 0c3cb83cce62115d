package booking_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/orderseat"
	"seatflow/ent/refund"
	"seatflow/ent/seatoccupancy"
	"seatflow/internal/reconcile"
)

// paidOrder holds the seats for the user as typed tickets and pays for them (the test
// provider).
func (e *env) paidOrder(t testing.TB, userID, key string, seats ...int) *seatflow.Order {
	t.Helper()
	o := e.mustHold(t, userID, key, seats...)
	paid, err := e.svc.PayOrder(context.Background(), userID, o.ID, "pay-"+key)
	if err != nil || paid.Status != seatflow.OrderPaid {
		t.Fatalf("pay %d: %+v, %v", o.ID, paid, err)
	}
	return paid
}

// refundRows are an order's refunds of some seats, oldest first.
func (e *env) refundRows(t testing.TB, orderID int) []*ent.Refund {
	t.Helper()
	rs, err := e.db.Refund.Query().Where(refund.OrderID(orderID), refund.Whole(false)).Order(ent.Asc(refund.FieldID)).All(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// wholeRefund reads the status of a payment's whole refund as stored (nil: none decided).
func (e *env) wholeRefund(t testing.TB, paymentID int) *seatflow.RefundStatus {
	t.Helper()
	rs, err := e.db.Refund.Query().Where(refund.PaymentID(paymentID), refund.Whole(true)).All(context.Background())
	if err != nil || len(rs) > 1 {
		t.Fatalf("whole refunds of payment %d: %d, %v", paymentID, len(rs), err)
	}
	if len(rs) == 0 {
		return nil
	}
	return &rs[0].Status
}

// occupied are the seats the order occupies in MySQL.
func (e *env) occupied(t testing.TB, orderID int) []int {
	t.Helper()
	ids, err := e.db.SeatOccupancy.Query().Where(seatoccupancy.OrderID(orderID)).Select(seatoccupancy.FieldSeatID).Ints(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	return ids
}

// verifyClean runs seatflow verify's check and fails on any violation.
func (e *env) verifyClean(t testing.TB) {
	t.Helper()
	vs, err := reconcile.Verify(context.Background(), e.db, e.store)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Error(v)
	}
}

// TestRefundSomeSeats: staff refund some seats of a paid order. Those seats go back on
// sale and leave the customer's count, the order stays PAID at the amount of the seats it
// keeps (its lines say which were refunded), and one refund of exactly their lines is
// recorded; the same call again changes nothing; the last seats left are the whole refund.
func TestRefundSomeSeats(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 3, 8, showOpts{limit: 4})
	a1, b1, b2, b3 := e.seat("A", 1), e.seat("B", 1), e.seat("B", 2), e.seat("B", 3)
	o := e.paidOrder(t, "alice", "k1", a1, b1, b2, b3) // 1500 + 3 × 1000
	if o.AmountCents != 4500 {
		t.Fatalf("amount = %d, want 4500", o.AmountCents)
	}

	got, err := e.svc.RefundSeats(ctx, "admin", o.ID, []int{a1, b2})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != seatflow.OrderPaid || got.AmountCents != 2000 {
		t.Fatalf("after refunding A1 and B2: %s %d, want PAID 2000", got.Status, got.AmountCents)
	}
	for _, l := range got.Lines {
		if want := l.SeatID == a1 || l.SeatID == b2; l.Refunded() != want {
			t.Errorf("line of seat %d refunded = %v, want %v", l.SeatID, l.Refunded(), want)
		}
	}
	for id, want := range map[int]seatflow.SeatStatus{a1: seatflow.SeatAvailable, b2: seatflow.SeatAvailable,
		b1: seatflow.SeatSold, b3: seatflow.SeatSold} {
		if st := e.state(t, id); st.Status != want {
			t.Errorf("seat %d is %s, want %s", id, st.Status, want)
		}
	}
	if n := e.count(t, "alice"); n != 2 {
		t.Errorf("alice's count = %d, want 2", n)
	}
	if occ := e.occupied(t, o.ID); !slices.Equal(occ, []int{b1, b3}) {
		t.Errorf("occupied = %v, want %v", occ, []int{b1, b3})
	}
	rs := e.refundRows(t, o.ID)
	if len(rs) != 1 || rs[0].AmountCents != 2500 || rs[0].Status != seatflow.RefundSucceeded || rs[0].CreatedBy != "admin" {
		t.Fatalf("refunds = %+v, want one of 2500 that the test provider took", rs)
	}
	e.verifyClean(t)
	// The purchase limit (4) counts the seats alice keeps: two more fit, in MySQL too.
	more := e.mustHold(t, "alice", "k2", e.seat("C", 1), e.seat("C", 2))
	if _, err := e.hold("alice", "k3", e.seat("C", 4)); seatflow.ErrorCode(err) != seatflow.ELIMIT {
		t.Fatalf("a fifth seat: %v, want PURCHASE_LIMIT_EXCEEDED", err)
	}
	if _, err := e.svc.CancelOrder(ctx, "alice", more.ID); err != nil {
		t.Fatal(err)
	}

	t.Run("RepeatChangesNothing", func(t *testing.T) {
		hash, counts := e.seatHash(t)
		again, err := e.svc.RefundSeats(ctx, "admin", o.ID, []int{b2, a1})
		if err != nil || again.AmountCents != 2000 || again.Status != seatflow.OrderPaid {
			t.Fatalf("again: %+v, %v", again, err)
		}
		if n := len(e.refundRows(t, o.ID)); n != 1 {
			t.Errorf("%d refunds after the repeat, want 1", n)
		}
		if h, c := e.seatHash(t); !maps.Equal(h, hash) || !maps.Equal(c, counts) {
			t.Errorf("Redis changed: %v %v, was %v %v", h, c, hash, counts)
		}
	})
	t.Run("RepeatWithANewSeatRefundsOnlyIt", func(t *testing.T) {
		got, err := e.svc.RefundSeats(ctx, "admin", o.ID, []int{a1, b1})
		if err != nil || got.AmountCents != 1000 || got.Status != seatflow.OrderPaid {
			t.Fatalf("refund A1 again with B1: %+v, %v", got, err)
		}
		if rs := e.refundRows(t, o.ID); len(rs) != 2 || rs[1].AmountCents != 1000 {
			t.Fatalf("refunds = %+v, want a second one of 1000", rs)
		}
	})
	t.Run("TheLastSeatIsTheWholeRefund", func(t *testing.T) {
		got, err := e.svc.RefundSeats(ctx, "admin", o.ID, []int{b3})
		if err != nil || got.Status != seatflow.OrderCancelled {
			t.Fatalf("refund the last seat: %+v, %v", got, err)
		}
		for _, l := range got.Lines {
			if !l.Refunded() {
				t.Errorf("line of seat %d not refunded", l.SeatID)
			}
		}
		if n := len(e.refundRows(t, o.ID)); n != 2 {
			t.Errorf("%d refunds of seats, want 2: the last seat is the payment's own refund", n)
		}
		p, err := e.svc.Payment(ctx, o.ID)
		if err != nil || p == nil || p.RefundStatus == nil || *p.RefundStatus != seatflow.RefundSucceeded {
			t.Fatalf("payment = %+v, %v, want its refund succeeded", p, err)
		}
		if st := e.state(t, b3); st.Status != seatflow.SeatAvailable {
			t.Errorf("B3 is %s, want AVAILABLE", st.Status)
		}
		if n := e.count(t, "alice"); n != 0 {
			t.Errorf("alice's count = %d, want 0", n)
		}
		// A cancelled order refunded whole: naming its seats again changes nothing.
		if again, err := e.svc.RefundSeats(ctx, "admin", o.ID, []int{b3, a1}); err != nil || again.Status != seatflow.OrderCancelled {
			t.Fatalf("again after the whole refund: %+v, %v", again, err)
		}
		e.verifyClean(t)
	})
}

// TestRefundSeatsRefusesBadInput: bad input is refused with a clear code and changes
// neither store.
func TestRefundSeatsRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 3, 8, showOpts{})
	a1, a2, b1 := e.seat("A", 1), e.seat("A", 2), e.seat("B", 1)
	paid := e.paidOrder(t, "alice", "k1", a1, a2)
	pending := e.mustHold(t, "bob", "k2", b1)
	many := make([]int, seatflow.MaxSeatsPerOrder+1)
	for i := range many {
		many[i] = a1 + i
	}
	for _, c := range []struct {
		name  string
		order int
		seats []int
		code  string
	}{
		{"NoSeat", paid.ID, nil, seatflow.EINVALID},
		{"TooMany", paid.ID, many, seatflow.EINVALID},
		{"ASeatTwice", paid.ID, []int{a1, a1}, seatflow.EINVALID},
		{"NotTheOrdersSeat", paid.ID, []int{a1, b1}, seatflow.EINVALID},
		{"APendingOrder", pending.ID, []int{b1}, seatflow.EINVALIDSTATE},
		{"NoSuchOrder", paid.ID + 1000, []int{a1}, seatflow.ENOTFOUND},
	} {
		t.Run(c.name, func(t *testing.T) {
			hash, counts := e.seatHash(t)
			_, err := e.svc.RefundSeats(ctx, "admin", c.order, c.seats)
			wantCode(t, err, c.code)
			if h, n := e.seatHash(t); !maps.Equal(h, hash) || !maps.Equal(n, counts) {
				t.Errorf("Redis changed: %v %v, was %v %v", h, n, hash, counts)
			}
			if n := len(e.refundRows(t, paid.ID)); n != 0 {
				t.Errorf("%d refunds recorded", n)
			}
			if o, err := e.svc.Order(ctx, "alice", paid.ID); err != nil || o.AmountCents != 3000 || slices.ContainsFunc(o.Lines, seatflow.OrderLine.Refunded) {
				t.Errorf("the order changed: %+v, %v", o, err)
			}
		})
	}
	t.Run("RedisAwayChangesNothing", func(t *testing.T) {
		_, err := e.withoutRedis(t).RefundSeats(ctx, "admin", paid.ID, []int{a1})
		wantCode(t, err, seatflow.EUNAVAILABLE)
		if o, err := e.svc.Order(ctx, "alice", paid.ID); err != nil || o.AmountCents != 3000 {
			t.Errorf("the order changed: %+v, %v", o, err)
		}
	})
}

// TestConcurrentSeatRefundsNeverRefundASeatTwice: staff at several desks refund
// overlapping seats of one order at once. Every seat is refunded once: the refunds add up
// to the lines refunded, the order's amount to the lines kept, and the stores agree.
func TestConcurrentSeatRefundsNeverRefundASeatTwice(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 3, 10, showOpts{limit: 10})
	var seats []int
	for n := 1; n <= 8; n++ {
		seats = append(seats, e.seat("B", n))
	}
	o := e.paidOrder(t, "alice", "k1", seats...)
	sets := [][]int{seats[0:3], seats[1:4], seats[2:5], seats[0:2], seats[3:6], seats[4:7], {seats[0], seats[6]}, seats[5:7]}
	var wg sync.WaitGroup
	errs := make([]error, len(sets))
	for i, set := range sets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = e.svc.RefundSeats(ctx, fmt.Sprint("desk", i), o.ID, set)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil && seatflow.ErrorCode(err) != seatflow.EINVALIDSTATE {
			t.Errorf("desk %d: %v", i, err)
		}
	}
	lines, err := e.db.OrderSeat.Query().Where(orderseat.OrderID(o.ID)).All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	refunded, kept := 0, 0
	for _, l := range lines {
		if l.RefundedAt != nil {
			refunded += *l.AmountCents
			if l.RefundID == nil {
				t.Errorf("seat %d refunded by no refund", l.SeatID)
			}
		} else {
			kept += *l.AmountCents
		}
	}
	sum := 0
	for _, r := range e.refundRows(t, o.ID) {
		sum += r.AmountCents
		n, err := e.db.OrderSeat.Query().Where(orderseat.RefundID(r.ID)).Count(ctx)
		if err != nil || n == 0 || n*1000 != r.AmountCents {
			t.Errorf("refund %d of %d cents covers %d seats (%v)", r.ID, r.AmountCents, n, err)
		}
	}
	after, err := e.svc.Order(ctx, "alice", o.ID)
	if err != nil {
		t.Fatal(err)
	}
	if sum != refunded || after.AmountCents != kept || refunded+kept != 8000 || refunded == 0 {
		t.Fatalf("refunds add up to %d, lines refunded %d, order amount %d, lines kept %d", sum, refunded, after.AmountCents, kept)
	}
	e.verifyClean(t)
}
