package reconcile_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/ent"
	"seatflow/internal/booking"
	"seatflow/internal/catalog"
	"seatflow/internal/payments"
	"seatflow/internal/reconcile"
	"seatflow/internal/sales"
	"seatflow/internal/seats"
	"seatflow/internal/tooling/testenv"
)

const (
	grace  = 2 * time.Minute
	buffer = time.Minute
)

// env is one test's stores, booking service and reconciler over its own database and
// Redis prefix, with one on-sale showtime (more with addShowtime).
type env struct {
	db    *ent.Client
	rdb   redis.UniversalClient
	store *seats.Store
	svc   *booking.Service
	sales *sales.Service
	cat   *catalog.Service
	rec   *reconcile.Reconciler
	clock *testenv.Clock
	show  int
	hall  *seatflow.Hall
	halls map[int]*seatflow.Hall // showtime → hall
}

func newEnv(t testing.TB, rows, perRow int) *env {
	t.Helper()
	return newEnvOn(t, testenv.MySQL(t).Client, false, rows, perRow)
}

// newEnvOn is newEnv over the database db; singleWriter says it runs one transaction at
// a time (the embedded SQLite).
func newEnvOn(t testing.TB, db *ent.Client, singleWriter bool, rows, perRow int) *env {
	t.Helper()
	r := testenv.NewRedis(t)
	clk := testenv.NewClock(time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC))
	store := &seats.Store{RDB: r.Client, Keys: r.Keys, Now: clk.Now}
	e := &env{db: db, rdb: r.Client, store: store, clock: clk, halls: map[int]*seatflow.Hall{}}
	cat := &catalog.Service{DB: db, Now: clk.Now}
	e.cat = cat
	e.sales = &sales.Service{DB: db, Seats: store, RDB: r.Client, Keys: r.Keys, Catalog: cat, Now: clk.Now}
	e.svc = booking.New(booking.Deps{DB: db, Seats: store, Layouts: &seats.Layouts{Halls: cat}, Hashes: e.sales,
		RDB: r.Client, Keys: r.Keys, Catalog: cat, Provider: payments.Test{}}, booking.Config{Now: clk.Now, SingleWriter: singleWriter})
	e.rec = e.reconciler(t, 500)
	e.show, e.hall = e.addShowtime(t, rows, perRow)
	return e
}

// reconciler returns a new Reconciler (as another instance would have) over e's stores.
func (e *env) reconciler(t testing.TB, batch int) *reconcile.Reconciler {
	return &reconcile.Reconciler{DB: e.db, Seats: e.store, Orders: e.svc, Sales: e.sales, RDB: e.rdb, Keys: e.store.Keys,
		Config: reconcile.Config{Batch: batch, Grace: grace, ExpiryBuffer: buffer, Now: e.clock.Now,
			Log: slog.New(slog.NewTextHandler(t.Output(), nil))}}
}

// addShowtime creates a movie, a rows×perRow hall and an on-sale showtime with its seat
// hash (no purchase limit to speak of, gaps allowed).
func (e *env) addShowtime(t testing.TB, rows, perRow int) (int, *seatflow.Hall) {
	t.Helper()
	ctx := context.Background()
	showID, hallID := testenv.Showtime(t, e.db, e.clock.Now(), testenv.ShowtimeSpec{Rows: rows, PerRow: perRow,
		Limit: 1000, AllowGaps: true, StartsIn: 24 * time.Hour,
		Prices: map[seatflow.SeatKind]int{seatflow.SeatStandard: 1000}})
	hall, err := e.cat.Hall(ctx, hallID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Init(ctx, showID, hall, nil); err != nil {
		t.Fatal(err)
	}
	e.halls[showID] = hall
	return showID, hall
}

// seat returns the id of seat n of row ("A", "B", ...) of the first showtime's hall.
func (e *env) seat(row string, n int) int { return seatOf(e.hall, row, n) }

func seatOf(hall *seatflow.Hall, row string, n int) int {
	for _, s := range hall.Seats {
		if s.Row == row && s.Number == n {
			return s.ID
		}
	}
	panic(fmt.Sprintf("no seat %s%d", row, n))
}

// hold makes a pending order through booking's normal path.
func (e *env) hold(t testing.TB, userID string, seatIDs ...int) *seatflow.Order {
	t.Helper()
	o, err := e.svc.HoldSeats(context.Background(), userID, booking.HoldSeatsInput{ShowtimeID: e.show,
		SeatIDs: seatIDs, IdempotencyKey: fmt.Sprint(seatIDs)})
	if err != nil {
		t.Fatalf("hold %v: %v", seatIDs, err)
	}
	return o
}

// holdOrphan holds seats in Redis only, as holdSeats does before it dies: no order.
func (e *env) holdOrphan(t testing.TB, showID int, token, userID string, seatIDs ...int) {
	t.Helper()
	err := e.store.Hold(context.Background(), seats.HoldRequest{ShowtimeID: showID, Layout: seats.NewLayout(e.halls[showID]),
		SeatIDs: seatIDs, Token: token, UserID: userID, AllowGaps: true})
	if err != nil {
		t.Fatalf("hold orphan %v: %v", seatIDs, err)
	}
}

// sellOrphan sells seats in Redis to a token no order has.
func (e *env) sellOrphan(t testing.TB, showID int, token, userID string, seatIDs ...int) {
	t.Helper()
	e.holdOrphan(t, showID, token, userID, seatIDs...)
	if n, err := e.store.Confirm(context.Background(), showID, token, seatIDs); err != nil || n != len(seatIDs) {
		t.Fatalf("confirm orphan: %d, %v", n, err)
	}
}

// markPaid sets an order PAID in MySQL only, as payOrder does before it dies.
func (e *env) markPaid(t testing.TB, id int) {
	t.Helper()
	e.db.Order.UpdateOneID(id).SetStatus(seatflow.OrderPaid).SetPaidAt(e.clock.Now()).SetPaymentRef("pay").ExecX(context.Background())
}

func (e *env) runOnce(t testing.TB) *reconcile.Report {
	t.Helper()
	rep, err := e.rec.RunOnce(context.Background())
	if err != nil {
		t.Fatalf("RunOnce: %v", err)
	}
	return rep
}

func (e *env) state(t testing.TB, seatID int) seats.State {
	t.Helper()
	return e.stateOf(t, e.show, seatID)
}

func (e *env) stateOf(t testing.TB, showID, seatID int) seats.State {
	t.Helper()
	states, _, err := e.store.States(context.Background(), showID)
	if err != nil {
		t.Fatal(err)
	}
	return states[seatID]
}

func (e *env) count(t testing.TB, userID string) int {
	t.Helper()
	counts, err := e.store.Counts(context.Background(), e.show)
	if err != nil {
		t.Fatal(err)
	}
	return counts[userID]
}

// verify fails the test on any broken invariant.
func (e *env) verify(t testing.TB) {
	t.Helper()
	vs, err := reconcile.Verify(context.Background(), e.db, e.store)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Errorf("verify: %s", v)
	}
}

func wantState(t testing.TB, got seats.State, status seatflow.SeatStatus, token string) {
	t.Helper()
	if got.Status != status || got.Token != token {
		t.Errorf("seat = %s by %q, want %s by %q", got.Status, got.Token, status, token)
	}
}

// counts of a report, for comparing whole reports.
func counts(r *reconcile.Report) [7]int {
	return [7]int{r.ExpiredCancelled, r.PaidSeatsFixed, r.HashesRebuilt, r.OrphanHoldsReleased, r.SoldOrphansReleased,
		r.LimitsRecounted, r.PendingSeatsReheld}
}

// waitUntil polls cond until it holds and fails the test, naming what it waited for, once
// timeout has passed: a condition that never comes must not hang the suite until go
// test's own timeout.
func waitUntil(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", timeout, what)
		}
		time.Sleep(time.Millisecond)
	}
}
