package reconcile_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seatflow"
	"seatflow/ent/order"
	"seatflow/internal/booking"
)

// TestRebuildDuringHoldsAndPays loses the seat hash again and again while buyers hold,
// pay and cancel from goroutines, and the reconciler rebuilds it. A watcher checks that a
// seat once sold never shows another state; afterwards, once the pending orders are paid,
// the stores agree.
func TestRebuildDuringHoldsAndPays(t *testing.T) {
	e := newEnv(t, 8, 10)
	const buyers, rounds = 8, 40
	// stormTimeout bounds the buyers' rounds: a few seconds normally, much less than this
	// even under -race on a busy machine.
	const stormTimeout = 2 * time.Minute

	// On every way out, Fatal included, the buyers are cancelled and waited for and the
	// watcher is stopped (deferred in this order, so they run in the reverse), so none of
	// them reports after the test has ended.
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// The watcher: a seat sold to a token is that token's for good (the whole hash may
	// be missing for a moment, never one seat of it).
	stop, watcherDone := make(chan struct{}), make(chan struct{})
	var snapshots atomic.Int64
	go func() {
		defer close(watcherDone)
		soldTo := map[int]string{}
		for {
			select {
			case <-stop:
				return
			default:
			}
			states, _, err := e.store.States(ctx, e.show)
			if err != nil {
				if ctx.Err() == nil {
					t.Errorf("watcher: %v", err)
				}
				return
			}
			snapshots.Add(1)
			if len(states) == 0 {
				continue
			}
			for id, token := range soldTo {
				if st := states[id]; st.Status != seatflow.SeatSold || st.Token != token {
					t.Errorf("seat %d was sold to %s, now %s by %q", id, token, st.Status, st.Token)
				}
			}
			for id, st := range states {
				if st.Status == seatflow.SeatSold {
					soldTo[id] = st.Token
				}
			}
		}
	}()
	stopWatcher := sync.OnceFunc(func() { close(stop); <-watcherDone })
	defer stopWatcher()

	var mu sync.Mutex
	outcomes := map[string]int{}
	for b := range buyers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(b), 7))
			user := fmt.Sprint("user", b)
			for i := range rounds {
				if ctx.Err() != nil {
					return // the test is failing and has cancelled the buyers
				}
				var ids []int
				for _, j := range rng.Perm(len(e.hall.Seats))[:1+rng.IntN(3)] {
					ids = append(ids, e.hall.Seats[j].ID)
				}
				o, err := e.svc.HoldSeats(ctx, user, booking.HoldSeatsInput{ShowtimeID: e.show, SeatIDs: ids, IdempotencyKey: fmt.Sprint(i)})
				outcome := seatflow.ErrorCode(err)
				// SEATS_UNAVAILABLE (a lost race) and SERVICE_UNAVAILABLE (the hash was lost
				// again right after the hold rebuilt it) are answers a client can act on;
				// INTERNAL would be a bug.
				if outcome == seatflow.EINTERNAL && ctx.Err() == nil {
					t.Errorf("hold %v for %s: internal error: %v", ids, user, err)
				}
				if err == nil {
					switch rng.IntN(4) {
					case 0, 1:
						_, err = e.svc.PayOrder(ctx, user, o.ID, "pay")
						outcome = "paid"
					case 2:
						_, err = e.svc.CancelOrder(ctx, user, o.ID)
						outcome = "cancelled"
					default:
						outcome = "pending"
					}
					if err != nil && ctx.Err() == nil {
						t.Errorf("%s order %d: %v", outcome, o.ID, err)
					}
				}
				mu.Lock()
				outcomes[outcome]++
				mu.Unlock()
			}
		}()
	}

	// Meanwhile Redis keeps losing the seat hash and the reconciler rebuilds it.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	rebuilt, lost := 0, 0
	deadline := time.After(stormTimeout)
	for storm := true; storm; {
		select {
		case <-done:
			storm = false
		case <-deadline:
			mu.Lock()
			so := fmt.Sprint(outcomes)
			mu.Unlock()
			t.Fatalf("the buyers have not finished %d rounds each after %v (outcomes so far %s)", rounds, stormTimeout, so)
		case <-time.After(20 * time.Millisecond):
			lost += int(e.rdb.Del(ctx, e.store.Keys.Seats(e.show)).Val())
			rebuilt += e.runOnce(t).HashesRebuilt
		}
	}
	// Holds rebuild a lost hash themselves too, so the reconciler may find none to rebuild:
	// what matters is that hashes were lost while orders were being paid.
	t.Logf("outcomes %v, hashes lost %d, rebuilt by the reconciler %d", outcomes, lost, rebuilt)
	if lost == 0 || outcomes["paid"] == 0 {
		t.Fatalf("the storm did not overlap: hashes lost %d, paid %d", lost, outcomes["paid"])
	}

	// A pending hold can lose its seat to a rebuild that read MySQL just before its order
	// committed (accepted drift: MySQL's unique occupancy keeps anyone else from buying
	// it). Paying it is what a customer does next; the paid-seat repair then sells it.
	pending := e.db.Order.Query().Where(order.StatusEQ(seatflow.OrderPending)).AllX(ctx)
	for _, o := range pending {
		if _, err := e.svc.PayOrder(ctx, o.UserID, o.ID, "pay"); err != nil {
			t.Errorf("pay pending order %d: %v", o.ID, err)
		}
	}
	for range 3 {
		e.runOnce(t)
	}
	before := snapshots.Load()
	waitUntil(t, 10*time.Second, "the watcher to see the final seat hash", func() bool {
		select {
		case <-watcherDone: // it stopped on an error it has reported
			return true
		default:
			return snapshots.Load() >= before+2
		}
	})
	stopWatcher()
	e.verify(t)
}
