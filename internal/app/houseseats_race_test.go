package app

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
)

// A customer's hold and an admin's block of the same seat, raced from many goroutines,
// end with exactly one winner: the seat HELD by one order and no block row, or BLOCKED
// with its row and no order; MySQL and Redis agree either way. The seats raced are at the
// rows' ends, so no hold is refused by the gap rule.
func TestHouseSeatsHoldAndBlockRace(t *testing.T) {
	a := newTestApp(t)
	show, seats := a.onSaleShowtime()
	const holders, blockers = 8, 4
	outcomes := map[string]int{}
	for round, seat := range []string{seats[0], seats[7], seats[8], seats[15], seats[16], seats[23]} {
		customers := make([]string, holders)
		for i := range customers {
			customers[i] = a.token(fmt.Sprintf("racer-%d-%d", round, i), "customer")
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		held, blocked, refused := 0, 0, 0
		var failures []string
		start := make(chan struct{})
		answer := func(token, query string, vars map[string]any) (string, error) {
			_, raw, err := a.send(token, query, vars)
			if err != nil {
				return "", err
			}
			var r gqlResponse
			if err := json.Unmarshal(raw, &r); err != nil {
				return "", fmt.Errorf("%s", raw)
			}
			return r.Code(), nil
		}
		for i := 0; i < holders; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				code, err := answer(customers[i], holdQ, holdVars(show, []string{seat}, fmt.Sprintf("race-%d-%d", round, i)))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					failures = append(failures, err.Error())
				case code == "":
					held++
				case code != "SEATS_UNAVAILABLE":
					failures = append(failures, "hold: "+code)
				}
			}()
		}
		for i := 0; i < blockers; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				code, err := answer(a.admin, blockQ, blockVars(show, []string{seat}, "race"))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					failures = append(failures, err.Error())
				case code == "":
					blocked++
				case code == "SEATS_UNAVAILABLE":
					refused++
				default:
					failures = append(failures, "block: "+code)
				}
			}()
		}
		close(start)
		wg.Wait()
		if len(failures) > 0 {
			t.Fatalf("round %d: %v", round, failures)
		}
		st, _ := a.seatStatuses(show)
		rows := a.blockedRows(show, []string{seat})
		switch {
		case held == 1 && blocked == 0 && refused == blockers:
			if st[seat] != "HELD" || len(rows) != 0 {
				t.Fatalf("round %d: the hold won but the seat is %s with block rows %v", round, st[seat], rows)
			}
			outcomes["hold"]++
		case held == 0 && blocked == blockers:
			if st[seat] != "BLOCKED" || len(rows) != 1 {
				t.Fatalf("round %d: the block won but the seat is %s with block rows %v", round, st[seat], rows)
			}
			outcomes["block"]++
		default:
			t.Fatalf("round %d: %d holds, %d blocks and %d refused blocks: not one winner", round, held, blocked, refused)
		}
		a.mustAgree()
	}
	t.Logf("winners: %v", outcomes)
}
