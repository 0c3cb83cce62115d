package queue_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/ent"
	"seatflow/internal/catalog"
	"seatflow/internal/queue"
	"seatflow/internal/sales"
	"seatflow/internal/seats"
	"seatflow/internal/tooling/testenv"
)

// env is one test's world: a MySQL database and a Redis prefix of its own, a SCHEDULED
// showtime in a rows×perRow hall starting in 2 hours, and instances: queue services over
// the same stores, each with its own lease token (several instances of SeatFlow).
type env struct {
	db    *ent.Client
	rdb   redis.UniversalClient
	r     *testenv.Redis
	clock *testenv.Clock
	cat   *catalog.Service
	sales *sales.Service
	store *seats.Store
	hall  *seatflow.Hall
	show  int
	// q is the first instance.
	q *queue.Service
	// opensAt is when the queue set by setQueue opens.
	opensAt time.Time
}

var secret = []byte("the instances' shared secret, 32+")

func newEnv(t testing.TB, rows, perRow int) *env {
	t.Helper()
	db := testenv.MySQL(t).Client
	r := testenv.NewRedis(t)
	clk := testenv.NewClock(time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC))
	e := &env{db: db, rdb: r.Client, r: r, clock: clk}
	e.cat = &catalog.Service{DB: db, Now: clk.Now}
	e.store = &seats.Store{RDB: r.Client, Keys: r.Keys, Now: clk.Now}
	e.sales = &sales.Service{DB: db, Seats: e.store, RDB: r.Client, Keys: r.Keys, Catalog: e.cat, Now: clk.Now}
	var hallID int
	e.show, hallID = testenv.Showtime(t, db, clk.Now(), testenv.ShowtimeSpec{Rows: rows, PerRow: perRow,
		Status: seatflow.ShowtimeScheduled, StartsIn: 2 * time.Hour, AllowGaps: true, Limit: 10})
	hall, err := e.cat.Hall(context.Background(), hallID)
	if err != nil {
		t.Fatal(err)
	}
	e.hall = hall
	e.q = e.instance()
	return e
}

// instance is one more SeatFlow instance's queue service; change alters its settings.
func (e *env) instance(change ...func(*queue.Config)) *queue.Service {
	c := queue.Config{Now: e.clock.Now, Lease: 2 * time.Second, Refresh: 2 * time.Second, SeenEvery: 500 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, f := range change {
		f(&c)
	}
	return queue.New(e.db, e.rdb, e.r.Keys, e.cat, e.sales, queue.NewPasses(secret, e.clock.Now), c)
}

// setQueue puts a queue in front of the showtime, opening in 3 minutes (entrants who join
// now are still seen when it opens) unless in says when.
func (e *env) setQueue(t testing.TB, in queue.OnSaleQueueInput) *seatflow.OnSaleQueue {
	t.Helper()
	if in.OpensAt.IsZero() {
		in.OpensAt = e.clock.Now().Add(3 * time.Minute)
	}
	e.opensAt = in.OpensAt
	q, err := e.q.Set(context.Background(), "admin", e.show, in)
	if err != nil {
		t.Fatalf("set the queue: %v", err)
	}
	return q
}

func (e *env) join(t testing.TB, q *queue.Service, user string) *seatflow.QueueTicket {
	t.Helper()
	tk, err := q.Join(context.Background(), e.show, user)
	if err != nil {
		t.Fatalf("join as %s: %v", user, err)
	}
	return tk
}

func (e *env) ticket(t testing.TB, user string) *seatflow.QueueTicket {
	t.Helper()
	tk, err := e.q.Ticket(context.Background(), e.show, user)
	if err != nil {
		t.Fatalf("ticket of %s: %v", user, err)
	}
	return tk
}

// tick runs one admission pass of q and returns the showtime's tick.
func (e *env) tick(t testing.TB, q *queue.Service) queue.Tick {
	t.Helper()
	ticks, err := q.AdmitOnce(context.Background())
	if err != nil {
		t.Fatalf("admission tick: %v", err)
	}
	for _, tk := range ticks {
		if tk.ShowtimeID == e.show {
			return tk
		}
	}
	return queue.Tick{}
}

// open moves the clock to opensAt and ticks: the queue is OPEN.
func (e *env) open(t testing.TB, q *queue.Service) queue.Tick {
	t.Helper()
	e.clock.Advance(e.opensAt.Sub(e.clock.Now()))
	tk := e.tick(t, q)
	if tk.Phase != seatflow.QueueOpen {
		t.Fatalf("tick at opensAt: %+v, want the queue OPEN", tk)
	}
	return tk
}

func (e *env) status(t testing.TB) *seatflow.OnSaleQueue {
	t.Helper()
	st, err := e.cat.FreshShowtime(context.Background(), e.show)
	if err != nil {
		t.Fatal(err)
	}
	q, err := e.q.Of(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// users are n user ids with prefix.
func users(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	return out
}

// seatIDs are the hall's seat ids, in id order.
func (e *env) seatIDs() []int {
	ids := make([]int, 0, len(e.hall.Seats))
	for _, s := range e.hall.Seats {
		ids = append(ids, s.ID)
	}
	sort.Ints(ids)
	return ids
}

func wantCode(t testing.TB, err error, code string) {
	t.Helper()
	if got := seatflow.ErrorCode(err); got != code {
		t.Fatalf("error code = %q (%v), want %q", got, err, code)
	}
}

func pos(t *seatflow.QueueTicket) int {
	if t.Position == nil {
		return 0
	}
	return *t.Position
}
