package reconcile_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/order"
	"seatflow/ent/purchasecount"
	"seatflow/ent/seatoccupancy"
	"seatflow/internal/booking"
	"seatflow/internal/database"
	"seatflow/internal/reconcile"
)

// purchaseCount is the user's purchase_counts row for the first showtime: its seats, and
// whether there is one.
func (e *env) purchaseCount(t testing.TB, userID string) (int, bool) {
	t.Helper()
	row, err := e.db.PurchaseCount.Query().Where(purchasecount.UserID(userID), purchasecount.ShowtimeID(e.show)).
		Only(context.Background())
	if ent.IsNotFound(err) {
		return 0, false
	} else if err != nil {
		t.Fatal(err)
	}
	return row.Seats, true
}

// occupied counts the user's seat_occupancies rows for the first showtime.
func (e *env) occupied(t testing.TB, userID string) int {
	t.Helper()
	n, err := e.db.SeatOccupancy.Query().Where(seatoccupancy.ShowtimeID(e.show),
		seatoccupancy.HasOrderWith(order.UserID(userID))).Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// wantPurchaseCount fails unless the user's purchase count is a row of want seats and
// want is their occupancy.
func (e *env) wantPurchaseCount(t testing.TB, userID string, want int) {
	t.Helper()
	got, ok := e.purchaseCount(t, userID)
	if occ := e.occupied(t, userID); !ok || got != want || occ != want {
		t.Errorf("%s's purchase count = %d (row: %v), want a row of %d (occupancy rows: %d)", userID, got, ok, want, occ)
	}
}

// violations returns what verify finds, as text.
func (e *env) violations(t testing.TB) []string {
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

// purchaseDrifts are the ways a purchase count can be off its occupancy. u1 holds A1 and A2
// before each drift is made.
var purchaseDrifts = []struct {
	name  string
	user  string
	drift func(t testing.TB, e *env)
	// verify's words for it, and the count the repair sets
	found string
	want  int
}{
	{"RowDeleted", "u1", func(t testing.TB, e *env) {
		e.db.PurchaseCount.Delete().Where(purchasecount.UserID("u1")).ExecX(context.Background())
	}, `user "u1"'s purchase count in MySQL is 0, their orders occupy 2 seats`, 2},
	{"RowTooHigh", "u1", func(t testing.TB, e *env) {
		e.db.PurchaseCount.Update().Where(purchasecount.UserID("u1")).SetSeats(5).ExecX(context.Background())
	}, `user "u1"'s purchase count in MySQL is 5, their orders occupy 2 seats`, 2},
	{"RowTooLow", "u1", func(t testing.TB, e *env) {
		e.db.PurchaseCount.Update().Where(purchasecount.UserID("u1")).SetSeats(1).ExecX(context.Background())
	}, `user "u1"'s purchase count in MySQL is 1, their orders occupy 2 seats`, 2},
	{"RowWithoutOccupancy", "u9", func(t testing.TB, e *env) {
		e.db.PurchaseCount.Create().SetUserID("u9").SetShowtimeID(e.show).SetSeats(3).ExecX(context.Background())
	}, `user "u9"'s purchase count in MySQL is 3, their orders occupy 0 seats`, 0},
}

// TestPurchaseCountRecount: each way a purchase count can drift from the occupancy is found
// by verify, repaired by one run (a missing row inserted, a wrong one corrected, a row
// without occupancy set to 0 and kept), counted in the run's report and its stored record,
// and leaves verify clean and the next run nothing to do. Other customers' counts are left
// alone.
func TestPurchaseCountRecount(t *testing.T) {
	for _, d := range purchaseDrifts {
		t.Run(d.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, 2, 10)
			e.hold(t, "u1", e.seat("A", 1), e.seat("A", 2))
			e.hold(t, "u2", e.seat("B", 1))
			d.drift(t, e)

			if got := e.violations(t); len(got) != 1 || !strings.HasSuffix(got[0], d.found) {
				t.Fatalf("verify found %q, want only %q", got, d.found)
			}
			rep := e.runOnce(t)
			if rep.PurchaseCountsRecounted != 1 {
				t.Errorf("purchaseCountsRecounted = %d, want 1", rep.PurchaseCountsRecounted)
			}
			e.wantPurchaseCount(t, d.user, d.want)
			e.wantPurchaseCount(t, "u2", 1)
			e.verify(t)
			runs, err := e.rec.Runs(ctx, 1)
			if err != nil || len(runs) != 1 || runs[0].PurchaseCountsRecounted != 1 {
				t.Errorf("stored run = %+v, %v; want one with purchaseCountsRecounted 1", runs, err)
			}
			if again := e.runOnce(t); again.PurchaseCountsRecounted != 0 {
				t.Errorf("the next run recounted %d, want 0", again.PurchaseCountsRecounted)
			}
		})
	}
}

// TestPurchaseCountRecountBatch: the recounts are bounded by the run's batch like every
// repair; the showtime is visited again first by the next run, which finishes them.
func TestPurchaseCountRecountBatch(t *testing.T) {
	e := newEnv(t, 2, 10)
	for i, u := range []string{"u1", "u2", "u3"} {
		e.hold(t, u, e.seat("A", i+1))
	}
	e.db.PurchaseCount.Update().SetSeats(4).ExecX(context.Background())
	e.rec = e.reconciler(t, 2)
	if rep := e.runOnce(t); rep.PurchaseCountsRecounted != 2 {
		t.Errorf("first run recounted %d, want 2 (the batch)", rep.PurchaseCountsRecounted)
	}
	if rep := e.runOnce(t); rep.PurchaseCountsRecounted != 1 {
		t.Errorf("second run recounted %d, want the 1 left", rep.PurchaseCountsRecounted)
	}
	for _, u := range []string{"u1", "u2", "u3"} {
		e.wantPurchaseCount(t, u, 1)
	}
	e.verify(t)
}

// TestPurchaseCountRecountRacingHolds: one customer holds, cancels, pays and has seats
// refunded (whole orders and single seats) from many goroutines while a reconciler run
// recounts their drifted purchase count. The customer keeps one pending order throughout.
// Each round drifts the count (100 too high, or the row deleted), lets the goroutines run,
// and starts one run in the middle of them; once they stop, with no recount after that
// run, the count must equal the occupancy: a hold, cancel or refund racing the recount was
// neither counted twice nor lost. A round whose run did not recount (a deadlock) is
// repaired quietly and not counted; most rounds must race.
func TestPurchaseCountRecountRacingHolds(t *testing.T) {
	const goroutines, iterations, rounds = 8, 12, 8
	const racer = "racer"
	ctx := context.Background()
	e := newEnv(t, goroutines+1, 10) // a row of seats per goroutine, and one for the pending order
	e.hold(t, racer, seatOf(e.hall, string(rune('A'+goroutines)), 1))

	mine := func(g int) []int { // goroutine g's seats: row g
		var out []int
		for _, s := range e.hall.Seats {
			if s.Row == string(rune('A'+g)) {
				out = append(out, s.ID)
			}
		}
		return out
	}
	// One goroutine's iteration: a hold of one or two of its seats, then a cancel, a
	// payment and a whole refund, or a payment and a refund of one seat then of the rest:
	// the seats are free again after it.
	iteration := func(rng *rand.Rand, seats []int, key string) error {
		ids := seats[:1+rng.IntN(2)]
		o, err := e.svc.HoldSeats(ctx, racer, booking.HoldSeatsInput{ShowtimeID: e.show, SeatIDs: ids, IdempotencyKey: key})
		if seatflow.ErrorCode(err) == seatflow.EUNAVAILABLE {
			return nil // a deadlock of the customer's holds, met in every retry: nothing held
		} else if err != nil {
			return fmt.Errorf("hold %v: %w", ids, err)
		}
		switch rng.IntN(4) {
		case 0, 1:
			_, err = e.svc.CancelOrder(ctx, racer, o.ID)
		case 2:
			if _, err = e.svc.PayOrder(ctx, racer, o.ID, "pay"); err == nil {
				_, err = e.svc.RefundOrder(ctx, o.ID)
			}
		case 3:
			if _, err = e.svc.PayOrder(ctx, racer, o.ID, "pay"); err == nil {
				if _, err = e.svc.RefundSeats(ctx, "staff", o.ID, ids[:1]); err == nil && len(ids) > 1 {
					_, err = e.svc.RefundOrder(ctx, o.ID)
				}
			}
		}
		if err != nil {
			return fmt.Errorf("order %d: %w", o.ID, err)
		}
		return nil
	}

	raced := 0
	for round := range rounds {
		if round%2 == 0 {
			e.db.PurchaseCount.Update().Where(purchasecount.UserID(racer)).AddSeats(100).ExecX(ctx)
		} else {
			e.db.PurchaseCount.Delete().Where(purchasecount.UserID(racer)).ExecX(ctx)
		}
		var ops atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, goroutines)
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(round), uint64(g)))
				seats := mine(g)
				for i := range iterations {
					rng.Shuffle(len(seats), func(i, j int) { seats[i], seats[j] = seats[j], seats[i] })
					if err := iteration(rng, seats, fmt.Sprintf("r%d-g%d-i%d", round, g, i)); err != nil {
						errs <- err
						return
					}
					ops.Add(1)
				}
			}()
		}
		waitUntil(t, time.Minute, "the goroutines' first third", func() bool { return ops.Load() >= goroutines*iterations/3 })
		before := ops.Load()
		rep, err := e.rec.RunOnce(ctx)
		during := ops.Load() - before
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", round, err)
		}
		if err != nil {
			t.Fatalf("round %d: RunOnce: %v", round, err)
		}
		if rep.PurchaseCountsRecounted == 1 {
			raced++
		} else {
			t.Logf("round %d: the run recounted %d counts; repaired after the round", round, rep.PurchaseCountsRecounted)
			e.runOnce(t)
		}
		got, _ := e.purchaseCount(t, racer)
		occ := e.occupied(t, racer)
		t.Logf("round %d: %d operations finished during the run; count %d, occupancy %d", round, during, got, occ)
		if got != occ {
			t.Fatalf("round %d: the purchase count is %d after the recount, the customer's orders occupy %d seats", round, got, occ)
		}
	}
	if raced < rounds/2 {
		t.Errorf("the recount raced the customer's orders in %d rounds of %d, want at least %d", raced, rounds, rounds/2)
	}
	e.runOnce(t) // the Redis side's counts, which the test does not judge
	e.verify(t)
}

// TestPurchaseCountRecountEmbedded: on the embedded SQLite (one transaction at a time) the
// recount repairs every kind of drift too, with the same statements.
func TestPurchaseCountRecountEmbedded(t *testing.T) {
	ctx := context.Background()
	client, db, err := database.OpenSQLite(filepath.Join(t.TempDir(), "seatflow.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	if err := database.Migrate(ctx, client, db); err != nil {
		t.Fatal(err)
	}
	e := newEnvOn(t, client, true, 2, 10)
	e.hold(t, "u1", e.seat("A", 1), e.seat("A", 2))
	e.hold(t, "u2", e.seat("B", 1))
	e.hold(t, "u3", e.seat("B", 3))
	e.db.PurchaseCount.Delete().Where(purchasecount.UserID("u1")).ExecX(ctx)
	e.db.PurchaseCount.Update().Where(purchasecount.UserID("u2")).SetSeats(7).ExecX(ctx)
	e.db.PurchaseCount.Create().SetUserID("u9").SetShowtimeID(e.show).SetSeats(3).ExecX(ctx)
	if got := e.violations(t); len(got) != 3 {
		t.Fatalf("verify found %q, want the 3 drifted counts", got)
	}
	if rep := e.runOnce(t); rep.PurchaseCountsRecounted != 3 {
		t.Errorf("purchaseCountsRecounted = %d, want 3", rep.PurchaseCountsRecounted)
	}
	e.wantPurchaseCount(t, "u1", 2)
	e.wantPurchaseCount(t, "u2", 1)
	e.wantPurchaseCount(t, "u3", 1)
	e.wantPurchaseCount(t, "u9", 0)
	e.verify(t)
}
