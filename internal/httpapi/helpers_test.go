package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"seatflow/graph"
	"seatflow/internal/auth"
	"seatflow/internal/catalog"
	"seatflow/internal/nodeid"
	"seatflow/internal/rdb"
	"seatflow/internal/seatrender"
	"seatflow/internal/seats"
	"seatflow/internal/throttle"
	"seatflow/internal/tooling/testenv"
	"seatflow/internal/wstransport"
)

// testOptions are the limits of the test API: small, so a table row reaches each one with
// a short document. A test changes the ones it measures.
func testOptions() Options {
	return Options{Settings: Settings{
		Introspection:    true,
		ComplexityLimit:  1000,
		MaxDepth:         4,
		MaxTokens:        200,
		MaxBodyBytes:     4096,
		WriteTimeout:     10 * time.Second,
		MaxFields:        30,
		MaxAliases:       5,
		MaxErrors:        20,
		MaxResponseBytes: 1 << 20,
		MaxURLBytes:      1024,
	}}
}

// testAPI is the whole API (Register's routes, its real gqlgen server over the real
// schema) on a database and a Redis prefix of its own, with one showtime on sale.
type testAPI struct {
	*API
	srv   *httptest.Server
	show  int // the showtime's database id
	movie int
}

// newAPI serves the API with testOptions changed by change (nil: as they are).
func newAPI(t *testing.T, change func(*Options)) *testAPI {
	t.Helper()
	db := testenv.MySQL(t).Client
	red := testenv.NewRedis(t)
	clk := testenv.NewClock(time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC))
	show, _ := testenv.Showtime(t, db, clk.Now(), testenv.ShowtimeSpec{Rows: 1, PerRow: 3})
	cat := &catalog.Service{DB: db, Now: clk.Now}
	store := &seats.Store{RDB: red.Client, Keys: red.Keys, Now: clk.Now}
	opts := testOptions()
	if change != nil {
		change(&opts)
	}
	a := &testAPI{show: show, API: &API{
		Options:    opts,
		Resolver:   &graph.Resolver{Catalog: cat, Maps: &seats.Maps{Store: store, Layouts: &seats.Layouts{Halls: cat}, Showtimes: cat}},
		Auth:       &auth.Authenticator{Secret: []byte("httpapi-test-secret"), Now: clk.Now},
		Catalog:    cat,
		Redis:      red.Client,
		APQPrefix:  red.Keys.APQ(),
		Budget:     &throttle.Budget{Limiter: rdb.NewLimiter(red.Client), KeyPrefix: red.Keys.CostBudget()},
		SeatMaps:   seatrender.NewMemo(),
		Websockets: &wstransport.Registry{},
		Log:        slog.New(slog.NewTextHandler(t.Output(), nil)),
	}}
	a.movie = db.Showtime.GetX(t.Context(), show).MovieID
	mux := http.NewServeMux()
	a.Register(mux)
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	t.Cleanup(a.Websockets.Close)
	return a
}

// showtimeID and movieID are the fixture's ids as the API writes them.
func (a *testAPI) showtimeID() string { return nodeid.Encode(nodeid.Showtime, a.show) }
func (a *testAPI) movieID() string    { return nodeid.Encode(nodeid.Movie, a.movie) }

// answer is a GraphQL answer as a client reads it, with the HTTP status and headers.
type answer struct {
	status int
	header http.Header
	raw    []byte
	Data   map[string]any `json:"data"`
	Errors []struct {
		Message    string         `json:"message"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
	Extensions map[string]any `json:"extensions"`
}

// codes lists the answer's extensions.code values, in order.
func (a *answer) codes() []string {
	var out []string
	for _, e := range a.Errors {
		c, _ := e.Extensions["code"].(string)
		out = append(out, c)
	}
	return out
}

// hasCode reports whether one of the answer's errors has code.
func (a *answer) hasCode(code string) bool {
	for _, c := range a.codes() {
		if c == code {
			return true
		}
	}
	return false
}

// query POSTs a GraphQL request (application/json) with the given extra headers.
func (a *testAPI) query(t *testing.T, query string, vars map[string]any, header http.Header) *answer {
	t.Helper()
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		t.Fatal(err)
	}
	return a.post(t, bytes.NewReader(body), header)
}

// post POSTs body as application/json with the given extra headers.
func (a *testAPI) post(t *testing.T, body io.Reader, header http.Header) *answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, a.srv.URL+"/query", body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, vs := range header {
		req.Header[k] = vs
	}
	return a.do(t, req)
}

// do sends req and reads its answer (a body that is not JSON leaves Data and Errors empty).
func (a *testAPI) do(t *testing.T, req *http.Request) *answer {
	t.Helper()
	resp, err := a.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	ans := &answer{status: resp.StatusCode, header: resp.Header, raw: raw}
	_ = json.Unmarshal(raw, ans)
	return ans
}

// wantAnswer checks an answer's status and that one of its errors has code ("" = data
// and no error at all).
func wantAnswer(t *testing.T, got *answer, status int, code string) {
	t.Helper()
	if got.status != status {
		t.Errorf("status = %d, want %d (%s)", got.status, status, got.raw)
	}
	switch {
	case code == "" && len(got.Errors) > 0:
		t.Errorf("errors %v, want none (%s)", got.codes(), got.raw)
	case code == "" && got.Data == nil:
		t.Errorf("no data, want an answer (%s)", got.raw)
	case code != "" && !got.hasCode(code):
		t.Errorf("codes %v, want %s (%s)", got.codes(), code, got.raw)
	}
}
