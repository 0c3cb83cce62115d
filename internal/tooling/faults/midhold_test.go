package faults

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"seatflow/ent"
)

// midHoldRaces is how many holds of scenario 9 have Redis lose the seats mid-way.
const midHoldRaces = 3

// TestRedisLostMidHold: Redis loses the showtime's seat hash after a hold's script and
// before its order commits, and the hash is rebuilt from MySQL in between, so it shows
// that order's seats free. The race is injected into instance 0's order insert (an ent
// hook on its MySQL client, run inside holdSeats' transaction) for holds made by a
// customer of the scenario's own, whom the workload never pays or cancels for: the orders
// stay pending until the checker, whose reconciler must hold their seats again (repair 7).
// A later injection's rebuild reads the orders committed before it, so it holds an earlier
// injected order's seats itself: the reconciler has the last order's seats to re-hold.
func TestRedisLostMidHold(t *testing.T) {
	var armed atomic.Bool
	var injected atomic.Int64
	var heldSeats, lastSeats atomic.Int64
	Run(t, Scenario{Order: 9, Name: "redis-lost-mid-hold", Plan: DefaultPlan(15 * time.Second),
		Fault: fmt.Sprintf("Redis loses the showtime's seat hash between a hold's script and its order's commit, "+
			"and the hash is rebuilt from MySQL in between (%d holds on instance 0)", midHoldRaces),
		Promise: "MySQL's unique occupancy stops a second sale of those seats; the reconciler holds them for their " +
			"pending order again (repair 7) and the watchers are told; verify clean",
		Prepare: func(e *Env, w *Workload) {
			a := e.Instances[0].App
			a.DB.Order.Use(func(next ent.Mutator) ent.Mutator {
				return ent.MutateFunc(func(ctx context.Context, m ent.Mutation) (ent.Value, error) {
					if m.Op().Is(ent.OpCreate) && armed.CompareAndSwap(true, false) {
						ctx := context.WithoutCancel(ctx)
						if err := a.Redis.Del(ctx, a.Keys.Seats(e.Show.ID), a.Keys.Limits(e.Show.ID)).Err(); err != nil {
							return nil, err
						}
						if _, err := a.Sales.InitSeats(ctx, e.Show.ID, e.Show.HallID); err != nil {
							return nil, err
						}
						injected.Add(1)
					}
					return next.Mutate(ctx, m)
				})
			})
		},
		Inject: func(ctx context.Context, e *Env, d time.Duration) error {
			tok, err := e.Checker.Auth.Issue("fault-mid-hold", "customer", time.Hour)
			if err != nil {
				return err
			}
			in := e.Instances[0]
			e.Applied()
			for i := range midHoldRaces {
				var m struct {
					SeatMap struct {
						Seats []struct {
							Seat   struct{ ID string }
							Status string
						}
					}
				}
				if code := e.work.send(ctx, in, OpSeatMap, "", qSeatMap, map[string]any{"id": e.Show.GQLID}, &m); code != CodeOK {
					return fmt.Errorf("read the seat map: %s", code)
				}
				var pick []string
				for _, s := range m.SeatMap.Seats {
					if s.Status == "AVAILABLE" && len(pick) < 2 {
						pick = append(pick, s.Seat.ID)
					}
				}
				if len(pick) == 0 {
					break
				}
				// Alone: the rebuild also rebuilds the purchase-limit counts from MySQL, which
				// would drop those of any other change in flight (a known limit, in
				// docs/RELIABILITY.md); this scenario is about the seats.
				var code string
				e.work.Alone(func() {
					e.work.Rec.SeatsLost(time.Now(), dbIDs(pick))
					armed.Store(true)
					_, code = e.work.Hold(ctx, in, tok, len(e.Tokens), pick, fmt.Sprintf("mid-hold-%d", i))
					armed.Store(false)
				})
				if code == CodeOK {
					heldSeats.Add(int64(len(pick)))
					lastSeats.Store(int64(len(pick)))
				}
				sleep(ctx, d/midHoldRaces)
			}
			return nil
		},
		Extra: func(e *Env, w *Workload, ws []*Watcher, res *Result) {
			res.Note("%d holds lost their seats in Redis before their commit; their orders hold %d seats; the reconciler held %d seats of pending orders again",
				injected.Load(), heldSeats.Load(), res.Repairs.PendingSeatsReheld)
			if injected.Load() == 0 || heldSeats.Load() == 0 {
				res.violate("the race was not injected (%d injections, %d seats held by their orders)", injected.Load(), heldSeats.Load())
			}
			if int64(res.Repairs.PendingSeatsReheld) < lastSeats.Load() {
				res.violate("the reconciler held %d seats of pending orders again, want at least the %d seats of the last order that lost them",
					res.Repairs.PendingSeatsReheld, lastSeats.Load())
			}
		}})
}
