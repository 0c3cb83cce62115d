package booking_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"seatflow"
	"seatflow/ent/order"
	"seatflow/ent/orderseat"
)

// TestNoOversellUnderRace races 500 buyers for a 60-seat showtime (random 1–4 seats each,
// then pay or cancel at random) and checks Redis and MySQL agree seat by seat. It runs
// three times, the last with the gap rule on.
func TestNoOversellUnderRace(t *testing.T) {
	for run := 1; run <= 3; run++ {
		t.Run(fmt.Sprintf("Run%d", run), func(t *testing.T) { raceOnce(t, uint64(run), run < 3) })
	}
}

func raceOnce(t *testing.T, seed uint64, allowGaps bool) {
	ctx := context.Background()
	e := newEnv(t, 6, 10, showOpts{allowGaps: allowGaps})
	const buyers = 500
	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[string]int{}
	for u := range buyers {
		wg.Add(1)
		go func(u int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(u)))
			var ids []int
			for _, i := range rng.Perm(len(e.hall.Seats))[:1+rng.IntN(4)] {
				ids = append(ids, e.hall.Seats[i].ID)
			}
			user := fmt.Sprint("user", u)
			<-start
			o, err := e.hold(user, "k", ids...)
			outcome := seatflow.ErrorCode(err)
			if err == nil {
				if rng.IntN(2) == 0 {
					_, err = e.svc.PayOrder(ctx, user, o.ID, "pay")
					outcome = "paid"
				} else {
					_, err = e.svc.CancelOrder(ctx, user, o.ID)
					outcome = "cancelled"
				}
				if err != nil {
					t.Errorf("%s order %d: %v", outcome, o.ID, err)
				}
			} else if outcome != seatflow.ESEATSUNAVAILABLE && outcome != seatflow.ESEATGAP {
				t.Errorf("hold: %v", err)
			}
			mu.Lock()
			outcomes[outcome]++
			mu.Unlock()
		}(u)
	}
	close(start)
	wg.Wait()
	t.Logf("outcomes: %v", outcomes)
	if outcomes["paid"] == 0 {
		t.Errorf("nobody bought anything")
	}

	active := e.db.Order.Query().Where(order.StatusIn(seatflow.OrderPending, seatflow.OrderPaid)).AllX(ctx)
	ownerOf := map[int]int{}                   // seat → active order
	tokenOf := map[int]string{}                // active order → token
	perUser := map[string]int{}                // user → active seats
	statusOf := map[int]seatflow.OrderStatus{} // active order → status
	for _, o := range active {
		tokenOf[o.ID], statusOf[o.ID] = o.HoldToken, o.Status
		for _, os := range e.db.OrderSeat.Query().Where(orderseat.OrderID(o.ID)).AllX(ctx) {
			if prev, ok := ownerOf[os.SeatID]; ok {
				t.Errorf("seat %d in two active orders: %d and %d", os.SeatID, prev, o.ID)
			}
			ownerOf[os.SeatID] = o.ID
			perUser[o.UserID]++
		}
	}
	occupied := map[int]int{}
	for _, occ := range e.db.SeatOccupancy.Query().AllX(ctx) {
		occupied[occ.SeatID] = occ.OrderID
		if ownerOf[occ.SeatID] != occ.OrderID {
			t.Errorf("occupancy of seat %d → order %d, active owner %d", occ.SeatID, occ.OrderID, ownerOf[occ.SeatID])
		}
	}
	if len(occupied) != len(ownerOf) {
		t.Errorf("occupancy rows = %d, active seats = %d", len(occupied), len(ownerOf))
	}
	states, _, err := e.store.States(ctx, e.show)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range e.hall.Seats {
		st, id := states[s.ID], s.ID
		o, owned := ownerOf[id]
		switch {
		case st.Status == seatflow.SeatAvailable:
			if owned || occupied[id] != 0 {
				t.Errorf("free seat %d has active order %d / occupancy %d", id, o, occupied[id])
			}
		case !owned:
			t.Errorf("seat %d is %s with no active order", id, st.Status)
		case st.Token != tokenOf[o]:
			t.Errorf("seat %d token %s, its order %d has %s", id, st.Token, o, tokenOf[o])
		case statusOf[o] == seatflow.OrderPaid && st.Status != seatflow.SeatSold:
			t.Errorf("seat %d of paid order %d is %s", id, o, st.Status)
		case statusOf[o] == seatflow.OrderPending && st.Status != seatflow.SeatHeld:
			t.Errorf("seat %d of pending order %d is %s", id, o, st.Status)
		}
	}
	counts := e.rdb.HGetAll(ctx, e.store.Keys.Limits(e.show)).Val()
	for user, n := range perUser {
		if counts[user] != fmt.Sprint(n) {
			t.Errorf("count of %s = %q, active seats %d", user, counts[user], n)
		}
	}
	if len(counts) != len(perUser) {
		t.Errorf("limits hash has %d users, %d have active seats", len(counts), len(perUser))
	}
}
