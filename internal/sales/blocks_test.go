package sales_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"seatflow"
)

// TestBlockSeats: house seats. Blocking writes a row per seat and shows the seat BLOCKED;
// a held or sold seat is refused (SEATS_UNAVAILABLE naming it, no row) while the others
// are blocked all the same; a seat blocked again keeps its first reason. Unblocking gives
// the seats back to sale and drops their rows; seats not blocked are left as they are.
func TestBlockSeats(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	show, hall := e.showtime(seatflow.ShowtimeOnSale, 0)
	a1, a2, a3, b1 := seat(hall, "A", 1), seat(hall, "A", 2), seat(hall, "A", 3), seat(hall, "B", 1)
	e.order("alice", show, seatflow.OrderPaid, a3)
	if _, err := e.svc.InitSeats(ctx, show, hall.ID); err != nil {
		t.Fatal(err)
	}
	m, refused, err := e.svc.BlockSeats(ctx, "admin-1", show, []int{a1, a2, a3}, "  press  ")
	if err != nil {
		t.Fatal(err)
	}
	if refused == nil || refused.Code != seatflow.ESEATSUNAVAILABLE || !strings.Contains(refused.Message, "A3") {
		t.Fatalf("refused = %+v, want SEATS_UNAVAILABLE naming A3", refused)
	}
	if got := statusOf(m, a1, a2, a3, b1); !slices.Equal(got, []seatflow.SeatStatus{seatflow.SeatBlocked, seatflow.SeatBlocked, seatflow.SeatSold, seatflow.SeatAvailable}) {
		t.Fatalf("seat map after blocking A1 A2 A3: %v", got)
	}
	if got := e.blocked(show); !slices.Equal(got, []int{a1, a2}) {
		t.Fatalf("block rows %v, want A1 A2 (%d %d)", got, a1, a2)
	}
	if r := e.db.SeatBlock.Query().FirstX(ctx); r.Reason != "press" || r.CreatedBy != "admin-1" || !r.CreatedAt.Equal(e.clock.Now()) {
		t.Fatalf("block row %+v, want reason press by admin-1 at %s", r, e.clock.Now())
	}
	if _, refused, err := e.svc.BlockSeats(ctx, "admin-2", show, []int{a1, b1}, "crew"); err != nil || refused != nil {
		t.Fatalf("blocking A1 again with B1: %v, %v", refused, err)
	}
	reasons := map[int]string{}
	for _, r := range e.db.SeatBlock.Query().AllX(ctx) {
		reasons[r.SeatID] = r.Reason
	}
	if reasons[a1] != "press" || reasons[b1] != "crew" {
		t.Fatalf("reasons %v, want A1's first reason kept", reasons)
	}
	m, err = e.svc.UnblockSeats(ctx, show, []int{a1, b1, a3, seat(hall, "B", 2)})
	if err != nil {
		t.Fatal(err)
	}
	if got := statusOf(m, a1, a2, a3, b1); !slices.Equal(got, []seatflow.SeatStatus{seatflow.SeatAvailable, seatflow.SeatBlocked, seatflow.SeatSold, seatflow.SeatAvailable}) {
		t.Fatalf("seat map after unblocking A1 B1 (and A3, B2): %v", got)
	}
	if got := e.blocked(show); !slices.Equal(got, []int{a2}) {
		t.Fatalf("block rows after unblocking %v, want A2 alone", got)
	}
}

// TestBlockBeforeSalesOpen: seats blocked on a showtime with no seat hash yet keep their
// rows (a seat of an active order is refused as a hash would), and the hash built when
// its sales open shows them BLOCKED.
func TestBlockBeforeSalesOpen(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	show, hall := e.showtime(seatflow.ShowtimeScheduled, 0)
	a1, a2 := seat(hall, "A", 1), seat(hall, "A", 2)
	e.order("alice", show, seatflow.OrderPending, a2)
	_, refused, err := e.svc.BlockSeats(ctx, "admin", show, []int{a1, a2}, "crew")
	if err != nil {
		t.Fatal(err)
	}
	if e.states(show) != nil {
		t.Fatal("blocking seats of a scheduled showtime built its seat hash")
	}
	if refused == nil || !strings.Contains(refused.Message, "A2") {
		t.Fatalf("refused = %+v, want A2 (an active order's)", refused)
	}
	if got := e.blocked(show); !slices.Equal(got, []int{a1}) {
		t.Fatalf("block rows %v, want A1 alone", got)
	}
	if _, err := e.svc.OpenSales(ctx, show); err != nil {
		t.Fatal(err)
	}
	if st := e.states(show); st[a1].Status != seatflow.SeatBlocked || st[a2].Status != seatflow.SeatHeld {
		t.Fatalf("after opening: A1 %s, A2 %s; want BLOCKED, HELD", st[a1].Status, st[a2].Status)
	}
}

// TestBlockSeatsBadInput: no reason, a reason too long or with control characters, no
// seats, too many, a seat twice, a seat that is not a sellable seat of the hall, a
// cancelled or missing showtime: refused, and nothing is written.
func TestBlockSeatsBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	show, hall := e.showtime(seatflow.ShowtimeOnSale, 0)
	cancelled, _ := e.showtime(seatflow.ShowtimeCancelled, 0)
	_, otherHall := e.showtime(seatflow.ShowtimeOnSale, 0)
	if _, err := e.svc.InitSeats(ctx, show, hall.ID); err != nil {
		t.Fatal(err)
	}
	a1 := seat(hall, "A", 1)
	many := make([]int, 501)
	for i := range many {
		many[i] = a1 + i
	}
	for _, c := range []struct {
		name   string
		show   int
		seats  []int
		reason string
		code   string
	}{
		{"NoReason", show, []int{a1}, "   ", seatflow.EINVALID},
		{"LongReason", show, []int{a1}, strings.Repeat("é", 201), seatflow.EINVALID},
		{"ControlInReason", show, []int{a1}, "press\x00", seatflow.EINVALID},
		{"NoSeats", show, nil, "press", seatflow.EINVALID},
		{"TooManySeats", show, many, "press", seatflow.EINVALID},
		{"SeatTwice", show, []int{a1, a1}, "press", seatflow.EINVALID},
		{"SeatOfAnotherHall", show, []int{seat(otherHall, "A", 1)}, "press", seatflow.EINVALID},
		{"Cancelled", cancelled, []int{a1}, "press", seatflow.EINVALIDSTATE},
		{"NoSuchShowtime", show + 1000, []int{a1}, "press", seatflow.ENOTFOUND},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := e.svc.BlockSeats(ctx, "admin", c.show, c.seats, c.reason)
			wantCode(t, err, c.code)
			if c.reason == "press" {
				_, err = e.svc.UnblockSeats(ctx, c.show, c.seats)
				wantCode(t, err, c.code)
			}
		})
	}
	if n := e.db.SeatBlock.Query().CountX(ctx); n != 0 {
		t.Fatalf("%d block rows after refused input, want 0", n)
	}
	if st := e.states(show)[a1]; st.Status != seatflow.SeatAvailable {
		t.Fatalf("A1 is %s after refused input, want AVAILABLE", st.Status)
	}
}

// statusOf lists the status of the seats in the map, in the order asked.
func statusOf(m *seatflow.SeatMap, seatIDs ...int) []seatflow.SeatStatus {
	out := make([]seatflow.SeatStatus, len(seatIDs))
	for i, id := range seatIDs {
		for _, s := range m.Seats {
			if s.Seat.ID == id {
				out[i] = s.Status
			}
		}
	}
	return out
}

// blocked is the block rows' seats of a showtime, in seat order.
func (e *env) blocked(show int) []int {
	e.t.Helper()
	ids, err := e.svc.Blocked(context.Background(), show)
	if err != nil {
		e.t.Fatal(err)
	}
	slices.Sort(ids)
	return ids
}
