package faults

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"

	"seatflow/internal/app"
	"seatflow/internal/nodeid"
	"seatflow/internal/tooling/testenv"
)

// Options choose the stores of an Env; zero values take the test servers.
type Options struct {
	// MySQLServerDSN is the MySQL server without a database (default: testenv's).
	MySQLServerDSN string
	// RedisCluster (host:port,...) runs the instances on a Redis Cluster, without Redis
	// proxies (a cluster redirects clients to the nodes' own addresses).
	RedisCluster string
	// HoldTTL of the instances (default 15m).
	HoldTTL time.Duration
	// Rows of the showtime's hall, of 16 seats each (default 10): fewer sell out within
	// a short run (the waitlist scenario).
	Rows int
}

// Env is a scenario's world: a database and a Redis prefix of its own, the instances
// behind their proxies, one showtime on sale, customers and a clock.
type Env struct {
	t         *testing.T
	Name      string
	Plan      Plan
	Opts      Options
	Instances []*Instance
	// Checker is an instance of its own on the stores directly (not started, never
	// faulted): the checker reads and reconciles through it.
	Checker *app.App
	Show    Showtime
	Tokens  []string // customers
	Admin   string
	// shift moves every instance's clock (nanoseconds); scenario 8 jumps it forward.
	shift  atomic.Int64
	dsn    string // the database on the upstream server
	redis  string // upstream redis URL ("" on a cluster)
	prefix string
	tox    *toxiproxy.Client
	logDir string
	rec    *Recorder // the run's recorder (RunOn sets it)
	work   *Workload // the run's workload (RunOn sets it)
	// watchers of the run (RunOn sets them).
	watchers []*Watcher
	// versions is the real seat-map version over time, polled from Redis during the run.
	versionsMu sync.Mutex
	versions   []versionAt
	// clocks is the fastest clock's lead over real time, from each change on (Shift and
	// SetSkew): when an order's hold may first have run out.
	clocksMu sync.Mutex
	clocks   []leadAt
}

// leadAt is the fastest clock's lead from at on.
type leadAt struct {
	at   time.Time
	lead time.Duration
}

// Instance is one in-process SeatFlow instance and its proxies.
type Instance struct {
	Index int
	App   *app.App
	URL   string // http://127.0.0.1:port
	MySQL *Proxy
	Redis *Proxy // nil on a cluster
	// skew is this instance's clock offset (nanoseconds).
	skew atomic.Int64
	env  *Env
	srv  *httptest.Server
}

// Now is the instance's clock: real time moved by the env's shift and the instance's skew.
func (i *Instance) Now() time.Time {
	return time.Now().Add(time.Duration(i.env.shift.Load() + i.skew.Load()))
}

// SetSkew sets the instance's clock offset.
func (i *Instance) SetSkew(d time.Duration) { i.env.clockChange(func() { i.skew.Store(int64(d)) }) }

// Shift moves every instance's clock forward by d.
func (e *Env) Shift(d time.Duration) { e.clockChange(func() { e.shift.Add(int64(d)) }) }

// clockChange changes a clock and notes the fastest clock's lead from then on. The moment
// is taken before the change, and the lead of a stretch is the larger of its own and the
// one before (earliestDue): a clock read while it changes is covered either way.
func (e *Env) clockChange(change func()) {
	at := time.Now()
	change()
	shift := time.Duration(e.shift.Load())
	lead := max(shift, 0) // the checker's clock
	for _, in := range e.Instances {
		lead = max(lead, shift+time.Duration(in.skew.Load()))
	}
	e.clocksMu.Lock()
	e.clocks = append(e.clocks, leadAt{at, lead})
	e.clocksMu.Unlock()
}

// earliestDue is the first real moment some clock may have reached expiresAt.
func (e *Env) earliestDue(expiresAt time.Time) time.Time {
	e.clocksMu.Lock()
	defer e.clocksMu.Unlock()
	var start time.Time
	var lead, last time.Duration // this stretch's lead; the lead noted at its start
	for i := 0; ; i++ {
		due := expiresAt.Add(-lead)
		if due.Before(start) {
			due = start
		}
		if i == len(e.clocks) || due.Before(e.clocks[i].at) {
			return due
		}
		c := e.clocks[i]
		start, lead, last = c.at, max(c.lead, last), c.lead
	}
}

// Showtime is the fixture the workload buys: a hall of Rows × PerRow seats, on sale.
type Showtime struct {
	ID, HallID int
	GQLID      string
	SeatIDs    []int
	Limit      int
}

// NewEnv builds the world of one scenario and starts its instances.
func NewEnv(t *testing.T, plan Plan, opts Options) *Env {
	t.Helper()
	selected(t)
	if opts.MySQLServerDSN == "" {
		opts.MySQLServerDSN = testenv.MySQLServerDSN()
	}
	if opts.HoldTTL == 0 {
		opts.HoldTTL = 15 * time.Minute
	}
	if opts.Rows == 0 {
		opts.Rows = 10
	}
	e := &Env{t: t, Plan: plan, Opts: opts, Name: testenv.RandomName("sffault_"), tox: toxiproxy.NewClient(toxiproxyAddr())}
	e.prefix = e.Name
	e.logDir = filepath.Join(os.TempDir(), "seatflow-faults")
	_ = os.MkdirAll(e.logDir, 0o755)
	if _, err := e.tox.Proxies(); err != nil {
		t.Fatalf("toxiproxy API %s does not answer (bash scripts/toxiproxy.sh starts it): %v", toxiproxyAddr(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := sql.Open("mysql", opts.MySQLServerDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+e.Name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		if db, err := sql.Open("mysql", opts.MySQLServerDSN); err == nil {
			_, _ = db.Exec("DROP DATABASE IF EXISTS " + e.Name)
			db.Close()
		}
	})
	e.dsn = testenv.DatabaseDSNOn(opts.MySQLServerDSN, e.Name)
	if opts.RedisCluster == "" {
		e.redis = testenv.RedisURL()
	}
	e.Checker = e.openApp(t, e.dsn, e.redis, func() time.Time { return time.Now().Add(time.Duration(e.shift.Load())) }, "checker")
	t.Cleanup(e.Checker.Close)
	t.Cleanup(func() { testenv.DeletePrefix(e.Checker.Redis, e.prefix) })
	e.fixture(t)
	for i := range plan.Instances {
		e.Instances = append(e.Instances, e.startInstance(t, i))
	}
	admTok, err := e.Checker.Auth.Issue("fault-admin", "admin", 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	e.Admin = admTok
	for i := range 24 {
		tok, err := e.Checker.Auth.Issue(fmt.Sprintf("fault-customer-%d", i), "customer", 2*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		e.Tokens = append(e.Tokens, tok)
	}
	return e
}

// openApp opens an instance on the given stores (not started).
func (e *Env) openApp(t testing.TB, dsn, redisURL string, now func() time.Time, logName string) *app.App {
	t.Helper()
	args := []string{"-mysql-dsn", dsn, "-redis-prefix", e.prefix, "-jwt-secret", "faults-secret-0123456789",
		"-ticket-key-secret", "faults-ticket-key-secret-0123456789",
		"-payment-provider", "test", "-hold-ttl", e.Opts.HoldTTL.String(), "-holds-per-minute", "0",
		"-order-changes-per-minute", "0", "-cost-budget", "0", "-reconcile-every", "0", "-loader-wait", "2ms",
		"-log-level", "debug", "-request-timeout", e.Plan.Deadline.String()}
	if e.Opts.RedisCluster != "" {
		args = append(args, "-redis-cluster", e.Opts.RedisCluster)
	} else {
		args = append(args, "-redis-url", redisURL)
	}
	cfg, _, err := app.ParseConfig("faults", args)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(e.logDir, e.Name+"-"+logName+".log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, err := app.OpenWithClock(ctx, cfg, slog.New(slog.NewTextHandler(f, nil)), now)
	if err != nil {
		t.Fatalf("open instance %s: %v", logName, err)
	}
	return a
}

// startInstance starts instance i behind proxies of its own and serves it.
func (e *Env) startInstance(t *testing.T, i int) *Instance {
	t.Helper()
	in := &Instance{Index: i, env: e}
	upstream, err := hostPortOfDSN(e.dsn)
	if err != nil {
		t.Fatal(err)
	}
	in.MySQL = newProxy(t, e.tox, fmt.Sprintf("%s-mysql-%d", e.Name, i), upstream)
	dsn := withHostPort(e.dsn, in.MySQL.Listen)
	redisURL := ""
	if e.redis != "" {
		u, err := url.Parse(e.redis)
		if err != nil {
			t.Fatal(err)
		}
		in.Redis = newProxy(t, e.tox, fmt.Sprintf("%s-redis-%d", e.Name, i), u.Host)
		u.Host = in.Redis.Listen
		redisURL = u.String()
	}
	in.App = e.openApp(t, dsn, redisURL, in.Now, fmt.Sprintf("instance-%d", i))
	in.App.Start(context.Background())
	in.srv = httptest.NewServer(in.App.Handler())
	in.URL = in.srv.URL
	t.Cleanup(func() {
		in.srv.CloseClientConnections()
		in.srv.Close()
		in.App.Close()
	})
	return in
}

// fixture writes a showtime on sale (a Rows × 16 hall, gaps allowed so random picks are
// valid, purchase limit 6) and builds its seat hash.
func (e *Env) fixture(t *testing.T) {
	t.Helper()
	now := time.Now()
	showID, hallID := testenv.Showtime(t, e.Checker.DB, now, testenv.ShowtimeSpec{Rows: e.Opts.Rows, PerRow: 16,
		AllowGaps: true, StartsIn: 48 * time.Hour, Limit: 6})
	ctx := context.Background()
	if _, err := e.Checker.Sales.InitSeats(ctx, showID, hallID); err != nil {
		t.Fatal(err)
	}
	ids, err := e.Checker.DB.Seat.Query().IDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.Show = Showtime{ID: showID, HallID: hallID, GQLID: nodeid.Encode(nodeid.Showtime, showID), SeatIDs: ids, Limit: 6}
}

// Heal removes every fault of every proxy.
func (e *Env) Heal() error {
	for _, in := range e.Instances {
		for _, p := range []*Proxy{in.MySQL, in.Redis} {
			if p == nil {
				continue
			}
			if err := p.Heal(); err != nil {
				return err
			}
		}
	}
	return nil
}

type versionAt struct {
	at time.Time
	v  int
}

// pollVersions records the real seat-map version every 20 ms until ctx ends.
func (e *Env) pollVersions(ctx context.Context) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		v, err := e.Checker.Seats.Version(rctx, e.Show.ID)
		cancel()
		if err == nil {
			e.versionsMu.Lock()
			e.versions = append(e.versions, versionAt{time.Now(), v})
			e.versionsMu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// VersionAt is the real seat-map version last polled at or before t (false: none yet).
func (e *Env) VersionAt(t time.Time) (int, bool) {
	e.versionsMu.Lock()
	defer e.versionsMu.Unlock()
	v, ok := 0, false
	for _, x := range e.versions {
		if x.at.After(t) {
			break
		}
		v, ok = x.v, true
	}
	return v, ok
}
