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
