package booking_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/seat"
	"seatflow/ent/showtime"
	"seatflow/internal/booking"
	"seatflow/internal/catalog"
	"seatflow/internal/seats"
	"seatflow/internal/testenv"
)

// env is one test's service over its own database and Redis prefix, with an on-sale
// showtime in a rows×perRow hall (row A is PREMIUM, the rest STANDARD).
type env struct {
	svc   *booking.Service
	db    *ent.Client
	store *seats.Store
	rdb   redis.UniversalClient
	clock *testenv.Clock
	hall  *catalog.Hall
	show  int
}

type showOpts struct {
	limit     int
	allowGaps bool
	status    showtime.Status
}

func newEnv(t testing.TB, rows, perRow int, opts showOpts) *env {
	t.Helper()
	db := testenv.MySQL(t).Client
	r := testenv.NewRedis(t)
	clk := testenv.NewClock(time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC))
	store := &seats.Store{RDB: r.Client, Keys: r.Keys, Now: clk.Now}
	e := &env{db: db, store: store, rdb: r.Client, clock: clk}
	e.svc = &booking.Service{DB: db, Seats: store, RDB: r.Client, Keys: r.Keys, Catalog: &catalog.Service{DB: db, Now: clk.Now}, Now: clk.Now}
	e.show, e.hall = e.addShowtime(t, rows, perRow, opts)
	return e
}

// addShowtime creates a movie, a hall and a showtime; an on-sale showtime gets its seat hash.
func (e *env) addShowtime(t testing.TB, rows, perRow int, opts showOpts) (int, *catalog.Hall) {
	t.Helper()
	ctx := context.Background()
	now := e.clock.Now()
	m := e.db.Movie.Create().SetTitle("Film").SetDurationMin(100).SetCreatedAt(now).SetUpdatedAt(now).SaveX(ctx)
	h := e.db.Hall.Create().SetName("Hall").SetCreatedAt(now).SaveX(ctx)
	var bulk []*ent.SeatCreate
	for r := 0; r < rows; r++ {
		kind := seat.KindSTANDARD
		if r == 0 {
			kind = seat.KindPREMIUM
		}
		for n := 1; n <= perRow; n++ {
			bulk = append(bulk, e.db.Seat.Create().SetHallID(h.ID).SetRowLabel(string(rune('A'+r))).SetNumber(n).
				SetX(n*10).SetY(r*10).SetKind(kind))
		}
	}
	e.db.Seat.CreateBulk(bulk...).SaveX(ctx)
	if opts.limit == 0 {
		opts.limit = 6
	}
	if opts.status == "" {
		opts.status = showtime.StatusON_SALE
	}
	st := e.db.Showtime.Create().SetMovieID(m.ID).SetHallID(h.ID).SetStartsAt(now.Add(time.Hour)).
		SetEndsAt(now.Add(3 * time.Hour)).SetStatus(opts.status).SetPurchaseLimit(opts.limit).
		SetAllowSeatGaps(opts.allowGaps).SetPrices(map[string]int{"STANDARD": 1000, "PREMIUM": 1500}).
		SetCurrency("EUR").SetCreatedAt(now).SetUpdatedAt(now).SaveX(ctx)
	hall, err := e.svc.Catalog.Hall(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	if opts.status == showtime.StatusON_SALE {
		if _, err := e.store.Init(ctx, st.ID, hall, nil); err != nil {
			t.Fatal(err)
		}
	}
	return st.ID, hall
}

// seat returns the id of seat number n of row ("A", "B", ...).
func (e *env) seat(row string, n int) int {
	for _, s := range e.hall.Seats {
		if s.Row == row && s.Number == n {
			return s.ID
		}
	}
	panic(fmt.Sprintf("no seat %s%d", row, n))
}

func (e *env) hold(userID, key string, seatIDs ...int) (*booking.Order, error) {
	return e.svc.HoldSeats(context.Background(), userID, booking.HoldSeatsInput{ShowtimeID: e.show, SeatIDs: seatIDs, IdempotencyKey: key})
}

func (e *env) mustHold(t testing.TB, userID, key string, seatIDs ...int) *booking.Order {
	t.Helper()
	o, err := e.hold(userID, key, seatIDs...)
	if err != nil {
		t.Fatalf("hold %v: %v", seatIDs, err)
	}
	return o
}

func (e *env) state(t testing.TB, seatID int) seats.State {
	t.Helper()
	states, _, err := e.store.States(context.Background(), e.show)
	if err != nil {
		t.Fatal(err)
	}
	return states[seatID]
}

func (e *env) count(t testing.TB, userID string) int {
	t.Helper()
	n, err := e.rdb.HGet(context.Background(), e.store.Keys.Limits(e.show), userID).Int()
	if err == redis.Nil {
		return 0
	} else if err != nil {
		t.Fatal(err)
	}
	return n
}

func wantCode(t testing.TB, err error, code string) {
	t.Helper()
	if got := seatflow.ErrorCode(err); got != code {
		t.Fatalf("error code = %q (%v), want %q", got, err, code)
	}
}

// copyService returns a service with the same settings as the test's, to change one.
func (e *env) copyService() *booking.Service {
	s := e.svc
	return &booking.Service{DB: s.DB, Seats: s.Seats, RDB: s.RDB, Keys: s.Keys, Catalog: s.Catalog, Now: s.Now,
		HoldTTL: s.HoldTTL, Limiter: s.Limiter, HoldRate: s.HoldRate, OrderRate: s.OrderRate}
}
