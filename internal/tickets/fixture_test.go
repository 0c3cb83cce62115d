package tickets_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/seat"
	"seatflow/internal/tickets"
	"seatflow/internal/tooling/testenv"
)

// secret is the test's ticket key secret (tickets.MinSecretBytes long).
var secret = strings.Repeat("s", tickets.MinSecretBytes)

// env is one test's tickets service over its own database and Redis prefix, with a
// showtime 30 h after the clock's start in a hall of one row of 8 seats: the door opens
// 27 h after it (seatflow.TicketValidBefore) and the showtime ends 32 h after it.
type env struct {
	t     testing.TB
	db    *ent.Client
	redis *testenv.Redis
	clock *testenv.Clock
	keys  *tickets.Keyring
	svc   *tickets.Service
	show  *seatflow.Showtime
	seats []int
	n     int // orders made so far
}

func newEnv(t testing.TB) *env {
	t.Helper()
	db := testenv.MySQL(t).Client
	r := testenv.NewRedis(t)
	clk := testenv.NewClock(time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC))
	kr, err := tickets.NewKeyring(db, secret, clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	if err := kr.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, db: db, redis: r, clock: clk, keys: kr}
	e.svc = e.instance(kr)
	e.show, e.seats = e.showtime(30 * time.Hour)
	return e
}

// instance is another instance's service over the same stores, with keyring kr.
func (e *env) instance(kr *tickets.Keyring) *tickets.Service {
	return &tickets.Service{DB: e.db, Keys: kr, RDB: e.redis.Client, RedisKeys: e.redis.Keys, Now: e.clock.Now}
}

// showtime adds an on-sale showtime starting in startsIn and returns it with its seats.
func (e *env) showtime(startsIn time.Duration) (*seatflow.Showtime, []int) {
	e.t.Helper()
	ctx := context.Background()
	showID, hallID := testenv.Showtime(e.t, e.db, e.clock.Now(), testenv.ShowtimeSpec{Rows: 1, PerRow: 8, StartsIn: startsIn})
	row := e.db.Showtime.GetX(ctx, showID)
	seatIDs := e.db.Seat.Query().Where(seat.HallID(hallID)).Order(ent.Asc(seat.FieldID)).IDsX(ctx)
	return &seatflow.Showtime{ID: showID, HallID: hallID, StartsAt: row.StartsAt, EndsAt: row.EndsAt,
		Status: seatflow.ShowtimeOnSale}, seatIDs
}

// order writes an order of user for seats of st with the status, ADULT lines at 1000.
func (e *env) order(user string, st *seatflow.Showtime, status seatflow.OrderStatus, seatIDs ...int) *seatflow.Order {
	e.t.Helper()
	e.n++
	now := e.clock.Now()
	token := testenv.RandomName("tok")
	row := e.db.Order.Create().SetUserID(user).SetShowtimeID(st.ID).SetHoldToken(token).
		SetIdempotencyKey(token).SetStatus(status).SetAmountCents(1000 * len(seatIDs)).SetCurrency("EUR").
		SetExpiresAt(now.Add(10 * time.Minute)).SetCreatedAt(now).SaveX(context.Background())
	o := &seatflow.Order{ID: row.ID, UserID: user, ShowtimeID: st.ID, HoldToken: token, Status: status,
		AmountCents: row.AmountCents, Currency: "EUR", CreatedAt: now, SeatIDs: seatIDs}
	for _, id := range seatIDs {
		o.Lines = append(o.Lines, seatflow.OrderLine{ShowtimeID: st.ID, SeatID: id, TicketType: seatflow.TicketAdult, AmountCents: 1000})
	}
	return o
}

// paid writes a PAID order of user for seats of the env's showtime and issues its
// tickets as the transaction that pays it does; it returns them in seat order.
func (e *env) paid(user string, seatIDs ...int) (*seatflow.Order, []*seatflow.Ticket) {
	e.t.Helper()
	o := e.order(user, e.show, seatflow.OrderPaid, seatIDs...)
	e.inTx(func(tx *ent.Tx) error { return e.svc.IssueIn(context.Background(), tx, o.ID, o.ShowtimeID, o.Lines) })
	tks, err := e.svc.OfOrder(context.Background(), o, false)
	if err != nil {
		e.t.Fatal(err)
	}
	if len(tks) != len(seatIDs) {
		e.t.Fatalf("order %d has %d tickets, want %d", o.ID, len(tks), len(seatIDs))
	}
	return o, tks
}

// inTx runs fn in a transaction it commits.
func (e *env) inTx(fn func(tx *ent.Tx) error) {
	e.t.Helper()
	tx, err := e.db.Tx(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		e.t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		e.t.Fatal(err)
	}
}

// code is ticket tk's code (of the env's showtime).
func (e *env) code(tk *seatflow.Ticket) string {
	e.t.Helper()
	c, err := e.svc.Code(context.Background(), tk, e.show)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// openDoor moves the clock to one hour before the env's showtime starts.
func (e *env) openDoor() { e.clock.Advance(e.show.StartsAt.Add(-time.Hour).Sub(e.clock.Now())) }

// checkIn scans code at the env's showtime's door as staff (nonce "" sends none).
func (e *env) checkIn(svc *tickets.Service, staff, code, nonce string) *seatflow.CheckInResult {
	e.t.Helper()
	var n *string
	if nonce != "" {
		n = &nonce
	}
	r, err := svc.CheckIn(context.Background(), staff, e.show.ID, code, n)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// row reads a ticket's row.
func (e *env) row(id int) *ent.Ticket {
	e.t.Helper()
	return e.db.Ticket.GetX(context.Background(), id)
}

// count is the env's showtime's door.
func (e *env) count() seatflow.CheckInCount {
	e.t.Helper()
	c, err := e.svc.Count(context.Background(), e.show.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	return *c
}

func wantCode(t testing.TB, err error, code string) {
	t.Helper()
	if got := seatflow.ErrorCode(err); got != code {
		t.Fatalf("error code = %q (%v), want %q", got, err, code)
	}
}
