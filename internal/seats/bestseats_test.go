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
