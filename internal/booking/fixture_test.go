package booking_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/ent"
	"seatflow/internal/booking"
	"seatflow/internal/catalog"
	"seatflow/internal/keys"
	"seatflow/internal/payments"
	"seatflow/internal/sales"
	"seatflow/internal/seats"
	"seatflow/internal/tooling/testenv"
)

// env is one test's service over its own database and Redis prefix, with an on-sale
// showtime in a rows×perRow hall (row A is PREMIUM, the rest STANDARD).
type env struct {
	svc   *booking.Service
	db    *ent.Client
	store *seats.Store
	rdb   redis.UniversalClient
	clock *testenv.Clock
	cat   *catalog.Service
	hall  *seatflow.Hall
	show  int
}

type showOpts struct {
	limit     int
	allowGaps bool
	status    seatflow.ShowtimeStatus
	startsIn  time.Duration // from the clock; 1h (its sales close 15 minutes after)
	// ticketPrices are prices of other ticket types than ADULT (STANDARD 1000, PREMIUM 1500).
	ticketPrices []seatflow.Price
	// kinds gives seats a kind of their own by label ("A1"); ACCESSIBLE and COMPANION seats
	// then cost 800 (ADULT).
	kinds map[string]seatflow.SeatKind
}

func newEnv(t testing.TB, rows, perRow int, opts showOpts) *env {
	t.Helper()
	db := testenv.MySQL(t).Client
	r := testenv.NewRedis(t)
	clk := testenv.NewClock(time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC))
	store := &seats.Store{RDB: r.Client, Keys: r.Keys, Now: clk.Now}
	e := &env{db: db, store: store, rdb: r.Client, clock: clk}
	cat := &catalog.Service{DB: db, Now: clk.Now}
	e.svc = booking.New(booking.Deps{DB: db, Seats: store, Layouts: &seats.Layouts{Halls: cat},
		Hashes: &sales.Service{DB: db, Seats: store, RDB: r.Client, Keys: r.Keys, Catalog: cat, Now: clk.Now},
		RDB:    r.Client, Keys: r.Keys, Catalog: cat, Provider: payments.Test{}}, booking.Config{Now: clk.Now})
	e.cat = cat
	e.show, e.hall = e.addShowtime(t, rows, perRow, opts)
	return e
}

// addShowtime creates a movie, a hall (row A PREMIUM) and a showtime; an on-sale
// showtime gets its seat hash.
func (e *env) addShowtime(t testing.TB, rows, perRow int, opts showOpts) (int, *seatflow.Hall) {
	t.Helper()
	ctx := context.Background()
	showID, hallID := testenv.Showtime(t, e.db, e.clock.Now(), testenv.ShowtimeSpec{Rows: rows, PerRow: perRow,
		PremiumFirstRow: true, Status: opts.status, Limit: opts.limit, AllowGaps: opts.allowGaps, StartsIn: opts.startsIn,
		TicketPrices: opts.ticketPrices, Kinds: opts.kinds, Prices: kindPrices(opts.kinds)})
	hall, err := e.cat.Hall(ctx, hallID)
	if err != nil {
		t.Fatal(err)
	}
	if opts.status == "" || opts.status == seatflow.ShowtimeOnSale {
		if _, err := e.store.Init(ctx, showID, hall, nil); err != nil {
			t.Fatal(err)
		}
	}
	return showID, hall
}

// kindPrices are the ADULT prices of a hall whose seats have kinds (nil: the fixture's
// defaults): STANDARD 1000, PREMIUM 1500, ACCESSIBLE and COMPANION 800.
func kindPrices(kinds map[string]seatflow.SeatKind) map[seatflow.SeatKind]int {
	if kinds == nil {
		return nil
	}
	return map[seatflow.SeatKind]int{seatflow.SeatStandard: 1000, seatflow.SeatPremium: 1500,
		seatflow.SeatAccessible: 800, seatflow.SeatCompanion: 800}
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

func (e *env) hold(userID, key string, seatIDs ...int) (*seatflow.Order, error) {
	return e.svc.HoldSeats(context.Background(), userID, booking.HoldSeatsInput{ShowtimeID: e.show, SeatIDs: seatIDs, IdempotencyKey: key})
}

func (e *env) mustHold(t testing.TB, userID, key string, seatIDs ...int) *seatflow.Order {
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

// withoutRedis is the test's service with a Redis that cannot be reached (nothing listens).
func (e *env) withoutRedis(t testing.TB) *booking.Service {
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { down.Close() })
	svc := e.copyService()
	svc.RDB = down
	svc.Seats = &seats.Store{RDB: down, Keys: keys.New("x")}
	return svc
}

// copyService returns a service with the same settings as the test's, to change one.
func (e *env) copyService() *booking.Service {
	s := e.svc
	c := *s
	return &c
}

// orderStatus is the status of one of the user's orders.
func (e *env) orderStatus(t testing.TB, userID string, id int) seatflow.OrderStatus {
	t.Helper()
	o, err := e.svc.Order(context.Background(), userID, id)
	if err != nil {
		t.Fatal(err)
	}
	return o.Status
}

// waitForStatus waits until the order has status want, for what runs on its own (a
// worker), and fails the test if that takes more than 5 s.
func (e *env) waitForStatus(t testing.TB, userID string, id int, want seatflow.OrderStatus) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := e.orderStatus(t, userID, id)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("order %d is still %s after 5 s, want %s", id, got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
