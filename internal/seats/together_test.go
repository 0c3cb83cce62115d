package seats

import (
	"slices"
	"testing"

	"seatflow"
)

// TestTogether: a party gets seats side by side in one row when there are some, the
// first such run in the hall's order; else the first seats in the hall's order; never a
// seat of another hall, nor across a seat that is not for sale.
func TestTogether(t *testing.T) {
	var seats []seatflow.Seat
	id := 0
	for _, row := range []string{"A", "B"} {
		for n := 1; n <= 5; n++ {
			id++
			seats = append(seats, seatflow.Seat{ID: id, Row: row, Number: n, Sellable: !(row == "B" && n == 3), Kind: seatflow.SeatStandard})
		}
	}
	l := NewLayout(&seatflow.Hall{Seats: seats}) // A1-A5 are 1-5, B1-B5 6-10; B3 (8) not for sale
	cases := []struct {
		ids  []int
		n    int
		want []int
	}{
		{[]int{1, 3, 4}, 2, []int{3, 4}},       // A3 A4, not A1 A3
		{[]int{5, 4, 6, 7}, 2, []int{4, 5}},    // the first run in the hall's order
		{[]int{7, 9}, 2, []int{7, 9}},          // B2 and B4 are not together (B3 between): the first two
		{[]int{1, 3, 6}, 3, []int{1, 3, 6}},    // no run of three: the first three
		{[]int{1, 99}, 2, nil},                 // 99 is not in the hall
		{[]int{2, 3, 4, 5}, 3, []int{2, 3, 4}}, // a run of four holds a run of three
		{[]int{10, 9, 1}, 1, []int{1}},         // one seat: the hall's first
	}
	for _, c := range cases {
		if got := l.Together(c.ids, c.n); !slices.Equal(got, c.want) {
			t.Errorf("Together(%v, %d) = %v, want %v", c.ids, c.n, got, c.want)
		}
	}
}
