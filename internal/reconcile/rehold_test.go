package reconcile_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/internal/booking"
	"seatflow/internal/seats"
)

// TestReholdAfterRedisLostMidHold injects the race the re-hold repair exists for: Redis
// loses the showtime's seats after holdSeats' script and before its order commits, and the
// hash is rebuilt from MySQL in between, so it shows the order's seats free. MySQL's
// unique occupancy still refuses a second buyer; the reconciler holds the seats for the
// order again, tells the watchers, and the order can be paid.
func TestReholdAfterRedisLostMidHold(t *testing.T) {
	e := newEnv(t, 2, 10)
	ctx := context.Background()
	a1, a2 := e.seat("A", 1), e.seat("A", 2)

	// Between the hold script and the commit: the order's INSERT runs inside holdSeats'
	// transaction, after the script. There the hash is lost and rebuilt from MySQL, which
	// cannot see the uncommitted order.
	var inject, injected atomic.Bool
	inject.Store(true)
	e.db.Order.Use(func(next ent.Mutator) ent.Mutator {
		return ent.MutateFunc(func(ctx context.Context, m ent.Mutation) (ent.Value, error) {
			if m.Op().Is(ent.OpCreate) && inject.CompareAndSwap(true, false) {
				k := e.store.Keys
				if err := e.rdb.Del(ctx, k.Seats(e.show), k.Version(e.show), k.Limits(e.show)).Err(); err != nil {
					t.Errorf("lose the seat hash: %v", err)
				}
				if built, err := e.sales.InitSeats(context.WithoutCancel(ctx), e.show, e.hall.ID); err != nil || !built {
					t.Errorf("rebuild the seat hash: built %v, %v", built, err)
				}
				injected.Store(true)
			}
			return next.Mutate(ctx, m)
		})
	})

	o := e.hold(t, "u1", a1, a2)
	if !injected.Load() {
		t.Fatal("the race was not injected: holdSeats created no order through the hooked client")
	}
	// The damage: MySQL has a pending order whose seats Redis shows free.
	wantState(t, e.state(t, a1), seatflow.SeatAvailable, "")
	wantState(t, e.state(t, a2), seatflow.SeatAvailable, "")

	// A second buyer gets the seats in Redis but not in MySQL: refused, nothing left held.
	_, err := e.svc.HoldSeats(ctx, "u2", booking.HoldSeatsInput{ShowtimeID: e.show, SeatIDs: []int{a1}, IdempotencyKey: "second"})
	if code := seatflow.ErrorCode(err); code != seatflow.ESEATSUNAVAILABLE {
		t.Fatalf("second buyer's hold: %v (code %s), want %s", err, code, seatflow.ESEATSUNAVAILABLE)
	}
	wantState(t, e.state(t, a1), seatflow.SeatAvailable, "")

	// A watcher of the showtime.
	sub := e.rdb.Subscribe(ctx, e.store.Keys.Events(e.show))
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}

	rep := e.runOnce(t)
	if rep.PendingSeatsReheld != 2 {
		t.Errorf("pendingSeatsReheld = %d, want 2 (report %+v)", rep.PendingSeatsReheld, rep)
	}
	wantState(t, e.state(t, a1), seatflow.SeatHeld, o.HoldToken)
	wantState(t, e.state(t, a2), seatflow.SeatHeld, o.HoldToken)
	if got := e.count(t, "u1"); got != 2 {
		t.Errorf("u1 count = %d, want 2", got)
	}
	e.verify(t)

	msgCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	msg, err := sub.ReceiveMessage(msgCtx)
	if err != nil {
		t.Fatalf("watchers were not told: %v", err)
	}
	var d seats.Delta
	if err := json.Unmarshal([]byte(msg.Payload), &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Changes) != 2 || d.Changes[0].Status != seatflow.SeatHeld || d.Changes[1].Status != seatflow.SeatHeld {
		t.Errorf("delta = %+v, want seats %d and %d HELD", d, a1, a2)
	}

	// A second run finds nothing; the order is paid as usual.
	if got := counts(e.runOnce(t)); got != [7]int{} {
		t.Errorf("second run repaired %v, want nothing", got)
	}
	if _, err := e.svc.PayOrder(ctx, "u1", o.ID, "pay"); err != nil {
		t.Fatalf("pay: %v", err)
	}
	wantState(t, e.state(t, a1), seatflow.SeatSold, o.HoldToken)
	e.verify(t)
}

// TestReholdLeavesOtherTokens: a pending order's seat held in Redis by a hold without an
// order (the second buyer died before its release) is not taken; once repair 4 frees it
// after the grace period, the following run holds it for the order.
func TestReholdLeavesOtherTokens(t *testing.T) {
	e := newEnv(t, 2, 10)
	a1 := e.seat("A", 1)
	o := e.hold(t, "u1", a1)
	if _, err := e.store.Release(context.Background(), e.show, o.HoldToken, "u1", []int{a1}); err != nil {
		t.Fatal(err)
	}
	e.holdOrphan(t, e.show, "dead", "u2", a1)

	rep := e.runOnce(t)
	if rep.PendingSeatsReheld != 0 {
		t.Errorf("pendingSeatsReheld = %d, want 0 while another token holds the seat", rep.PendingSeatsReheld)
	}
	wantState(t, e.state(t, a1), seatflow.SeatHeld, "dead")

	e.clock.Advance(grace + time.Second)
	if rep := e.runOnce(t); rep.OrphanHoldsReleased != 1 {
		t.Fatalf("orphanHoldsReleased = %d, want 1", rep.OrphanHoldsReleased)
	}
	if rep := e.runOnce(t); rep.PendingSeatsReheld != 1 {
		t.Errorf("pendingSeatsReheld = %d, want 1 once the orphan is gone", rep.PendingSeatsReheld)
	}
	wantState(t, e.state(t, a1), seatflow.SeatHeld, o.HoldToken)
	e.verify(t)
}
