package gqlclient_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"seatflow"
	"seatflow/internal/app"
	"seatflow/internal/tooling/gqlclient"
	"seatflow/internal/tooling/testenv"
)

// server is a SeatFlow instance on a test database and Redis prefix, served over
// loopback HTTP, and an admin's token.
type server struct {
	*app.App
	URL   string
	admin string
}

func newServer(t *testing.T) *server {
	t.Helper()
	db, r := testenv.MySQL(t), testenv.NewRedis(t)
	cfg, _, err := app.ParseConfig("test", []string{"-mysql-dsn", db.DSN, "-redis-url", r.URL,
		"-redis-prefix", r.Keys.Prefix, "-jwt-secret", "test-secret-0123456789", "-ticket-key-secret", "test-ticket-key-secret-0123456789abcdef", "-reconcile-every", "0",
		"-payment-provider", "test", "-cost-budget", "100000000", "-cost-restore", "100000000"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Open(context.Background(), cfg, slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError})))
	if err != nil {
		t.Fatal(err)
	}
	a.Start(context.Background())
	t.Cleanup(a.Close)
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	s := &server{App: a, URL: srv.URL}
	s.admin = s.token(t, "admin-1", "admin")
	return s
}

func (s *server) token(t *testing.T, sub, role string) string {
	t.Helper()
	tok, err := s.Auth.Issue(sub, role, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

const createMovie = `mutation($in: MovieInput!) { createMovie(input: $in) { id title } }`

func movieInput(title string, minutes int) map[string]any {
	return map[string]any{"in": map[string]any{"title": title, "durationMinutes": minutes,
		"synopsis": "A film made for a test.", "rating": "PG-13", "genres": []string{"Drama"}}}
}

// wantCode fails unless err is a GraphQL error of the answer with code.
func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	var e *gqlclient.Error
	if !errors.As(err, &e) || e.Code() != code {
		t.Fatalf("error = %v, want a GraphQL error %s", err, code)
	}
}

func TestDo(t *testing.T) {
	ctx := context.Background()
	s := newServer(t)
	c := gqlclient.New(s.URL, nil)

	t.Run("DataDecodedWithTokenAndVariables", func(t *testing.T) {
		var out struct{ CreateMovie struct{ ID, Title string } }
		if err := c.Do(ctx, s.admin, createMovie, movieInput("Le Samouraï & <friends>", 105), &out); err != nil {
			t.Fatal(err)
		}
		if got := out.CreateMovie; got.ID == "" || got.Title != "Le Samouraï & <friends>" {
			t.Errorf("createMovie = %+v, want an id and the title sent", got)
		}
	})
	t.Run("NoTokenIsUnauthenticated", func(t *testing.T) {
		wantCode(t, c.Do(ctx, "", createMovie, movieInput("No token", 90), nil), seatflow.EUNAUTHENTICATED)
	})
	t.Run("CustomerIsForbidden", func(t *testing.T) {
		wantCode(t, c.Do(ctx, s.token(t, "u1", "customer"), createMovie, movieInput("Customer", 90), nil), seatflow.EFORBIDDEN)
	})
	t.Run("BadInputIsCodedAndNamesTheQuery", func(t *testing.T) {
		err := c.Do(ctx, s.admin, createMovie, movieInput("Too short", -5), nil)
		wantCode(t, err, seatflow.EINVALID)
		if !strings.Contains(err.Error(), "(query mutation($in: MovieInput!) { createMovie") {
			t.Errorf("error %q does not name the query", err)
		}
	})
	t.Run("SendKeepsErrorsInTheResponse", func(t *testing.T) {
		r, err := c.Send(ctx, "", gqlclient.Body(`query($id: ID!) { movie(id: $id) { id } }`, map[string]any{"id": "not an id"}))
		if err != nil {
			t.Fatal(err)
		}
		if r.Code() != seatflow.EINVALID || r.Err() == nil {
			t.Errorf("code %q, err %v: want the answer's %s error", r.Code(), r.Err(), seatflow.EINVALID)
		}
	})
	t.Run("NotJSONNamesTheStatus", func(t *testing.T) {
		_, err := gqlclient.New(s.URL+"/nowhere", nil).Send(ctx, "", gqlclient.Body(`{ __typename }`, nil))
		if !errors.Is(err, gqlclient.ErrNotJSON) || !strings.Contains(err.Error(), "HTTP 404") {
			t.Errorf("error = %v, want ErrNotJSON with HTTP 404", err)
		}
	})
	t.Run("Get", func(t *testing.T) {
		if err := c.Get(ctx, "/healthz"); err != nil {
			t.Errorf("GET /healthz: %v", err)
		}
		if err := c.Get(ctx, "/nowhere"); err == nil || !strings.Contains(err.Error(), "404") {
			t.Errorf("GET /nowhere: %v, want a 404 error", err)
		}
	})
}

// TestPostReusesBuffer: the bench reads every answer into one buffer per client; a second
// answer of the same size lands in the same memory.
func TestPostReusesBuffer(t *testing.T) {
	ctx := context.Background()
	s := newServer(t)
	c := gqlclient.New(s.URL, nil)
	body := gqlclient.Body(`query($n: Int!) { movies(first: $n) { totalCount } }`, map[string]any{"n": 5})
	var buf bytes.Buffer
	status, err := c.Post(ctx, "", body, &buf)
	if err != nil || status != http.StatusOK {
		t.Fatalf("post: status %d, %v", status, err)
	}
	first, err := gqlclient.Decode(buf.Bytes())
	if err != nil || first.Err() != nil || len(first.Data) == 0 {
		t.Fatalf("answer %s, want data and no errors", buf.Bytes())
	}
	addr, capacity := &buf.Bytes()[0], buf.Cap()
	for range 3 {
		if _, err := c.Post(ctx, "", body, &buf); err != nil {
			t.Fatal(err)
		}
		// One answer (its cost extension says what budget is left, so only data repeats):
		// the buffer is reset before each read.
		r, err := gqlclient.Decode(buf.Bytes())
		if err != nil || !bytes.Equal(r.Data, first.Data) {
			t.Fatalf("answer %s, want one answer with data %s", buf.Bytes(), first.Data)
		}
		if &buf.Bytes()[0] != addr || buf.Cap() != capacity {
			t.Fatalf("the answer moved to new memory (cap %d → %d)", capacity, buf.Cap())
		}
	}
}

// TestBodyIsTheEncodingToolsSent: Body writes what the tools wrote before they shared this
// client (a map of query, variables and the operation name when there is one), byte for byte.
func TestBodyIsTheEncodingToolsSent(t *testing.T) {
	for _, r := range []gqlclient.Request{
		{Query: `{ __typename }`},
		{Query: `query($id: ID!) { showtime(id: $id) { id } }`, Variables: map[string]any{"id": "U2hvd3RpbWU6MQ"}},
		{OperationName: "LoadHold", Query: `mutation LoadHold($in: HoldSeatsInput!) { holdSeats(input: $in) { id } }`,
			Variables: map[string]any{"in": map[string]any{"seatIds": []string{"a", "b"}, "note": "<&>"}}},
	} {
		m := map[string]any{"query": r.Query, "variables": r.Variables}
		if r.OperationName != "" {
			m["operationName"] = r.OperationName
		}
		want, _ := json.Marshal(m)
		if got := r.Body(); !bytes.Equal(got, want) {
			t.Errorf("body %s, want %s", got, want)
		}
	}
	if got, want := gqlclient.Body(`{ a }`, nil), []byte(`{"query":"{ a }","variables":null}`); !bytes.Equal(got, want) {
		t.Errorf("Body = %s, want %s", got, want)
	}
}

// TestTransportFailures: an answer cut off is a *ReadError; no answer before the client's
// deadline is a timeout, not a ReadError (the fault suite tells the two apart).
func TestTransportFailures(t *testing.T) {
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	cut := make(chan bool, 2) // per connection: cut the answer off (true) or never answer
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				req, err := http.ReadRequest(bufio.NewReader(conn))
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, req.Body)
				if <-cut {
					_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"data\":")
					return
				}
				time.Sleep(2 * time.Second)
			}()
		}
	}()
	c := gqlclient.New("http://"+ln.Addr().String(), &http.Client{Timeout: 300 * time.Millisecond})
	body := gqlclient.Body(`{ __typename }`, nil)
	var buf bytes.Buffer

	cut <- true
	status, err := c.Post(ctx, "", body, &buf)
	var re *gqlclient.ReadError
	if !errors.As(err, &re) || status != http.StatusOK {
		t.Errorf("cut-off answer: status %d, error %v; want 200 and a *ReadError", status, err)
	}
	cut <- false
	_, err = c.Post(ctx, "", body, &buf)
	var ne net.Error
	if errors.As(err, &re) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("no answer: error %v, want a timeout that is no *ReadError", err)
	}
}
