package waitlist_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"seatflow"
	"seatflow/ent"
	"seatflow/internal/booking"
	"seatflow/internal/catalog"
	"seatflow/internal/payments"
	"seatflow/internal/reports"
	"seatflow/internal/sales"
	"seatflow/internal/seats"
	"seatflow/internal/tooling/testenv"
	"seatflow/internal/waitlist"
)

// TestMain fails the package's run if a goroutine outlives its tests (feeds, offerers).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// env is one test's waiting list, with booking, over its own database and Redis prefix,
// and an on-sale showtime of rows×perRow seats (gaps allowed, limit 6).
type env struct {
	t     testing.TB
	db    *ent.Client
	r     *testenv.Redis
	clock *testenv.Clock
	store *seats.Store
	book  *booking.Service
	wl    *waitlist.Service
	hall  *seatflow.Hall
	show  int
}

func newEnv(t testing.TB, rows, perRow int) *env {
	t.Helper()
	return newEnvWith(t, testenv.ShowtimeSpec{Rows: rows, PerRow: perRow, AllowGaps: true})
}

// newEnvWith is newEnv with the showtime of spec.
func newEnvWith(t testing.TB, spec testenv.ShowtimeSpec) *env {
	t.Helper()
	db := testenv.MySQL(t).Client
	r := testenv.NewRedis(t)
	clk := testenv.NewClock(time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC))
	e := &env{t: t, db: db, r: r, clock: clk}
	e.store, e.book, e.wl = e.instance(booking.Config{})
	cat := &catalog.Service{DB: db, Now: clk.Now}
	showID, hallID := testenv.Showtime(t, db, clk.Now(), spec)
	hall, err := cat.Hall(context.Background(), hallID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Init(context.Background(), showID, hall, nil); err != nil {
		t.Fatal(err)
	}
	e.hall, e.show = hall, showID
	return e
}

// instance is one instance's seat store, booking (with bc's settings) and waiting list
// over e's stores: two of them race as two servers would.
func (e *env) instance(bc booking.Config) (*seats.Store, *booking.Service, *waitlist.Service) {
	bc.Now = e.clock.Now
	cat := &catalog.Service{DB: e.db, Now: e.clock.Now}
	store := &seats.Store{RDB: e.r.Client, Keys: e.r.Keys, Now: e.clock.Now}
	book := booking.New(booking.Deps{DB: e.db, Seats: store, Layouts: &seats.Layouts{Halls: cat},
		Hashes: &sales.Service{DB: e.db, Seats: store, RDB: e.r.Client, Keys: e.r.Keys, Catalog: cat, Now: e.clock.Now},
		RDB:    e.r.Client, Keys: e.r.Keys, Catalog: cat, Provider: payments.Test{}}, bc)
	wl := waitlist.New(waitlist.Deps{DB: e.db, Seats: store, Layouts: &seats.Layouts{Halls: cat}, RDB: e.r.Client, Keys: e.r.Keys,
		Catalog: cat, Booking: book, Sales: &reports.Service{DB: e.db, Now: e.clock.Now}},
		waitlist.Config{Now: e.clock.Now, OfferTTL: 10 * time.Minute, Sweep: 50 * time.Millisecond})
	return store, book, wl
}

// seat is the id of seat number n of row ("A", "B").
func (e *env) seat(label string) int {
	for _, s := range e.hall.Seats {
		if fmt.Sprintf("%s%d", s.Row, s.Number) == label {
			return s.ID
		}
	}
	e.t.Fatalf("no seat %s", label)
	return 0
}

// hold holds seats (by label) for user and returns the order.
func (e *env) hold(user string, labels ...string) *seatflow.Order {
	e.t.Helper()
	ids := make([]int, len(labels))
	for i, l := range labels {
		ids[i] = e.seat(l)
	}
	o, err := e.book.HoldSeats(context.Background(), user, booking.HoldSeatsInput{ShowtimeID: e.show, SeatIDs: ids,
		IdempotencyKey: testenv.RandomName("k")})
	if err != nil {
		e.t.Fatalf("hold %v for %s: %v", labels, user, err)
	}
	return o
}

// join puts user on the list for n seats.
func (e *env) join(user string, n int) *seatflow.WaitlistEntry {
	e.t.Helper()
	en, err := e.wl.Join(context.Background(), user, waitlist.JoinInput{ShowtimeID: e.show, Seats: n})
	if err != nil {
		e.t.Fatalf("join %s for %d: %v", user, n, err)
	}
	return en
}

// entry reads user's entry id.
func (e *env) entry(user string, id int) *seatflow.WaitlistEntry {
	e.t.Helper()
	en, err := e.wl.Entry(context.Background(), user, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return en
}

// states is the seat map's statuses by label, with R for a seat returned to the list.
func (e *env) states() map[string]string {
	e.t.Helper()
	st, _, err := e.store.States(context.Background(), e.show)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range e.hall.Seats {
		v := st[s.ID]
		code := string(v.Status)
		if v.Returned {
			code = "RETURNED"
		}
		out[fmt.Sprintf("%s%d", s.Row, s.Number)] = code
	}
	return out
}

// code is err's extensions.code ("" for nil).
func code(err error) string {
	if err == nil {
		return ""
	}
	if c := seatflow.ErrorCode(err); c != "" {
		return c
	}
	return "uncoded: " + err.Error()
}
