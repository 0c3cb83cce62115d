package main

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"seatflow/internal/auth"
	"seatflow/internal/tooling/testenv"
)

// otlpReceiver is an OTLP/HTTP trace endpoint (POST /v1/traces, protobuf) keeping the
// names of the spans it is sent, by trace id, and the names of the spans linked to each
// trace.
type otlpReceiver struct {
	mu     sync.Mutex
	traces map[string][]string
	linked map[string][]string
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	var msg coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(raw, &msg)
	}
	if req.URL.Path != "/v1/traces" || err != nil {
		http.Error(w, fmt.Sprintf("%s: %v", req.URL.Path, err), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range msg.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				id := hex.EncodeToString(s.GetTraceId())
				r.traces[id] = append(r.traces[id], s.GetName())
				for _, l := range s.GetLinks() {
					lid := hex.EncodeToString(l.GetTraceId())
					r.linked[lid] = append(r.linked[lid], s.GetName())
				}
			}
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func (r *otlpReceiver) spans(traceID string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.traces[traceID]...)
}

func (r *otlpReceiver) linksTo(traceID string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.linked[traceID]...)
}

// TestBinaryExportsTheTraceOfAHold runs the built binary on MySQL and Redis with its
// traces sent to an OTLP/HTTP receiver (OTEL_EXPORTER_OTLP_ENDPOINT, always_on): one
// holdSeats with the caller's traceparent exports, in that trace, the HTTP span, the
// operation's, a Lua script's and the order's db.tx; the seat map's watcher gets the hold
// from a seatmap.deliver span linked to that trace.
func TestBinaryExportsTheTraceOfAHold(t *testing.T) {
	recv := &otlpReceiver{traces: map[string][]string{}, linked: map[string][]string{}}
	collector := httptest.NewServer(recv)
	defer collector.Close()
	db, red := testenv.MySQL(t), testenv.NewRedis(t)
	const secret = "traces-test-secret-0123456789"
	addr := freeAddr(t)
	cmd := exec.Command(binary, "serve")
	cmd.Env = embeddedProcessEnv("SEATFLOW_ADDR="+addr, "SEATFLOW_MYSQL_DSN="+db.DSN,
		"SEATFLOW_REDIS_URL="+testenv.RedisURL(), "SEATFLOW_REDIS_PREFIX="+red.Keys.Prefix,
		"SEATFLOW_JWT_SECRET="+secret, "SEATFLOW_TICKET_KEY_SECRET=traces-test-ticket-key-secret-0123456789",
		"SEATFLOW_PAYMENT_PROVIDER=test", "SEATFLOW_LOG_LEVEL=warn",
		"OTEL_EXPORTER_OTLP_ENDPOINT="+collector.URL, "OTEL_TRACES_SAMPLER=always_on",
		"OTEL_BSP_SCHEDULE_DELAY=100", "OTEL_SERVICE_NAME=seatflow-test")
	p := start(t, cmd)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if r, err := client.Get("http://" + addr + "/readyz"); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-p.done:
			t.Fatalf("exited before ready; stderr:\n%s", p.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready after 90 s; stderr:\n%s", p.stderr)
		}
	}
	authn := &auth.Authenticator{Secret: []byte(secret), Now: time.Now}
	admin, err := authn.Issue("admin-1", "admin", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	alice, _ := authn.Issue("alice", "customer", time.Hour)
	call := func(token, traceparent, query string, vars map[string]any, out any) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/query", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		if traceparent != "" {
			req.Header.Set("traceparent", traceparent)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var got struct {
			Data   json.RawMessage
			Errors []any
		}
		if err := json.Unmarshal(raw, &got); err != nil || len(got.Errors) > 0 {
			t.Fatalf("%s: %s (%v)", query, raw, err)
		}
		if out != nil {
			json.Unmarshal(got.Data, out)
		}
	}
	var movie struct{ CreateMovie struct{ ID string } }
	call(admin, "", `mutation($in: MovieInput!) { createMovie(input: $in) { id } }`, map[string]any{"in": map[string]any{
		"title": "Traced", "durationMinutes": 90, "genres": []string{"Drama"}, "rating": "PG", "synopsis": "s"}}, &movie)
	var hall struct {
		CreateHall struct {
			ID    string
			Seats []struct{ ID string }
		}
	}
	call(admin, "", `mutation($in: HallInput!) { createHall(input: $in) { id seats { id } } }`, map[string]any{"in": map[string]any{
		"name": "Traced hall", "rows": []map[string]any{{"label": "A", "seats": 4}}}}, &hall)
	var show struct{ CreateShowtime struct{ ID string } }
	call(admin, "", `mutation($in: ShowtimeInput!) { createShowtime(input: $in) { id } }`, map[string]any{"in": map[string]any{
		"movieId": movie.CreateMovie.ID, "hallId": hall.CreateHall.ID, "startsAt": time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339),
		"prices": []map[string]any{{"kind": "STANDARD", "amountCents": 1000}}}}, &show)
	call(admin, "", `mutation($id: ID!) { openSales(showtimeId: $id) { id } }`, map[string]any{"id": show.CreateShowtime.ID}, nil)

	ws, _, err := (&websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}}).Dial("ws://"+addr+"/query", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	readType := func(want string) {
		t.Helper()
		for {
			var m struct{ Type string }
			if err := ws.ReadJSON(&m); err != nil {
				t.Fatalf("websocket, waiting for %s: %v", want, err)
			}
			if m.Type == want {
				return
			}
		}
	}
	ws.WriteJSON(map[string]any{"type": "connection_init", "payload": map[string]any{}})
	readType("connection_ack")
	ws.WriteJSON(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{
		"query": `subscription($id: ID!) { seatMap(showtimeId: $id) { kind version } }`, "variables": map[string]any{"id": show.CreateShowtime.ID}}})
	readType("next") // the SNAPSHOT

	const traceID = "6bf92f3577b34da6a3ce929d0e0e4738"
	call(alice, "00-"+traceID+"-00f067aa0ba902b9-01", `mutation HoldSeats($in: HoldSeatsInput!) { holdSeats(input: $in) { id } }`,
		map[string]any{"in": map[string]any{"showtimeId": show.CreateShowtime.ID, "seatIds": []string{hall.CreateHall.Seats[0].ID},
			"idempotencyKey": "traced-hold"}}, nil)
	readType("next") // the hold's DELTA

	want := []string{"POST /query", "mutation HoldSeats", "evalsha", "db.tx"}
	has := func(names []string) map[string]bool {
		got := map[string]bool{}
		for _, n := range names {
			if n == "eval" {
				n = "evalsha" // the script sent whole once Redis lacks it
			}
			got[n] = true
		}
		return got
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got, missing := has(recv.spans(traceID)), []string(nil)
		for _, n := range want {
			if !got[n] {
				missing = append(missing, n)
			}
		}
		linked := recv.linksTo(traceID)
		if len(linked) == 0 || linked[0] != "seatmap.deliver" {
			missing = append(missing, "a seatmap.deliver span linked to it")
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s lacks %v; its spans: %v\nstderr:\n%s", traceID, missing, recv.spans(traceID), p.stderr)
		}
	}
	ws.Close() // an open websocket would hold up the shutdown
	p.interrupt(t)
}
