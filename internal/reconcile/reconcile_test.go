package reconcile_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"seatflow"
	"seatflow/internal/booking"
	"seatflow/internal/reconcile"
	"seatflow/internal/seats"
	"seatflow/internal/tooling/testenv"
)

// TestOrphanHold: holdSeats held the seats and died before the order commit.
func TestOrphanHold(t *testing.T) {
	// deadHold gives each subtest its own stores and clock, with u1's dead hold of A1 and
	// A2 made at the clock's start.
	deadHold := func(t *testing.T) *env {
		e := newEnv(t, 2, 10)
		e.holdOrphan(t, e.show, "dead", "u1", e.seat("A", 1), e.seat("A", 2))
		return e
	}

	t.Run("YoungerThanGraceUntouched", func(t *testing.T) {
		e := deadHold(t)
		a1 := e.seat("A", 1)
		e.clock.Advance(grace - time.Second)
		rep := e.runOnce(t)
		if got := counts(rep); got != [7]int{} {
			t.Errorf("repairs = %v, want none", got)
		}
		wantState(t, e.state(t, a1), seatflow.SeatHeld, "dead")
		if got := e.count(t, "u1"); got != 2 {
			t.Errorf("count = %d, want 2 (an in-flight hold's count is not judged)", got)
		}
	})

	t.Run("ReleasedAfterGrace", func(t *testing.T) {
		e := deadHold(t)
		a1, a2, b1 := e.seat("A", 1), e.seat("A", 2), e.seat("B", 1)
		e.clock.Advance(grace + time.Second)
		e.holdOrphan(t, e.show, "inflight", "u2", b1) // a new hold, on its way to MySQL
		rep := e.runOnce(t)
		if rep.OrphanHoldsReleased != 2 {
			t.Errorf("orphanHoldsReleased = %d, want 2", rep.OrphanHoldsReleased)
		}
		wantState(t, e.state(t, a1), seatflow.SeatAvailable, "")
		wantState(t, e.state(t, a2), seatflow.SeatAvailable, "")
		wantState(t, e.state(t, b1), seatflow.SeatHeld, "inflight")
		if got := e.count(t, "u2"); got != 1 {
			t.Errorf("count of the in-flight hold's user = %d, want 1", got)
		}
	})

	t.Run("CountRecountedOnceNothingIsInFlight", func(t *testing.T) {
		// As ReleasedAfterGrace leaves it: the dead hold released, u2's hold in flight.
		e := deadHold(t)
		e.clock.Advance(grace + time.Second)
		e.holdOrphan(t, e.show, "inflight", "u2", e.seat("B", 1))
		if rep := e.runOnce(t); rep.OrphanHoldsReleased != 2 {
			t.Fatalf("setup: orphanHoldsReleased = %d, want 2 (the dead hold)", rep.OrphanHoldsReleased)
		}
		e.clock.Advance(grace + time.Second)
		rep := e.runOnce(t)
		if rep.OrphanHoldsReleased != 1 || rep.LimitsRecounted != 2 {
			t.Errorf("orphanHoldsReleased, limitsRecounted = %d, %d, want 1, 2", rep.OrphanHoldsReleased, rep.LimitsRecounted)
		}
		if u1, u2 := e.count(t, "u1"), e.count(t, "u2"); u1 != 0 || u2 != 0 {
			t.Errorf("counts = %d, %d, want 0, 0", u1, u2)
		}
		e.verify(t)
	})
}

// TestLostExpiryEnqueue: the order committed, its expiry entry never reached the queue.
func TestLostExpiryEnqueue(t *testing.T) {
	ctx := context.Background()
	// lostEntry gives each subtest its own stores and clock, with u1's order of A1 made at
	// the clock's start and missing from the expiry queue.
	lostEntry := func(t *testing.T) (*env, *seatflow.Order) {
		e := newEnv(t, 2, 10)
		o := e.hold(t, "u1", e.seat("A", 1))
		e.rdb.ZRem(ctx, e.store.Keys.OrdersExpiry(), strconv.Itoa(o.ID))
		if n, _ := e.svc.ExpireDue(ctx); n != 0 {
			t.Fatalf("expiry worker expired %d, want 0: the entry is lost", n)
		}
		return e, o
	}

	t.Run("NotBeforeBuffer", func(t *testing.T) {
		e, o := lostEntry(t)
		e.clock.Advance(booking.DefaultHoldTTL + buffer - time.Second)
		if rep := e.runOnce(t); rep.ExpiredCancelled != 0 {
			t.Errorf("expiredCancelled = %d, want 0 within the buffer", rep.ExpiredCancelled)
		}
		if got := e.db.Order.GetX(ctx, o.ID).Status; got != seatflow.OrderPending {
			t.Errorf("status = %s, want PENDING_PAYMENT", got)
		}
	})

	t.Run("ExpiredAfterBuffer", func(t *testing.T) {
		e, o := lostEntry(t)
		a1 := e.seat("A", 1)
		e.clock.Advance(booking.DefaultHoldTTL + buffer + time.Second)
		if rep := e.runOnce(t); rep.ExpiredCancelled != 1 {
			t.Errorf("expiredCancelled = %d, want 1", rep.ExpiredCancelled)
		}
		if got := e.db.Order.GetX(ctx, o.ID).Status; got != seatflow.OrderExpired {
			t.Errorf("status = %s, want EXPIRED", got)
		}
		wantState(t, e.state(t, a1), seatflow.SeatAvailable, "")
		if got := e.count(t, "u1"); got != 0 {
			t.Errorf("count = %d, want 0", got)
		}
		e.verify(t)
	})
}

// TestPaidNeverConfirmed: the PAID commit happened, confirm never ran (or the seats were
// lost since).
func TestPaidNeverConfirmed(t *testing.T) {
	ctx := context.Background()

	t.Run("HeldSeatsConfirmed", func(t *testing.T) {
		e := newEnv(t, 2, 10)
		o := e.hold(t, "u1", e.seat("A", 1), e.seat("A", 2))
		e.markPaid(t, o.ID)
		if rep := e.runOnce(t); rep.PaidSeatsFixed != 2 {
			t.Errorf("paidSeatsFixed = %d, want 2", rep.PaidSeatsFixed)
		}
		wantState(t, e.state(t, e.seat("A", 2)), seatflow.SeatSold, o.HoldToken)
		e.verify(t)
	})

	t.Run("FreeSeatsRestored", func(t *testing.T) {
		e := newEnv(t, 2, 10)
		o := e.hold(t, "u2", e.seat("A", 5))
		e.markPaid(t, o.ID)
		if _, err := e.store.Release(ctx, e.show, o.HoldToken, "u2", o.SeatIDs); err != nil {
			t.Fatal(err)
		}
		if rep := e.runOnce(t); rep.PaidSeatsFixed != 1 {
			t.Errorf("paidSeatsFixed = %d, want 1", rep.PaidSeatsFixed)
		}
		wantState(t, e.state(t, e.seat("A", 5)), seatflow.SeatSold, o.HoldToken)
		if got := e.count(t, "u2"); got != 1 {
			t.Errorf("count = %d, want 1", got)
		}
		e.verify(t)
	})

	t.Run("SeatOfAnotherTokenLeftAlone", func(t *testing.T) {
		e := newEnv(t, 2, 10)
		b1 := e.seat("B", 1)
		o := e.hold(t, "u3", b1)
		e.markPaid(t, o.ID)
		if _, err := e.store.Release(ctx, e.show, o.HoldToken, "u3", o.SeatIDs); err != nil {
			t.Fatal(err)
		}
		e.sellOrphan(t, e.show, "thief", "u4", b1) // someone else got it in Redis
		rep := e.runOnce(t)
		if rep.PaidSeatConflicts != 1 || rep.PaidSeatsFixed != 0 {
			t.Errorf("paidSeatConflicts, paidSeatsFixed = %d, %d, want 1, 0", rep.PaidSeatConflicts, rep.PaidSeatsFixed)
		}
		// The sold orphan is freed (no paid order has "thief"), and only the next run, reading
		// afresh, restores the seat to its payer: a paid seat is never moved in one step.
		if rep.SoldOrphansReleased != 1 {
			t.Errorf("soldOrphansReleased = %d, want 1", rep.SoldOrphansReleased)
		}
		if rep := e.runOnce(t); rep.PaidSeatsFixed != 1 || rep.PaidSeatConflicts != 0 {
			t.Errorf("next run: paidSeatsFixed, conflicts = %d, %d, want 1, 0", rep.PaidSeatsFixed, rep.PaidSeatConflicts)
		}
		wantState(t, e.state(t, b1), seatflow.SeatSold, o.HoldToken)
	})
}

// TestLostSeatHash: Redis lost the seat hash (or everything) while orders exist.
func TestLostSeatHash(t *testing.T) {
	ctx := context.Background()
	// lose gives each subtest its own stores with u1's pending order of A1 and A2 and u2's
	// paid order of B3, loses what the subtest loses, and checks the run that repairs it.
	lose := func(t *testing.T, loss func(e *env)) {
		t.Helper()
		e := newEnv(t, 2, 10)
		pending := e.hold(t, "u1", e.seat("A", 1), e.seat("A", 2))
		paid := e.hold(t, "u2", e.seat("B", 3))
		if _, err := e.svc.PayOrder(ctx, "u2", paid.ID, "pay"); err != nil {
			t.Fatal(err)
		}
		loss(e)
		rep := e.runOnce(t)
		if rep.HashesRebuilt != 1 {
			t.Errorf("hashesRebuilt = %d, want 1", rep.HashesRebuilt)
		}
		wantState(t, e.state(t, e.seat("A", 1)), seatflow.SeatHeld, pending.HoldToken)
		wantState(t, e.state(t, e.seat("B", 3)), seatflow.SeatSold, paid.HoldToken)
		wantState(t, e.state(t, e.seat("B", 4)), seatflow.SeatAvailable, "")
		if u1, u2 := e.count(t, "u1"), e.count(t, "u2"); u1 != 2 || u2 != 1 {
			t.Errorf("counts = %d, %d, want 2, 1", u1, u2)
		}
		e.verify(t)
	}

	t.Run("SeatHashDeleted", func(t *testing.T) {
		lose(t, func(e *env) { e.rdb.Del(ctx, e.store.Keys.Seats(e.show)) })
	})
	t.Run("EveryKeyDeleted", func(t *testing.T) {
		lose(t, func(e *env) { testenv.DeletePrefix(e.rdb, e.store.Keys.Prefix) })
	})
}

// TestSoldOrphanAndCountOff: a seat sold to no order, and a count changed by hand.
func TestSoldOrphanAndCountOff(t *testing.T) {
	e := newEnv(t, 2, 10)
	ctx := context.Background()
	o := e.hold(t, "u1", e.seat("A", 1))
	e.sellOrphan(t, e.show, "ghost", "u2", e.seat("A", 7), e.seat("A", 8))
	e.rdb.HSet(ctx, e.store.Keys.Limits(e.show), "u1", 5)

	rep := e.runOnce(t)
	if rep.SoldOrphansReleased != 2 || rep.LimitsRecounted != 2 {
		t.Errorf("soldOrphansReleased, limitsRecounted = %d, %d, want 2, 2", rep.SoldOrphansReleased, rep.LimitsRecounted)
	}
	wantState(t, e.state(t, e.seat("A", 7)), seatflow.SeatAvailable, "")
	wantState(t, e.state(t, e.seat("A", 1)), seatflow.SeatHeld, o.HoldToken)
	if u1, u2 := e.count(t, "u1"), e.count(t, "u2"); u1 != 1 || u2 != 0 {
		t.Errorf("counts = %d, %d, want 1, 0", u1, u2)
	}
	e.verify(t)

	t.Run("RunStored", func(t *testing.T) {
		if got := counts(e.runOnce(t)); got != [7]int{} {
			t.Fatalf("second run repaired %v, want nothing", got)
		}
		runs, err := e.rec.Runs(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 1 { // a run that repaired nothing is not stored
			t.Fatalf("stored runs = %d, want 1", len(runs))
		}
		if got, want := counts(runs[0]), counts(rep); got != want {
			t.Errorf("stored counts = %v, want %v", got, want)
		}
		if len(runs[0].ShowtimeIDs) != 1 || runs[0].ShowtimeIDs[0] != e.show {
			t.Errorf("stored showtimes = %v, want [%d]", runs[0].ShowtimeIDs, e.show)
		}
	})
}

// TestBacklogConverges: 5,000 drifted seats across 50 showtimes (per showtime 50 orphan
// holds past the grace period and 50 sold orphans) converge in ceil(2500/Batch) runs,
// each within its batch.
func TestBacklogConverges(t *testing.T) {
	e := newEnv(t, 10, 10)
	const batch = 500
	e.rec = e.reconciler(t, batch)
	shows := []int{e.show}
	for len(shows) < 50 {
		id, _ := e.addShowtime(t, 10, 10)
		shows = append(shows, id)
	}
	for _, id := range shows {
		var held, sold []int
		for _, s := range e.halls[id].Seats {
			if s.Row < "F" {
				held = append(held, s.ID)
			} else {
				sold = append(sold, s.ID)
			}
		}
		e.holdOrphan(t, id, "dead", "ghost", held...)
		e.sellOrphan(t, id, "gone", "ghost", sold...)
	}
	e.clock.Advance(grace + time.Second)

	const wantRuns = (2500 + batch - 1) / batch // per kind; documented on Config.Batch
	total := [7]int{}
	runs := 0
	for ; runs < wantRuns+2; runs++ {
		rep := e.runOnce(t)
		c := counts(rep)
		for i, n := range c {
			if n > batch {
				t.Errorf("run %d: repairs %v exceed the batch %d", runs+1, c, batch)
			}
			total[i] += n
		}
		if c == [7]int{} {
			break
		}
	}
	if runs != wantRuns {
		t.Errorf("runs that repaired something = %d, want %d", runs, wantRuns)
	}
	if want := [7]int{0, 0, 0, 2500, 2500, 50}; total != want {
		t.Errorf("total repairs = %v, want %v", total, want)
	}
	e.verify(t)
}

// TestTwoReconcilers: two instances run at once; one works, the other skips.
func TestTwoReconcilers(t *testing.T) {
	ctx := context.Background()

	t.Run("SecondGetsErrBusy", func(t *testing.T) {
		e := newEnv(t, 2, 10)
		e.sellOrphan(t, e.show, "ghost", "u1", e.seat("A", 1), e.seat("A", 2))
		o := e.hold(t, "u2", e.seat("B", 1))
		e.markPaid(t, o.ID)
		other := e.reconciler(t, 500)
		// Hold the showtime's lock so the first run stays inside its run lock.
		show, err := e.rdb.SetNX(ctx, e.store.Keys.ShowLock(e.show), "test", time.Minute).Result()
		if err != nil || !show {
			t.Fatal("take show lock:", err)
		}
		type result struct {
			rep *reconcile.Report
			err error
		}
		first := make(chan result, 1)
		go func() {
			rep, err := e.rec.RunOnce(ctx)
			first <- result{rep, err}
		}()
		// Should the test stop early, the first run is let go and waited for, so it
		// does not log after the test has ended.
		finished := false
		defer func() {
			if !finished {
				e.rdb.Del(ctx, e.store.Keys.ShowLock(e.show))
				<-first
			}
		}()
		waitUntil(t, 10*time.Second, "the first run to take the reconcile lock", func() bool {
			return len(first) > 0 || e.rdb.Exists(ctx, e.store.Keys.ReconcileLock()).Val() == 1
		})
		if len(first) > 0 {
			res := <-first
			finished = true
			t.Fatalf("the first run ended while the showtime was locked (report %+v, err %v), want it waiting", res.rep, res.err)
		}
		if _, err := other.RunOnce(ctx); !errors.Is(err, reconcile.ErrBusy) {
			t.Errorf("second run: err = %v, want ErrBusy", err)
		}
		e.rdb.Del(ctx, e.store.Keys.ShowLock(e.show))
		res := <-first
		finished = true
		if res.err != nil {
			t.Fatal(res.err)
		}
		if got, want := counts(res.rep), [7]int{0, 1, 0, 0, 2, 1, 0}; got != want {
			t.Errorf("first run repaired %v, want %v", got, want)
		}
		e.verify(t)
	})

	t.Run("StartedTogetherRepairOnce", func(t *testing.T) {
		e := newEnv(t, 2, 10)
		other := e.reconciler(t, 500)
		e.sellOrphan(t, e.show, "ghost2", "u3", e.seat("A", 5))
		start := make(chan struct{})
		type result struct {
			rep *reconcile.Report
			err error
		}
		results := make(chan result, 2)
		for _, r := range []*reconcile.Reconciler{e.rec, other} {
			go func() {
				<-start
				rep, err := r.RunOnce(ctx)
				results <- result{rep, err}
			}()
		}
		close(start)
		released := 0
		for range 2 {
			res := <-results
			switch {
			case errors.Is(res.err, reconcile.ErrBusy):
			case res.err != nil:
				t.Fatal(res.err)
			default:
				released += res.rep.SoldOrphansReleased
			}
		}
		if released != 1 {
			t.Errorf("sold orphans released = %d, want 1 (exactly once)", released)
		}
		e.verify(t)
	})
}

// TestRepairsPublishDeltas: watchers see every repair as a seat-map delta, in version order.
func TestRepairsPublishDeltas(t *testing.T) {
	e := newEnv(t, 2, 10)
	ctx := context.Background()
	sub := e.rdb.Subscribe(ctx, e.store.Keys.Events(e.show))
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the subscription is confirmed
		t.Fatal(err)
	}
	msgs := sub.Channel()

	expired := e.hold(t, "u1", e.seat("A", 1))
	e.rdb.ZRem(ctx, e.store.Keys.OrdersExpiry(), strconv.Itoa(expired.ID))
	paid := e.hold(t, "u2", e.seat("A", 3))
	e.markPaid(t, paid.ID)
	e.holdOrphan(t, e.show, "dead", "u3", e.seat("A", 5))
	e.sellOrphan(t, e.show, "ghost", "u4", e.seat("A", 7))
	e.clock.Advance(booking.DefaultHoldTTL + buffer + time.Second)
	_, before, err := e.store.States(ctx, e.show)
	if err != nil {
		t.Fatal(err)
	}

	rep := e.runOnce(t)
	if got, want := counts(rep), [7]int{1, 1, 0, 1, 1, 2, 0}; got != want {
		t.Fatalf("repairs = %v, want %v", got, want)
	}
	e.rdb.Del(ctx, e.store.Keys.Seats(e.show))
	if rep := e.runOnce(t); rep.HashesRebuilt != 1 {
		t.Fatalf("hashesRebuilt = %d, want 1", rep.HashesRebuilt)
	}
	_, after, err := e.store.States(ctx, e.show)
	if err != nil {
		t.Fatal(err)
	}

	// Every version from before+1 to after arrives, each with the seats it changed.
	want := map[string]seatflow.SeatStatus{ // seat → status after the first run's repairs
		strconv.Itoa(e.seat("A", 1)): seatflow.SeatAvailable, strconv.Itoa(e.seat("A", 3)): seatflow.SeatSold,
		strconv.Itoa(e.seat("A", 5)): seatflow.SeatAvailable, strconv.Itoa(e.seat("A", 7)): seatflow.SeatAvailable,
	}
	last := 0
	rebuilt := false
	timeout := time.After(5 * time.Second)
	for last < after {
		select {
		case m := <-msgs:
			var d seats.Delta
			if err := json.Unmarshal([]byte(m.Payload), &d); err != nil {
				t.Fatal(err)
			}
			if last != 0 && d.Version != last+1 {
				t.Errorf("version %d after %d, want no gap", d.Version, last)
			}
			last = d.Version
			if d.Version <= before {
				continue
			}
			if len(d.Changes) == len(e.hall.Seats) {
				rebuilt = true
				continue
			}
			for _, c := range d.Changes {
				if want[c.SeatID] == c.Status {
					delete(want, c.SeatID)
				}
			}
		case <-timeout:
			t.Fatalf("deltas stopped at version %d, want %d", last, after)
		}
	}
	if len(want) != 0 {
		t.Errorf("repairs without a delta: %v", want)
	}
	if !rebuilt {
		t.Errorf("the rebuild published no delta of the whole hall")
	}
}
