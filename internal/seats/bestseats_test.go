package seats_test

import (
	"fmt"
	"testing"

	"seatflow"

	"seatflow/internal/seats"
)

// freeStates marks every sellable seat of hall free except the taken ids.
func freeStates(hall *seatflow.Hall, taken ...int) map[int]seats.State {
	m := map[int]seats.State{}
	for _, s := range hall.Seats {
		if s.Sellable {
			m[s.ID] = seats.State{Status: seatflow.SeatAvailable}
		}
	}
	for _, id := range taken {
		m[id] = seats.State{Status: seatflow.SeatSold, Token: "x"}
	}
	return m
}

func seatIDs(ss []seatflow.Seat) string {
	var ids []int
	for _, s := range ss {
		ids = append(ids, s.ID)
	}
	return fmt.Sprint(ids)
}

func TestBestSeats(t *testing.T) {
	cases := []struct {
		name      string
		hall      *seatflow.Hall
		taken     []int
		count     int
		allowGaps bool
		want      string
	}{
		{name: "CentreOfHall", hall: testHall(5, 9), count: 3, want: "[304 305 306]"},
		{name: "CentreTakenNextBestRow", hall: testHall(5, 9), taken: []int{303, 304, 305, 306, 307}, count: 2, want: "[204 205]"},
		{name: "AvoidsStrandingASeat", hall: testHall(1, 7), taken: []int{101}, count: 3, want: "[102 103 104]"},
		{name: "StrandingAllowed", hall: testHall(1, 7), taken: []int{101}, count: 3, allowGaps: true, want: "[103 104 105]"},
		{name: "AisleBreaksBlock", hall: testHall(1, 5, 103), count: 2, want: "[101 102]"},
		{name: "SplitWhenNoRowFits", hall: testHall(2, 3), taken: []int{101, 201}, count: 3, want: "[102 103 202]"},
		{name: "NotEnoughSeats", hall: testHall(1, 3), taken: []int{101}, count: 3, want: "[]"},
		{name: "ZeroCount", hall: testHall(1, 3), count: 0, want: "[]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := seatIDs(seats.BestSeats(c.hall, freeStates(c.hall, c.taken...), c.count, c.allowGaps))
			if got != c.want {
				t.Errorf("BestSeats = %s, want %s", got, c.want)
			}
		})
	}
}

// withKinds gives seats of hall (by id) kinds of their own.
func withKinds(hall *seatflow.Hall, kinds map[int]seatflow.SeatKind) *seatflow.Hall {
	for i := range hall.Seats {
		if k, ok := kinds[hall.Seats[i].ID]; ok {
			hall.Seats[i].Kind = k
		}
	}
	return hall
}

// TestBestSeatsAndKinds: the ordinary suggestion never offers a companion seat, nor an
// accessible one while a general seat is free; asked for accessible seats, it offers a
// block of exactly that many accessible seats and companions beside them.
func TestBestSeatsAndKinds(t *testing.T) {
	A, C := seatflow.SeatAccessible, seatflow.SeatCompanion
	// Row A: A1 accessible, A2–A3 companions, A4–A5 standard. Row B: B1–B2 companions,
	// B3 accessible, B4–B5 accessible (two spaces), all central rows equal.
	kinds := map[int]seatflow.SeatKind{101: A, 102: C, 103: C, 201: C, 202: C, 203: A, 204: A, 205: A}
	hall := func() *seatflow.Hall { return withKinds(testHall(2, 5), kinds) }
	cases := []struct {
		name              string
		taken             []int
		count, accessible int
		want              string
	}{
		{name: "OrdinarySkipsReservedSeats", count: 2, want: "[104 105]"},
		{name: "OrdinaryNoRoom", count: 3, want: "[]"},
		{name: "AccessibleReleasedWhenTheRestIsTaken", taken: []int{104, 105}, count: 1, want: "[203]"},
		{name: "OneAccessibleTwoCompanions", count: 3, accessible: 1, want: "[101 102 103]"},
		{name: "OneAccessibleOneCompanion", count: 2, accessible: 1, want: "[202 203]"},
		{name: "TwoAccessible", count: 2, accessible: 2, want: "[203 204]"},
		{name: "AccessibleOnly", count: 1, accessible: 1, want: "[203]"},
		{name: "NoBlockOfThatMix", count: 4, accessible: 1, taken: []int{102}, want: "[]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := hall()
			var got []seatflow.Seat
			if c.accessible > 0 {
				got = seats.BestAccessibleSeats(h, freeStates(h, c.taken...), c.count, c.accessible, true)
			} else {
				got = seats.BestSeats(h, freeStates(h, c.taken...), c.count, true)
			}
			if s := seatIDs(got); s != c.want {
				t.Errorf("got %s, want %s", s, c.want)
			}
		})
	}
}
