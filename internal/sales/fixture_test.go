package sales_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/internal/catalog"
	"seatflow/internal/sales"
	"seatflow/internal/seats"
	"seatflow/internal/tooling/testenv"
)

// env is one test's sales service over its own database and Redis prefix.
type env struct {
	t     testing.TB
	db    *ent.Client
	store *seats.Store
	clock *testenv.Clock
	cat   *catalog.Service
	svc   *sales.Service
}

func newEnv(t testing.TB) *env {
	t.Helper()
	db := testenv.MySQL(t).Client
	r := testenv.NewRedis(t)
	clk := testenv.NewClock(time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC))
	store := &seats.Store{RDB: r.Client, Keys: r.Keys, Now: clk.Now}
	cat := &catalog.Service{DB: db, Now: clk.Now}
	svc := &sales.Service{DB: db, Seats: store, RDB: r.Client, Keys: r.Keys, Catalog: cat, Now: clk.Now}
	return &env{t: t, db: db, store: store, clock: clk, cat: cat, svc: svc}
}

// showtime adds a showtime of the status in a hall of 2 rows of 4 seats, starting in
// startsIn (1 h when zero), and returns it with its hall.
func (e *env) showtime(status seatflow.ShowtimeStatus, startsIn time.Duration) (int, *seatflow.Hall) {
	e.t.Helper()
	showID, hallID := testenv.Showtime(e.t, e.db, e.clock.Now(), testenv.ShowtimeSpec{Rows: 2, PerRow: 4, Status: status, StartsIn: startsIn})
	hall, err := e.cat.Hall(context.Background(), hallID)
	if err != nil {
		e.t.Fatal(err)
	}
	return showID, hall
}

// seat is the id of seat number n of row ("A", "B").
func seat(hall *seatflow.Hall, row string, n int) int {
	for _, s := range hall.Seats {
		if s.Row == row && s.Number == n {
			return s.ID
		}
	}
	panic(fmt.Sprintf("no seat %s%d", row, n))
}

// order writes an order of user with the status over seats of showID, with its
// occupancy rows, as booking does when it holds them.
func (e *env) order(user string, showID int, status seatflow.OrderStatus, seatIDs ...int) string {
	e.t.Helper()
	ctx := context.Background()
	now := e.clock.Now()
	token := testenv.RandomName("tok")
	o := e.db.Order.Create().SetUserID(user).SetShowtimeID(showID).SetHoldToken(token).SetIdempotencyKey(token).
		SetStatus(status).SetAmountCents(1000 * len(seatIDs)).SetExpiresAt(now.Add(10 * time.Minute)).SetCreatedAt(now).SaveX(ctx)
	for _, id := range seatIDs {
		e.db.SeatOccupancy.Create().SetShowtimeID(showID).SetSeatID(id).SetOrderID(o.ID).ExecX(ctx)
	}
	return token
}

// states is the seat hash of showID, by seat (nil when there is none).
func (e *env) states(showID int) map[int]seats.State {
	e.t.Helper()
	ctx := context.Background()
	if ok, err := e.store.Exists(ctx, showID); err != nil {
		e.t.Fatal(err)
	} else if !ok {
		return nil
	}
	st, _, err := e.store.States(ctx, showID)
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}

// status is showID's status in MySQL.
func (e *env) status(showID int) seatflow.ShowtimeStatus {
	e.t.Helper()
	st, err := e.cat.FreshShowtime(context.Background(), showID)
	if err != nil {
		e.t.Fatal(err)
	}
	return st.Status
}

func wantCode(t testing.TB, err error, code string) {
	t.Helper()
	if got := seatflow.ErrorCode(err); got != code {
		t.Fatalf("error code = %q (%v), want %q", got, err, code)
	}
}
