package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"seatflow/internal/auth"
	"seatflow/internal/tooling/otlpreceiver"
	"seatflow/internal/tooling/testenv"
)

// TestBinaryExportsTheTraceOfAHold runs the built binary on MySQL and Redis with its
// traces sent to an OTLP/HTTP receiver (OTEL_EXPORTER_OTLP_ENDPOINT, always_on): one
// holdSeats with the caller's traceparent exports, in that trace, the HTTP span, the
// operation's, a Lua script's and the order's db.tx; the seat map's watcher gets the hold
// from a seatmap.deliver span linked to that trace.
func TestBinaryExportsTheTraceOfAHold(t *testing.T) {
	recv := otlpreceiver.New()
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
		got, missing := has(recv.Spans(traceID)), []string(nil)
		for _, n := range want {
			if !got[n] {
				missing = append(missing, n)
			}
		}
		linked := recv.LinksTo(traceID)
		if len(linked) == 0 || linked[0] != "seatmap.deliver" {
			missing = append(missing, "a seatmap.deliver span linked to it")
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s lacks %v; its spans: %v\nstderr:\n%s", traceID, missing, recv.Spans(traceID), p.stderr)
		}
	}
	ws.Close() // an open websocket would hold up the shutdown
	p.interrupt(t)
}
