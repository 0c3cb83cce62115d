package reconcile_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/waitlistentry"
	"seatflow/internal/reconcile"
	"seatflow/internal/reports"
	"seatflow/internal/seats"
	"seatflow/internal/waitlist"
)

// wlEnv is env with a waiting list: a showtime of one row of two seats, both held by u1's
// order (so sold out), and the waiting-list service the reconciler asks. Its offerer is
// never run: the tests play the instance that died before offering.
type wlEnv struct {
	*env
	wl   *waitlist.Service
	held *seatflow.Order // u1's order of both seats
}

func newWaitlistEnv(t *testing.T) *wlEnv {
	t.Helper()
	e := &wlEnv{env: newEnv(t, 1, 2)}
	e.wl = waitlist.New(waitlist.Deps{DB: e.db, Seats: e.store, Layouts: &seats.Layouts{Halls: e.cat}, RDB: e.rdb, Keys: e.store.Keys,
		Catalog: e.cat, Booking: e.svc, Sales: &reports.Service{DB: e.db, Now: e.clock.Now}},
		waitlist.Config{Now: e.clock.Now})
	e.rec.Waitlist = e.wl
	e.held = e.hold(t, "u1", e.seat("A", 1), e.seat("A", 2))
	return e
}

// join puts userID on the list for n seats.
func (e *wlEnv) join(t *testing.T, userID string, n int) *seatflow.WaitlistEntry {
	t.Helper()
	en, err := e.wl.Join(context.Background(), userID, waitlist.JoinInput{ShowtimeID: e.show, Seats: n})
	if err != nil {
		t.Fatalf("join %s: %v", userID, err)
	}
	return en
}

// cancelHeld cancels u1's order: its seats are returned to the list while entries wait.
func (e *wlEnv) cancelHeld(t *testing.T) {
	t.Helper()
	if _, err := e.svc.CancelOrder(context.Background(), "u1", e.held.ID); err != nil {
		t.Fatalf("cancel: %v", err)
	}
}

// returnAgo writes the seats as returned to the list age ago on Redis' clock ("4|MS"), as
// release.lua does.
func (e *wlEnv) returnAgo(t *testing.T, age time.Duration, seatIDs ...int) {
	t.Helper()
	now, err := e.rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	at := now.Add(-age)
	for _, id := range seatIDs {
		v := "4|" + strconv.FormatInt(at.UnixMilli(), 10)
		if err := e.rdb.HSet(context.Background(), e.store.Keys.Seats(e.show), strconv.Itoa(id), v).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

func (e *wlEnv) listed(t *testing.T) int {
	t.Helper()
	n, _ := e.rdb.Get(context.Background(), e.store.Keys.Waitlist(e.show)).Int()
	return n
}

// violations returns what Verify finds, as text.
func (e *wlEnv) violations(t *testing.T) []string {
	t.Helper()
	vs, err := reconcile.Verify(context.Background(), e.db, e.store)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.String()
	}
	return out
}

func wantFinding(t *testing.T, vs []string, part string) {
	t.Helper()
	for _, v := range vs {
		if strings.Contains(v, part) {
			return
		}
	}
	t.Errorf("verify found %q, want a finding with %q", vs, part)
}

// TestWaitlistCountRecounted: the count of waiting entries in Redis, lost or drifted, is
// set to MySQL's by a run; Verify reports it before and not after.
func TestWaitlistCountRecounted(t *testing.T) {
	e := newWaitlistEnv(t)
	e.join(t, "u2", 1)
	e.join(t, "u3", 1)
	if got := e.listed(t); got != 2 {
		t.Fatalf("count after two joins = %d, want 2", got)
	}
	for _, lose := range []func(){
		func() { e.rdb.Del(context.Background(), e.store.Keys.Waitlist(e.show)) },
		func() { e.rdb.Set(context.Background(), e.store.Keys.Waitlist(e.show), 7, 0) },
	} {
		lose()
		wantFinding(t, e.violations(t), "counts "+strconv.Itoa(e.listed(t))+" entries waiting in Redis but 2 in MySQL")
		rep := e.runOnce(t)
		if rep.WaitlistCountsRecounted != 1 {
			t.Errorf("waitlistCountsRecounted = %d, want 1 (report %+v)", rep.WaitlistCountsRecounted, rep)
		}
		if got := e.listed(t); got != 2 {
			t.Errorf("count after the run = %d, want 2", got)
		}
		e.verify(t)
	}
	if rep := e.runOnce(t); rep.WaitlistCountsRecounted != 0 {
		t.Errorf("a run over a right count recounted %d", rep.WaitlistCountsRecounted)
	}
	runs, err := e.rec.Runs(context.Background(), 1)
	if err != nil || len(runs) != 1 || runs[0].WaitlistCountsRecounted != 1 {
		t.Errorf("stored run = %+v, %v; want one with waitlistCountsRecounted 1", runs, err)
	}
}

// TestStuckReturnedSeatsOffered: seats returned to the list whose instance died before
// offering them are left alone while young, then offered by a run: the first entry that
// fits gets an offer (a pending order holding them), the seat nobody fits goes on sale.
func TestStuckReturnedSeatsOffered(t *testing.T) {
	e := newWaitlistEnv(t)
	a1, a2 := e.seat("A", 1), e.seat("A", 2)
	e.join(t, "u2", 1)
	e.cancelHeld(t)
	if st := e.state(t, a1); !st.Returned {
		t.Fatalf("seat after the cancel = %+v, want returned to the list", st)
	}

	// Young: the offerer may still be on its way.
	e.returnAgo(t, time.Second, a1, a2)
	if vs := e.violations(t); len(vs) != 0 {
		t.Errorf("verify of seats returned 1 s ago: %q, want nothing", vs)
	}
	if rep := e.runOnce(t); rep.ReturnedSeatsOffered != 0 {
		t.Errorf("returnedSeatsOffered = %d for young returned seats, want 0", rep.ReturnedSeatsOffered)
	}
	if st := e.state(t, a1); !st.Returned {
		t.Fatalf("a young returned seat = %+v after the run, want still returned", st)
	}

	// Stuck.
	e.returnAgo(t, 10*time.Second, a1, a2)
	vs := e.violations(t)
	wantFinding(t, vs, "seat "+strconv.Itoa(a1)+" was returned to the waiting list 10")
	wantFinding(t, vs, "seat "+strconv.Itoa(a2)+" was returned to the waiting list 10")
	rep := e.runOnce(t)
	if rep.ReturnedSeatsOffered != 2 {
		t.Errorf("returnedSeatsOffered = %d, want 2 (report %+v)", rep.ReturnedSeatsOffered, rep)
	}
	entry := e.db.WaitlistEntry.Query().Where(waitlistentry.UserID("u2")).OnlyX(context.Background())
	if entry.State != waitlistentry.StateOFFERED || entry.OrderID == nil {
		t.Fatalf("u2's entry = %s (order %v), want OFFERED with an order", entry.State, entry.OrderID)
	}
	offer := e.db.Order.GetX(context.Background(), *entry.OrderID)
	wantState(t, e.state(t, a1), seatflow.SeatHeld, offer.HoldToken)
	wantState(t, e.state(t, a2), seatflow.SeatAvailable, "")
	if got := e.count(t, "u2"); got != 1 {
		t.Errorf("u2 count = %d, want 1", got)
	}
	e.verify(t)
}

// TestStuckReturnedSeatsGoOnSale: with nobody waiting any more (no sweep visits the
// showtime), returned seats left behind go on sale.
func TestStuckReturnedSeatsGoOnSale(t *testing.T) {
	e := newWaitlistEnv(t)
	a1, a2 := e.seat("A", 1), e.seat("A", 2)
	en := e.join(t, "u2", 1)
	e.cancelHeld(t)
	if _, err := e.wl.Leave(context.Background(), "u2", en.ID); err != nil {
		t.Fatal(err)
	}
	e.returnAgo(t, time.Minute, a1, a2)
	wantFinding(t, e.violations(t), "was returned to the waiting list 1m")

	if rep := e.runOnce(t); rep.ReturnedSeatsOffered != 2 {
		t.Errorf("returnedSeatsOffered = %d, want 2 (report %+v)", rep.ReturnedSeatsOffered, rep)
	}
	wantState(t, e.state(t, a1), seatflow.SeatAvailable, "")
	wantState(t, e.state(t, a2), seatflow.SeatAvailable, "")
	e.verify(t)
}

// TestReturnedSeatsAreNotDrift: a returned seat has no token and is nobody's: the seat
// repairs do not take it for an orphan hold, and the recount of users' counts is not held
// off by it as by a hold in flight.
func TestReturnedSeatsAreNotDrift(t *testing.T) {
	e := newWaitlistEnv(t)
	a1 := e.seat("A", 1)
	e.join(t, "u2", 1)
	e.cancelHeld(t)
	// Young on Redis' clock, so left to the offerer; on the reconciler's clock (behind
	// Redis' here) held in the future, so younger than the orphans' grace.
	e.returnAgo(t, 0, a1, e.seat("A", 2))
	e.rdb.HSet(context.Background(), e.store.Keys.Limits(e.show), "u9", 3)
	rep := e.runOnce(t)
	if rep.OrphanHoldsReleased != 0 || rep.LimitsRecounted != 1 || rep.ReturnedSeatsOffered != 0 {
		t.Errorf("orphanHoldsReleased %d, limitsRecounted %d, returnedSeatsOffered %d; want 0, 1 (u9's count) and 0",
			rep.OrphanHoldsReleased, rep.LimitsRecounted, rep.ReturnedSeatsOffered)
	}
	if st := e.state(t, a1); !st.Returned {
		t.Errorf("seat = %+v, want still returned", st)
	}
	e.verify(t)
}

// TestOfferReheldAfterRedisLost: Redis loses the showtime's keys around an offer. After
// the offer's commit, the rebuilt hash holds its seats for the offer's token (from the
// occupancy); between offer.lua and the commit, the rebuilt hash shows them free and the
// re-hold repair holds them for the offer's order. Either way the offer's seats end held
// by its token and Verify finds nothing.
func TestOfferReheldAfterRedisLost(t *testing.T) {
	for _, mid := range []bool{false, true} {
		t.Run(map[bool]string{false: "after the commit", true: "before the commit"}[mid], func(t *testing.T) {
			e := newWaitlistEnv(t)
			ctx := context.Background()
			a1, a2 := e.seat("A", 1), e.seat("A", 2)
			e.join(t, "u2", 2)
			e.cancelHeld(t)
			lose := func(ctx context.Context) {
				k := e.store.Keys
				if err := e.rdb.Del(ctx, k.Seats(e.show), k.Version(e.show), k.Limits(e.show), k.Waitlist(e.show)).Err(); err != nil {
					t.Errorf("lose the showtime's keys: %v", err)
				}
			}
			var armed, injected atomic.Bool
			if mid {
				armed.Store(true)
				e.db.Order.Use(func(next ent.Mutator) ent.Mutator {
					return ent.MutateFunc(func(ctx context.Context, m ent.Mutation) (ent.Value, error) {
						if m.Op().Is(ent.OpCreate) && armed.CompareAndSwap(true, false) {
							lose(ctx)
							if built, err := e.sales.InitSeats(context.WithoutCancel(ctx), e.show, e.hall.ID); err != nil || !built {
								t.Errorf("rebuild the seat hash: built %v, %v", built, err)
							}
							injected.Store(true)
						}
						return next.Mutate(ctx, m)
					})
				})
			}
			if made, err := e.wl.OfferReturned(ctx, e.show); err != nil || made != 1 {
				t.Fatalf("offer: made %d, %v; want 1", made, err)
			}
			if mid != injected.Load() {
				t.Fatalf("injected %v, want %v", injected.Load(), mid)
			}
			if !mid {
				lose(ctx)
			}
			entry := e.db.WaitlistEntry.Query().Where(waitlistentry.UserID("u2")).OnlyX(ctx)
			offer := e.db.Order.GetX(ctx, *entry.OrderID)
			if len(e.violations(t)) == 0 {
				t.Error("verify found nothing after Redis lost the showtime")
			}
			rep := e.runOnce(t)
			if mid && rep.PendingSeatsReheld != 2 {
				t.Errorf("pendingSeatsReheld = %d, want 2 (report %+v)", rep.PendingSeatsReheld, rep)
			}
			if !mid && rep.HashesRebuilt != 1 {
				t.Errorf("hashesRebuilt = %d, want 1 (report %+v)", rep.HashesRebuilt, rep)
			}
			wantState(t, e.state(t, a1), seatflow.SeatHeld, offer.HoldToken)
			wantState(t, e.state(t, a2), seatflow.SeatHeld, offer.HoldToken)
			if got := e.count(t, "u2"); got != 2 {
				t.Errorf("u2 count = %d, want 2", got)
			}
			e.verify(t)
			if _, err := e.svc.PayOrder(ctx, "u2", offer.ID, "pay"); err != nil {
				t.Fatalf("pay the offer: %v", err)
			}
			wantState(t, e.state(t, a1), seatflow.SeatSold, offer.HoldToken)
			e.verify(t)
		})
	}
}

// TestReturnedSeatsOfAnOrderReheld: seats MySQL gives to a pending order but Redis shows
// returned to the list (nobody's there) are held for the order again, not offered to the
// list: MySQL's occupancy has them.
func TestReturnedSeatsOfAnOrderReheld(t *testing.T) {
	e := newWaitlistEnv(t)
	a1, a2 := e.seat("A", 1), e.seat("A", 2)
	e.join(t, "u2", 1)
	e.returnAgo(t, time.Minute, a1, a2)
	e.rdb.HDel(context.Background(), e.store.Keys.Limits(e.show), "u1")
	rep := e.runOnce(t)
	if rep.PendingSeatsReheld != 2 || rep.ReturnedSeatsOffered != 0 || rep.PaidSeatConflicts != 0 {
		t.Errorf("pendingSeatsReheld %d, returnedSeatsOffered %d, paidSeatConflicts %d; want 2, 0, 0",
			rep.PendingSeatsReheld, rep.ReturnedSeatsOffered, rep.PaidSeatConflicts)
	}
	wantState(t, e.state(t, a1), seatflow.SeatHeld, e.held.HoldToken)
	wantState(t, e.state(t, a2), seatflow.SeatHeld, e.held.HoldToken)
	if got := e.count(t, "u1"); got != 2 {
		t.Errorf("u1 count = %d, want 2", got)
	}
	e.verify(t)
}
