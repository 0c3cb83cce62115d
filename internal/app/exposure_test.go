package app

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// metricsOf serves the instance's /metrics on a listener of its own, as
// SEATFLOW_METRICS_ADDR does, and returns a function reading one sample's value (0 when
// absent) and one telling whether any label contains part.
func metricsOf(t *testing.T, a *testApp) (value func(sample string) float64, anyLabel func(part string) bool) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.ServeMetrics(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	read := func() []string {
		t.Helper()
		resp, err := http.Get("http://" + ln.Addr().String() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var lines []string
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		return lines
	}
	value = func(sample string) float64 {
		for _, l := range read() {
			if v, ok := strings.CutPrefix(l, sample+" "); ok {
				f, _ := strconv.ParseFloat(v, 64)
				return f
			}
		}
		return 0
	}
	anyLabel = func(part string) bool {
		for _, l := range read() {
			if strings.HasPrefix(l, "seatflow_graphql_") && strings.Contains(l, part) {
				return true
			}
		}
		return false
	}
	return value, anyLabel
}

// TestMetricsLabelsFromAnAllowlist: after 205 junk operation names, real operations
// (DemoShowtimes) were counted as "other" until restart: the first names to arrive took
// the labels. Labels now come from what is known at start: the operation names of the
// persisted documents and of the project's own clients, else the operation's root field;
// a name the client made up never becomes a label.
func TestMetricsLabelsFromAnAllowlist(t *testing.T) {
	a := newTestApp(t)
	value, anyLabel := metricsOf(t, a)
	run := fmt.Sprintf("%d", time.Now().UnixNano())
	demo := `seatflow_graphql_requests_total{operation="DemoShowtimes",outcome="ok"}`
	movies := `seatflow_graphql_requests_total{operation="movies",outcome="ok"}`
	demoBefore, moviesBefore := value(demo), value(movies)
	for i := range 205 {
		a.must("", fmt.Sprintf("query Junk%s_%d { __typename }", run, i), nil, nil)
	}
	// An operationName that the document does not define is refused, and no label either.
	if status, _, _ := a.postRaw(map[string]any{"query": "query Real { __typename }", "operationName": "Ghost" + run}, nil); status != 200 {
		t.Fatalf("status %d", status)
	}
	a.must("", `query DemoShowtimes($d: Date!) { showtimes(date: $d) { id } }`, map[string]any{"d": "2030-03-10"}, nil)
	a.must("", `{ movies { totalCount } }`, nil, nil)
	a.must("", `query MadeUp`+run+` { movies { totalCount } }`, nil, nil)
	if got := value(demo) - demoBefore; got != 1 {
		t.Errorf("DemoShowtimes counted %v times under its name after 205 junk names, want 1", got)
	}
	if got := value(movies) - moviesBefore; got != 2 {
		t.Errorf("operations without a known name counted %v times under their root field movies, want 2", got)
	}
	if anyLabel(run) {
		t.Error("a made-up operation name became a label")
	}
}

// TestMetricsOffTheAPIPort: /metrics was public on the API's port. It is served only on
// SEATFLOW_METRICS_ADDR (an address only the monitoring network reaches); the API's port
// answers 404.
func TestMetricsOffTheAPIPort(t *testing.T) {
	a := newTestApp(t)
	if status, _, body := a.request("GET", "/metrics", nil, nil); status != http.StatusNotFound {
		t.Fatalf("GET /metrics on the API's port: %d %.200s, want 404", status, body)
	}
	value, _ := metricsOf(t, a)
	a.must("", `{ movies { totalCount } }`, nil, nil)
	if value(`seatflow_graphql_requests_total{operation="movies",outcome="ok"}`) == 0 {
		t.Fatal("the metrics listener does not count the API's operations")
	}
}

// TestEmbeddedModeStaysOnOneMachine: embedded mode listened on every interface (:8080)
// while anyone can mint its admin tokens with the built-in demo secret, it allows every
// origin and hands out customer identities. It listens on 127.0.0.1 unless SEATFLOW_ADDR
// says otherwise, and its welcome says it is for one machine (louder when told to listen
// beyond it); real mode keeps :8080.
func TestEmbeddedModeStaysOnOneMachine(t *testing.T) {
	addrOf := func(t *testing.T) string {
		t.Helper()
		cfg, _, err := ParseConfig("test", nil)
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Addr
	}
	t.Run("EmbeddedDefaultIsLoopback", func(t *testing.T) {
		clearStores(t)
		t.Setenv("SEATFLOW_ADDR", "")
		if got := addrOf(t); got != "127.0.0.1:8080" {
			t.Fatalf("embedded mode listens on %q, want 127.0.0.1:8080", got)
		}
	})
	t.Run("EmbeddedAsConfigured", func(t *testing.T) {
		clearStores(t)
		t.Setenv("SEATFLOW_ADDR", ":9090")
		if got := addrOf(t); got != ":9090" {
			t.Fatalf("embedded mode with SEATFLOW_ADDR=:9090 listens on %q", got)
		}
	})
	t.Run("RealModeKeepsEveryInterface", func(t *testing.T) {
		clearStores(t)
		t.Setenv("SEATFLOW_ADDR", "")
		t.Setenv("SEATFLOW_MYSQL_DSN", "root@tcp(127.0.0.1:3306)/seatflow")
		t.Setenv("SEATFLOW_REDIS_URL", "redis://127.0.0.1:6379/0")
		t.Setenv("SEATFLOW_JWT_SECRET", "a-real-secret-of-some-length")
		t.Setenv("SEATFLOW_TICKET_KEY_SECRET", "a-real-ticket-key-secret-of-32-bytes")
		t.Setenv("SEATFLOW_PAYMENT_PROVIDER", "test")
		if got := addrOf(t); got != ":8080" {
			t.Fatalf("real mode listens on %q, want :8080", got)
		}
	})
	welcome := func(t *testing.T, addr *net.TCPAddr) string {
		t.Helper()
		clearStores(t)
		cfg, _, err := ParseConfig("test", nil)
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		(&App{Config: cfg, Auth: NewAuthenticator(cfg)}).PrintWelcome(&out, addr)
		return out.String()
	}
	t.Run("WelcomeSaysOneMachine", func(t *testing.T) {
		out := welcome(t, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080})
		if !strings.Contains(out, "http://localhost:8080/demo") || !strings.Contains(out, "for one machine") ||
			strings.Contains(out, "WARNING") {
			t.Fatalf("welcome on 127.0.0.1:8080:\n%s\nwant localhost URLs and that embedded mode is for one machine", out)
		}
	})
	t.Run("WelcomeWarnsBeyondLoopback", func(t *testing.T) {
		out := welcome(t, &net.TCPAddr{IP: net.IPv4zero, Port: 8080})
		if !strings.Contains(out, "WARNING") || !strings.Contains(out, "other machines") {
			t.Fatalf("welcome on 0.0.0.0:8080:\n%s\nwant a warning that other machines reach it", out)
		}
	})
}
