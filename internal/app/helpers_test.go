package app

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"seatflow/ent/cinema"
	"seatflow/internal/rdb"
	"seatflow/internal/tooling/testenv"
)

// testApp is a SeatFlow instance on a test database and Redis prefix, served by a real
// HTTP server.
type testApp struct {
	*App
	t      testing.TB
	db     *testenv.DB
	srv    *httptest.Server
	admin  string
	clock  *testenv.Clock
	logBuf *testenv.SyncBuffer
}

// testNow is the test clock's start: a fixed day, so dates in assertions are stable.
var testNow = time.Date(2030, 3, 10, 9, 0, 0, 0, time.UTC)

// newTestApp starts an instance; flags are extra config flags (e.g. "-cache=false").
func newTestApp(t testing.TB, flags ...string) *testApp {
	t.Helper()
	return startTestApp(t, testenv.MySQL(t), testenv.NewRedis(t), flags...)
}

// sibling starts a second instance on the same database and Redis prefix, as a second
// server behind a load balancer would be.
func (a *testApp) sibling() *testApp {
	a.t.Helper()
	return startTestApp(a.t, a.db, &testenv.Redis{Client: testenv.NewRedisClient(a.t), Keys: a.Keys, URL: testenv.RedisURL()})
}

func startTestApp(t testing.TB, db *testenv.DB, r *testenv.Redis, flags ...string) *testApp {
	t.Helper()
	redisFlag := []string{"-redis-url", r.URL}
	if nodes := os.Getenv("SEATFLOW_TEST_REDIS_CLUSTER"); nodes != "" {
		redisFlag = []string{"-redis-cluster", nodes}
	}
	cfg, _, err := ParseConfig("test", append(append(redisFlag, "-mysql-dsn", db.DSN,
		"-redis-prefix", r.Keys.Prefix, "-jwt-secret", "test-secret-0123456789", "-loader-wait", "5ms",
		"-ticket-key-secret", "test-ticket-key-secret-0123456789abcdef",
		// Tests send many requests from one address; those about budgets set their own.
		"-cost-budget", "100000000", "-cost-restore", "100000000", "-payment-provider", "test"), flags...))
	if err != nil {
		t.Fatal(err)
	}
	// testenv migrated the database as an instance in UTC does; an instance configured in
	// another zone would have made the default cinema in its zone (the migration's rule).
	if cfg.Timezone != "UTC" {
		if err := db.Client.Cinema.Update().Where(cinema.TimeZone("UTC"), cinema.Not(cinema.HasHalls())).
			SetTimeZone(cfg.Timezone).Exec(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	logBuf := &testenv.SyncBuffer{}
	clk := testenv.NewClock(testNow)
	a := &App{Config: cfg, Log: slog.New(slog.NewTextHandler(logBuf, nil)), DB: db.Client, SQL: db.SQL,
		Redis: r.Client, Keys: r.Keys, Now: clk.Now}
	// Tests run the reconciler themselves when they mean to.
	a.Config.ReconcileEvery = 0
	if cfg.CacheRedisURL != "" {
		if a.CacheRedis, err = rdb.Open(cfg.CacheRedisURL, ""); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.CacheRedis.Close() })
	}
	if err := a.wire(); err != nil {
		t.Fatal(err)
	}
	a.Start(context.Background())
	t.Cleanup(func() {
		for i := len(a.closers) - 1; i >= 0; i-- {
			a.closers[i]()
		}
	})
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	ta := &testApp{App: a, t: t, db: db, srv: srv, clock: clk, logBuf: logBuf}
	ta.admin = ta.token("admin-1", "admin")
	return ta
}

func (a *testApp) token(sub, role string) string {
	a.t.Helper()
	tok, err := a.Auth.Issue(sub, role, time.Hour)
	if err != nil {
		a.t.Fatal(err)
	}
	return tok
}

// gqlResponse is a GraphQL response as a client sees it.
type gqlResponse struct {
	Data       json.RawMessage `json:"data"`
	Errors     []gqlError      `json:"errors"`
	Extensions map[string]any  `json:"extensions"`
	Status     int             `json:"-"`
}

type gqlError struct {
	Message    string         `json:"message"`
	Path       []any          `json:"path"`
	Extensions map[string]any `json:"extensions"`
}

// Code is the extensions.code of the first error, "" when there is none.
func (r *gqlResponse) Code() string {
	if len(r.Errors) == 0 {
		return ""
	}
	c, _ := r.Errors[0].Extensions["code"].(string)
	return c
}

// send posts a GraphQL request through the real HTTP server and reads the whole response.
func (a *testApp) send(token, query string, vars map[string]any) (*http.Response, []byte, error) {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, a.srv.URL+"/query", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp, raw, err
}

// do posts a GraphQL request through the real HTTP server.
func (a *testApp) do(token, query string, vars map[string]any) *gqlResponse {
	a.t.Helper()
	resp, raw, err := a.send(token, query, vars)
	if err != nil {
		a.t.Fatal(err)
	}
	var out gqlResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		a.t.Fatalf("response is not JSON (status %d): %s", resp.StatusCode, raw)
	}
	out.Status = resp.StatusCode
	return &out
}

// must runs a request that must succeed and decodes its data into dst.
func (a *testApp) must(token, query string, vars map[string]any, dst any) {
	a.t.Helper()
	r := a.do(token, query, vars)
	if len(r.Errors) > 0 {
		a.t.Fatalf("unexpected errors: %+v\nquery: %s", r.Errors, strings.TrimSpace(query))
	}
	if dst != nil {
		if err := json.Unmarshal(r.Data, dst); err != nil {
			a.t.Fatal(err)
		}
	}
}

// wantCode runs a request that must fail with code.
func (a *testApp) wantCode(token, query string, vars map[string]any, code string) *gqlResponse {
	a.t.Helper()
	r := a.do(token, query, vars)
	if got := r.Code(); got != code {
		a.t.Fatalf("code = %q, want %q (errors: %+v)", got, code, r.Errors)
	}
	return r
}

// Fixtures through the API.

const createMovieQ = `mutation($in: MovieInput!) { createMovie(input: $in) { id title status } }`

func (a *testApp) createMovie(title string, minutes int) string {
	a.t.Helper()
	var out struct{ CreateMovie struct{ ID string } }
	a.must(a.admin, createMovieQ, map[string]any{"in": map[string]any{"title": title, "durationMinutes": minutes}}, &out)
	return out.CreateMovie.ID
}

const createHallQ = `mutation($in: HallInput!) { createHall(input: $in) { id name seats { id row number x y kind sellable } } }`

// createHall makes a hall with rows A.. of n seats each, row B premium.
func (a *testApp) createHall(name string, rows, n int) string {
	a.t.Helper()
	var in []map[string]any
	for i := 0; i < rows; i++ {
		row := map[string]any{"label": string(rune('A' + i)), "seats": n}
		if i == 1 {
			row["kind"] = "PREMIUM"
		}
		in = append(in, row)
	}
	var out struct{ CreateHall struct{ ID string } }
	a.must(a.admin, createHallQ, map[string]any{"in": map[string]any{"name": name, "rows": in}}, &out)
	return out.CreateHall.ID
}

var allPrices = []map[string]any{{"kind": "STANDARD", "amountCents": 1000}, {"kind": "PREMIUM", "amountCents": 1500}, {"kind": "ACCESSIBLE", "amountCents": 800},
	{"kind": "COMPANION", "amountCents": 800}}

const createShowtimeQ = `mutation($in: ShowtimeInput!) { createShowtime(input: $in) { id status startsAt endsAt } }`

func (a *testApp) createShowtime(movieID, hallID string, startsAt time.Time) string {
	a.t.Helper()
	var out struct{ CreateShowtime struct{ ID string } }
	a.must(a.admin, createShowtimeQ, map[string]any{"in": map[string]any{"movieId": movieID, "hallId": hallID,
		"startsAt": startsAt.Format(time.RFC3339), "prices": allPrices}}, &out)
	return out.CreateShowtime.ID
}
