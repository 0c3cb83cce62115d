package seats

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"seatflow"
	"seatflow/internal/nodeid"
	"seatflow/internal/tooling/testenv"
)

// TestGapRuleGoAgreesWithLua holds the gap rule's two implementations together: the Go
// one that best-seat suggestions use (strandedSeat) and the one inside hold.lua that holds
// enforce. For random rows (free, held, sold and unsellable seats) and random selections
// of free seats, both must say the same: refuse with the same stranded seat, or accept.
func TestGapRuleGoAgreesWithLua(t *testing.T) {
	r := testenv.NewRedis(t)
	s := &Store{RDB: r.Client, Keys: r.Keys}
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(17, 42))
	refused := 0
	const trials = 400
	for trial := range trials {
		showID := trial + 1
		n := 1 + rng.IntN(12)
		hall := &seatflow.Hall{ID: 1}
		var occ []Occupancy
		free := map[int]bool{}
		for i := 1; i <= n; i++ {
			seat := seatflow.Seat{ID: i, Row: "A", Number: i, X: i, Kind: seatflow.SeatStandard, Sellable: true}
			switch rng.IntN(5) {
			case 0:
				seat.Sellable = false // a wall
			case 1:
				occ = append(occ, Occupancy{SeatID: i, UserID: "other", Token: "t-other", Sold: rng.IntN(2) == 0})
			default:
				free[i] = true
			}
			hall.Seats = append(hall.Seats, seat)
		}
		if len(free) == 0 {
			continue
		}
		// A selection of 1–4 free seats, adjacent or not.
		var pool []int
		for id := range free {
			pool = append(pool, id)
		}
		slices.Sort(pool)
		rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
		selection := pool[:1+rng.IntN(min(4, len(pool)))]
		requested := map[int]bool{}
		for _, id := range selection {
			requested[id] = true
		}
		row := make([]int, n)
		for i := range row {
			row[i] = i + 1
		}
		goSeat, goRefuses := strandedSeat(row, func(id int) bool { return free[id] }, requested)

		if _, err := s.Init(ctx, showID, hall, occ); err != nil {
			t.Fatal(err)
		}
		err := s.Hold(ctx, HoldRequest{ShowtimeID: showID, Layout: NewLayout(hall), SeatIDs: selection,
			Token: "t-me", UserID: "me"})
		luaRefuses := seatflow.ErrorCode(err) == seatflow.ESEATGAP
		if err != nil && !luaRefuses {
			t.Fatalf("trial %d: hold %v: %v", trial, selection, err)
		}
		layout := fmt.Sprintf("row %s, selection %v", describeRow(hall, occ), selection)
		if goRefuses != luaRefuses {
			t.Fatalf("trial %d (%s): Go refuses %v (seat %d), Lua refuses %v (%v)", trial, layout, goRefuses, goSeat, luaRefuses, err)
		}
		if luaRefuses {
			refused++
			var e *seatflow.Error
			if !errors.As(err, &e) || fmt.Sprint(e.Extensions["seatIds"]) != fmt.Sprint([]string{nodeid.Encode(nodeid.Seat, goSeat)}) {
				t.Fatalf("trial %d (%s): stranded seat: Go %d, Lua %v", trial, layout, goSeat, e.Extensions["seatIds"])
			}
		}
	}
	// Both outcomes must have been exercised, or the test proves nothing.
	if refused < trials/10 || refused > trials*9/10 {
		t.Fatalf("refused %d of %d selections: the random rows do not exercise both outcomes", refused, trials)
	}
}

func describeRow(hall *seatflow.Hall, occ []Occupancy) string {
	taken := map[int]bool{}
	for _, o := range occ {
		taken[o.SeatID] = true
	}
	out := ""
	for _, s := range hall.Seats {
		switch {
		case !s.Sellable:
			out += "#"
		case taken[s.ID]:
			out += "x"
		default:
			out += "."
		}
	}
	return out
}
