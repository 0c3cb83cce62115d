package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"seatflow/internal/database"
	"seatflow/internal/rdb"
	"seatflow/internal/telemetry"
	"seatflow/internal/tooling/testenv"
)

// newTracedApp starts an instance with traces recorded in memory: its ent client opened
// through otelsql, its Redis client instrumented, as Open does when an endpoint is set.
func newTracedApp(t testing.TB) (*testApp, *tracetest.SpanRecorder) {
	return newTracedAppSampled(t, sdktrace.ParentBased(sdktrace.AlwaysSample()))
}

// newTracedAppSampled is newTracedApp with sampler deciding which traces are kept.
func newTracedAppSampled(t testing.TB, sampler sdktrace.Sampler) (*testApp, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sampler))
	restore := telemetry.Install(tp)
	t.Cleanup(func() { restore(); tp.Shutdown(context.Background()) })
	db, r := testenv.MySQL(t), testenv.NewRedis(t)
	client, sqlDB, err := database.OpenMySQL(db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	// The same Redis as the test's other instances: the cluster when the suite runs on one.
	rc, err := rdb.Open(r.URL, os.Getenv("SEATFLOW_TEST_REDIS_CLUSTER"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	if err := rdb.Instrument(rc); err != nil {
		t.Fatal(err)
	}
	traced, tr := *db, *r
	traced.Client, traced.SQL, tr.Client = client, sqlDB, rc
	return startTestApp(t, &traced, &tr), rec
}

// postWithTraceparent posts a GraphQL request carrying traceparent and decodes its answer.
func (a *testApp) postWithTraceparent(traceparent, token, query string, vars map[string]any) (*http.Response, *gqlResponse) {
	a.t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, a.srv.URL+"/query", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	if traceparent != "" {
		req.Header.Set("traceparent", traceparent)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out gqlResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		a.t.Fatalf("answer %s: %v", raw, err)
	}
	return resp, &out
}

// traceOf waits for the spans of trace id until one named last has ended (the server
// span ends after the answer is written).
func traceOf(t *testing.T, rec *tracetest.SpanRecorder, id trace.TraceID, last string) []sdktrace.ReadOnlySpan {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var spans []sdktrace.ReadOnlySpan
		done := false
		for _, s := range rec.Ended() {
			if s.SpanContext().TraceID() == id {
				spans = append(spans, s)
				done = done || s.Name() == last
			}
		}
		if done || time.Now().After(deadline) {
			return spans
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// descendsFrom reports whether s has ancestor among spans (by parent links).
func descendsFrom(s sdktrace.ReadOnlySpan, ancestor trace.SpanID, spans []sdktrace.ReadOnlySpan) bool {
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, x := range spans {
		byID[x.SpanContext().SpanID()] = x
	}
	for p := s.Parent().SpanID(); p.IsValid(); {
		if p == ancestor {
			return true
		}
		x, ok := byID[p]
		if !ok {
			return false
		}
		p = x.Parent().SpanID()
	}
	return false
}

func named(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func TestTraceOfAHold(t *testing.T) {
	a, rec := newTracedApp(t)
	alice := a.token("alice", "customer")
	show, seats := a.onSaleShowtime()
	const holdSeatsQ = `mutation HoldSeats($in: HoldSeatsInput!) { holdSeats(input: $in) { id status } }`

	t.Run("OneTreeFromTheCallersTraceparent", func(t *testing.T) {
		const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
		key := "idem-secret-key-7f3a"
		resp, out := a.postWithTraceparent("00-"+traceID+"-"+parentID+"-01", alice, holdSeatsQ, holdVars(show, seats[:2], key))
		if len(out.Errors) > 0 {
			t.Fatalf("hold: %+v", out.Errors)
		}
		if got := resp.Header.Get("traceresponse"); !strings.HasPrefix(got, "00-"+traceID+"-") {
			t.Errorf("traceresponse = %q, want the caller's trace %s", got, traceID)
		}
		id, _ := trace.TraceIDFromHex(traceID)
		spans := traceOf(t, rec, id, "POST /query")
		httpSpans := named(spans, "POST /query")
		if len(httpSpans) != 1 {
			t.Fatalf("HTTP spans = %d, want 1 (spans: %v)", len(httpSpans), names(spans))
		}
		server := httpSpans[0]
		if got := server.Parent().SpanID().String(); got != parentID || !server.Parent().IsRemote() {
			t.Errorf("HTTP span's parent = %s (remote %v), want the caller's %s", got, server.Parent().IsRemote(), parentID)
		}
		ops := named(spans, "mutation HoldSeats")
		if len(ops) != 1 || ops[0].Parent().SpanID() != server.SpanContext().SpanID() {
			t.Fatalf("operation spans = %v, want one child of the HTTP span (spans: %v)", len(ops), names(spans))
		}
		op := ops[0]
		attrs := map[string]string{}
		for _, kv := range op.Attributes() {
			attrs[string(kv.Key)] = kv.Value.Emit()
		}
		if attrs["graphql.operation.name"] != "HoldSeats" || attrs["graphql.operation.type"] != "mutation" ||
			len(attrs["graphql.document.hash"]) != 64 || attrs["graphql.operation.cost"] == "" {
			t.Errorf("operation attributes = %v", attrs)
		}
		var script, tx sdktrace.ReadOnlySpan
		for _, s := range spans {
			if (s.Name() == "evalsha" || s.Name() == "eval") && descendsFrom(s, op.SpanContext().SpanID(), spans) && script == nil {
				script = s
			}
			if s.Name() == "db.tx" && descendsFrom(s, op.SpanContext().SpanID(), spans) {
				tx = s
			}
		}
		if script == nil {
			t.Errorf("no Lua script span under the operation (spans: %v)", names(spans))
		}
		if tx == nil {
			t.Fatalf("no db.tx span under the operation (spans: %v)", names(spans))
		}
		statements := 0
		for _, s := range spans {
			if s.Parent().SpanID() == tx.SpanContext().SpanID() && strings.HasPrefix(s.Name(), "sql.") {
				statements++
			}
		}
		if statements < 3 { // the order, its seats, the occupancies (and the commit)
			t.Errorf("statements under db.tx = %d, want at least 3 (spans: %v)", statements, names(spans))
		}
		// No attribute of any span holds the token, the variables or the user.
		for _, s := range spans {
			for _, kv := range s.Attributes() {
				v := kv.Value.Emit()
				for _, secret := range []string{alice, key, "alice", seats[0], show} {
					if strings.Contains(v, secret) {
						t.Errorf("span %q attribute %s = %q holds %q", s.Name(), kv.Key, v, secret)
					}
				}
			}
		}
	})

	t.Run("MalformedTraceparentStartsANewTrace", func(t *testing.T) {
		resp, out := a.postWithTraceparent("00-zzzz-not-a-trace-01", alice, holdSeatsQ, holdVars(show, seats[2:3], "idem-2"))
		if len(out.Errors) > 0 {
			t.Fatalf("hold with a malformed traceparent: %+v", out.Errors)
		}
		tp := resp.Header.Get("traceresponse")
		parts := strings.Split(tp, "-")
		if len(parts) != 4 {
			t.Fatalf("traceresponse = %q, want a trace of its own", tp)
		}
		id, err := trace.TraceIDFromHex(parts[1])
		if err != nil {
			t.Fatal(err)
		}
		spans := traceOf(t, rec, id, "POST /query")
		httpSpans := named(spans, "POST /query")
		if len(httpSpans) != 1 || httpSpans[0].Parent().IsValid() {
			t.Fatalf("want one root HTTP span, got %v", names(spans))
		}
		if len(named(spans, "mutation HoldSeats")) != 1 {
			t.Errorf("no operation span in the new trace: %v", names(spans))
		}
	})

	t.Run("ExemplarLeadsToTheTrace", func(t *testing.T) {
		const traceID = "0af7651916cd43dd8448eb211c80319c"
		_, out := a.postWithTraceparent("00-"+traceID+"-b7ad6b7169203331-01", alice, holdSeatsQ, holdVars(show, seats[3:5], "idem-3"))
		if len(out.Errors) > 0 {
			t.Fatalf("hold: %+v", out.Errors)
		}
		srv := httptest.NewServer(MetricsHandler())
		defer srv.Close()
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		found := false
		for _, m := range exemplarRe.FindAllStringSubmatch(string(body), -1) {
			found = found || m[1] == traceID
		}
		if !found {
			t.Errorf("no holdSeats duration bucket with the exemplar trace_id=%s in:\n%s", traceID,
				strings.Join(exemplarRe.FindAllString(string(body), -1), "\n"))
		}
	})

	t.Run("ProbesHaveNoSpan", func(t *testing.T) {
		before := len(rec.Ended())
		resp, err := http.Get(a.srv.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Header.Get("traceresponse") != "" {
			t.Errorf("/healthz answered with a traceresponse")
		}
		time.Sleep(50 * time.Millisecond)
		for _, s := range rec.Ended()[before:] {
			if strings.Contains(s.Name(), "GET") {
				t.Errorf("probe span %q", s.Name())
			}
		}
	})
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

// TestSubscriptionTraceParent: connection_init's traceparent parents a websocket's
// operations, and a subscribe's extensions.traceparent parents its own; the upgrade has no
// span.
func TestSubscriptionTraceParent(t *testing.T) {
	a, rec := newTracedApp(t)
	show, _ := a.onSaleShowtime()
	staff := a.token("door", "staff")
	const initTrace, initSpan = "11111111111111111111111111111111", "2222222222222222"
	const subTrace, subSpan = "33333333333333333333333333333333", "4444444444444444"
	d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}}
	conn, _, err := d.Dial("ws"+strings.TrimPrefix(a.srv.URL, "http")+"/query", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := &wsClient{t: t, conn: conn, proto: "graphql-transport-ws"}
	c.send(map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + staff,
		"traceparent": "00-" + initTrace + "-" + initSpan + "-01"}})
	if m := c.next(); m["type"] != "connection_ack" {
		t.Fatalf("after init: %v", m)
	}
	query := `subscription DoorCount($id: ID!) { checkIns(showtimeId: $id) { checkedIn } }`
	for _, sub := range []struct {
		id  string
		ext map[string]any
	}{{"a", nil}, {"b", map[string]any{"traceparent": "00-" + subTrace + "-" + subSpan + "-01"}}} {
		payload := map[string]any{"query": query, "variables": map[string]any{"id": show}}
		if sub.ext != nil {
			payload["extensions"] = sub.ext
		}
		c.send(map[string]any{"id": sub.id, "type": "subscribe", "payload": payload})
		if m := c.next(); m["type"] != "next" {
			t.Fatalf("subscribe %s: %v", sub.id, m)
		}
		c.send(map[string]any{"id": sub.id, "type": "complete"})
	}
	for _, want := range []struct{ trace, parent string }{{initTrace, initSpan}, {subTrace, subSpan}} {
		id, _ := trace.TraceIDFromHex(want.trace)
		spans := traceOf(t, rec, id, "subscription DoorCount")
		ops := named(spans, "subscription DoorCount")
		if len(ops) != 1 || ops[0].Parent().SpanID().String() != want.parent {
			t.Errorf("trace %s: spans %v, want one subscription span under %s", want.trace, names(spans), want.parent)
		}
		if n := len(named(spans, "GET")) + len(named(spans, "GET /query")); n != 0 {
			t.Errorf("the upgrade has %d spans", n)
		}
	}
}

// BenchmarkTracingCost is the cost of tracing on the hot read (a showtime's catalog
// fields) and on the seat map: off, on at 1% sampling, on for every request.
//
//	go test -run '^$' -bench TracingCost -benchtime 2000x ./internal/app/
func BenchmarkTracingCost(b *testing.B) {
	for _, c := range []struct {
		name    string
		sampler sdktrace.Sampler
	}{{"Off", nil}, {"Sampled1pct", sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01))}, {"Sampled100pct", sdktrace.AlwaysSample()}} {
		b.Run(c.name, func(b *testing.B) {
			a := benchApp(b, c.sampler)
			show, _ := a.onSaleShowtime()
			vars := map[string]any{"id": show}
			for _, q := range []struct{ name, query string }{
				{"HotRead", `query($id: ID!) { showtime(id: $id) { startsAt movie { title } hall { name } } }`},
				{"SeatMap", `query($id: ID!) { seatMap(showtimeId: $id) { version available } }`},
			} {
				b.Run(q.name, func(b *testing.B) {
					for b.Loop() {
						if r := a.do("", q.query, vars); len(r.Errors) > 0 {
							b.Fatal(r.Errors)
						}
					}
				})
			}
		})
	}
}

// TestSeatChangeTraceReachesEveryInstance: a holdSeats made with the caller's traceparent
// reaches the seat-map watchers of two instances sharing MySQL and Redis, and each
// instance's write of it is a seatmap.deliver span linked to a span of the hold's trace
// (the Lua script's caller, under the operation).
func TestSeatChangeTraceReachesEveryInstance(t *testing.T) {
	a, rec := newTracedApp(t)
	b := a.sibling()
	show, seats := a.onSaleShowtime()
	var watchers []*wsClient
	for _, inst := range []*testApp{a, b} {
		c := dialWS(t, inst, "graphql-transport-ws", "")
		c.subscribe(show)
		if ev := c.event(); ev.Kind != "SNAPSHOT" {
			t.Fatalf("first event %s, want SNAPSHOT", ev.Kind)
		}
		watchers = append(watchers, c)
	}
	const traceID = "5bf92f3577b34da6a3ce929d0e0e4737"
	_, out := a.postWithTraceparent("00-"+traceID+"-00f067aa0ba902b8-01", a.token("alice", "customer"),
		`mutation HoldSeats($in: HoldSeatsInput!) { holdSeats(input: $in) { id } }`, holdVars(show, seats[:1], "idem-deliver"))
	if len(out.Errors) > 0 {
		t.Fatalf("hold: %+v", out.Errors)
	}
	for _, c := range watchers {
		if ev := c.event(); ev.Kind != "DELTA" {
			t.Fatalf("after the hold: %s, want DELTA", ev.Kind)
		}
	}
	id, _ := trace.TraceIDFromHex(traceID)
	spans := traceOf(t, rec, id, "POST /query")
	inTrace := map[trace.SpanID]string{}
	for _, s := range spans {
		inTrace[s.SpanContext().SpanID()] = s.Name()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		var linked []string
		for _, s := range named(rec.Ended(), "seatmap.deliver") {
			for _, l := range s.Links() {
				if l.SpanContext.TraceID() == id && inTrace[l.SpanContext.SpanID()] != "" {
					linked = append(linked, inTrace[l.SpanContext.SpanID()])
				}
			}
		}
		if len(linked) == 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("seatmap.deliver spans linked to the hold's trace: %v, want one per instance (spans of the trace: %v)", linked, names(spans))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// benchApp is an instance without tracing (sampler nil) or tracing with sampler.
func benchApp(b *testing.B, sampler sdktrace.Sampler) *testApp {
	if sampler == nil {
		return startTestApp(b, testenv.MySQL(b), testenv.NewRedis(b))
	}
	a, _ := newTracedAppSampled(b, sampler)
	return a
}

// BenchmarkTracingCostHold is holdSeats and cancelOrder (one seat, a customer of its own
// each time) with tracing off and at 1 % sampling: the statements, scripts and commands of
// a hold, which make spans (or decide not to) one by one. For a profile:
// go test -run '^$' -bench 'TracingCostHold/Sampled1pct' -cpuprofile cpu.out ./internal/app/
func BenchmarkTracingCostHold(b *testing.B) {
	const cancelQ = `mutation($id: ID!) { cancelOrder(orderId: $id) { status } }`
	for _, c := range []struct {
		name    string
		sampler sdktrace.Sampler
	}{{"Off", nil}, {"Sampled1pct", sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01))}} {
		b.Run(c.name, func(b *testing.B) {
			a := benchApp(b, c.sampler)
			show, seats := a.onSaleShowtime()
			i := 0
			for b.Loop() {
				i++
				tok := a.token(fmt.Sprintf("bench-%d", i), "customer")
				var out struct{ HoldSeats struct{ ID string } }
				a.must(tok, `mutation($in: HoldSeatsInput!) { holdSeats(input: $in) { id status } }`, map[string]any{"in": map[string]any{
					"showtimeId": show, "seatIds": []string{seats[0]}, "idempotencyKey": fmt.Sprintf("k%d", i)}}, &out)
				a.must(tok, cancelQ, map[string]any{"id": out.HoldSeats.ID}, nil)
			}
		})
	}
}
