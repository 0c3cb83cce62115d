package app

import (
	"encoding/json"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"seatflow/internal/tooling/testenv"
)

// wsClient is a GraphQL websocket client on one of the two protocols.
type wsClient struct {
	t     *testing.T
	conn  *websocket.Conn
	proto string
}

type seatEvent struct {
	Kind        string
	FromVersion int
	Version     int
	Seats       []struct {
		Seat   struct{ ID string }
		Status string
	}
}

func dialWS(t *testing.T, a *testApp, proto, token string) *wsClient {
	t.Helper()
	d := websocket.Dialer{Subprotocols: []string{proto}}
	conn, resp, err := d.Dial("ws"+strings.TrimPrefix(a.srv.URL, "http")+"/query", nil)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	c := &wsClient{t: t, conn: conn, proto: proto}
	t.Cleanup(func() { conn.Close() })
	payload := map[string]any{}
	if token != "" {
		payload["Authorization"] = "Bearer " + token
	}
	c.send(map[string]any{"type": "connection_init", "payload": payload})
	if m := c.next(); m["type"] != "connection_ack" {
		t.Fatalf("after init: %v", m)
	}
	return c
}

func (c *wsClient) send(v any) {
	c.t.Helper()
	if err := c.conn.WriteJSON(v); err != nil {
		c.t.Fatal(err)
	}
}

// next returns the next message that is not a keep-alive, waiting at most 10 s for it.
// The deadline is set once: keep-alives must not extend the wait.
func (c *wsClient) next() map[string]any {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		var m map[string]any
		if err := c.conn.ReadJSON(&m); err != nil {
			c.t.Fatalf("read (10 s for a message that is not a keep-alive): %v", err)
		}
		if m["type"] != "ka" && m["type"] != "ping" && m["type"] != "pong" {
			return m
		}
	}
}

func (c *wsClient) subscribe(show string) {
	typ := "subscribe"
	if c.proto == "graphql-ws" {
		typ = "start"
	}
	c.send(map[string]any{"id": "1", "type": typ, "payload": map[string]any{
		"query":     `subscription($id: ID!) { seatMap(showtimeId: $id) { kind fromVersion version seats { seat { id } status } } }`,
		"variables": map[string]any{"id": show},
	}})
}

func (c *wsClient) event() seatEvent {
	c.t.Helper()
	m := c.next()
	if m["type"] != "next" && m["type"] != "data" {
		c.t.Fatalf("want an event, got %v", m)
	}
	raw, _ := json.Marshal(m["payload"])
	var p struct {
		Data   struct{ SeatMap seatEvent }
		Errors []any
	}
	if err := json.Unmarshal(raw, &p); err != nil || len(p.Errors) > 0 {
		c.t.Fatalf("event payload %s: %v", raw, err)
	}
	return p.Data.SeatMap
}

// wantDelta reads the next event and checks it is a DELTA of version want with the seats'
// new status.
func (c *wsClient) wantDelta(version int, status string, seats ...string) {
	c.t.Helper()
	ev := c.event()
	got := map[string]string{}
	for _, s := range ev.Seats {
		got[s.Seat.ID] = s.Status
	}
	if ev.Kind != "DELTA" || ev.Version != version || len(got) != len(seats) {
		c.t.Fatalf("event = %+v, want DELTA v%d of %v", ev, version, seats)
	}
	for _, s := range seats {
		if got[s] != status {
			c.t.Fatalf("seat %s is %q in the delta, want %s", s, got[s], status)
		}
	}
}

func TestLiveSeatMapOverWebsocket(t *testing.T) {
	for _, proto := range []string{"graphql-transport-ws", "graphql-ws"} {
		t.Run(proto, func(t *testing.T) {
			a := newTestApp(t)
			alice := a.token("alice", "customer")
			show, seats := a.onSaleShowtime()
			c := dialWS(t, a, proto, "")
			c.subscribe(show)
			snap := c.event()
			if snap.Kind != "SNAPSHOT" || len(snap.Seats) != 24 {
				t.Fatalf("first event = %s with %d seats, want a SNAPSHOT of 24", snap.Kind, len(snap.Seats))
			}
			v := snap.Version

			o := a.hold(alice, show, seats[0:2], "k1")
			c.wantDelta(v+1, "HELD", seats[0], seats[1])
			a.must(alice, `mutation($id: ID!) { payOrder(orderId: $id, paymentRef: "p") { id } }`, map[string]any{"id": o.ID}, nil)
			c.wantDelta(v+2, "SOLD", seats[0], seats[1])
			o2 := a.hold(alice, show, seats[2:3], "k2")
			c.wantDelta(v+3, "HELD", seats[2])
			a.must(alice, `mutation($id: ID!) { cancelOrder(orderId: $id) { id } }`, map[string]any{"id": o2.ID}, nil)
			c.wantDelta(v+4, "AVAILABLE", seats[2])
			a.hold(alice, show, seats[2:4], "k3")
			c.wantDelta(v+5, "HELD", seats[2], seats[3])
			a.clock.Advance(16 * time.Minute) // the expiry worker (every second) expires the hold
			c.wantDelta(v+6, "AVAILABLE", seats[2], seats[3])
		})
	}
}

func TestLiveAcrossInstances(t *testing.T) {
	a := newTestApp(t)
	b := a.sibling()
	show, seats := a.onSaleShowtime()
	c := dialWS(t, b, "graphql-transport-ws", "")
	c.subscribe(show)
	v := c.event().Version
	a.hold(a.token("alice", "customer"), show, seats[5:6], "k")
	c.wantDelta(v+1, "HELD", seats[5])
}

func TestLiveAuth(t *testing.T) {
	a := newTestApp(t, "-allowed-origins", "https://tickets.example")
	show, _ := a.onSaleShowtime()
	t.Run("BadTokenCloses4403", func(t *testing.T) {
		d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}}
		conn, _, err := d.Dial("ws"+strings.TrimPrefix(a.srv.URL, "http")+"/query", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.WriteJSON(map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer nope"}})
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		for {
			if _, _, err = conn.ReadMessage(); err != nil {
				break
			}
		}
		if !websocket.IsCloseError(err, 4403) {
			t.Fatalf("close = %v, want 4403", err)
		}
	})
	t.Run("ValidTokenAndNoTokenWork", func(t *testing.T) {
		for _, tok := range []string{"", a.token("alice", "customer")} {
			c := dialWS(t, a, "graphql-transport-ws", tok)
			c.subscribe(show)
			if ev := c.event(); ev.Kind != "SNAPSHOT" {
				t.Fatalf("first event %s", ev.Kind)
			}
		}
	})
	t.Run("WrongOriginRefused", func(t *testing.T) {
		h := http.Header{"Origin": {"https://evil.example"}}
		_, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(a.srv.URL, "http")+"/query", h)
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("dial from another origin: %v %v", err, resp)
		}
	})
}

// TestLiveLeavesNoGoroutines: after every client has gone, no goroutine the watchers
// started is left (goleak), while the instance runs on. On Linux idle watchers hold no
// goroutine at all (the websocket registry polls their sockets): that is checked too.
func TestLiveLeavesNoGoroutines(t *testing.T) {
	a := newTestApp(t)
	show, _ := a.onSaleShowtime()
	time.Sleep(100 * time.Millisecond)
	before := goleak.IgnoreCurrent()
	var clients []*wsClient
	for i := 0; i < 20; i++ {
		c := dialWS(t, a, "graphql-transport-ws", "")
		c.subscribe(show)
		c.event()
		clients = append(clients, c)
	}
	switch leftover := goleak.Find(before); {
	case runtime.GOOS == "linux" && leftover != nil:
		t.Errorf("20 idle watchers hold goroutines, want none: %v", leftover)
	case runtime.GOOS != "linux" && leftover == nil:
		t.Fatal("watchers started no goroutines: the test measures nothing")
	}
	for _, c := range clients {
		c.conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
		c.conn.Close()
	}
	testenv.NoGoroutineLeft(t, before)
}

// TestWebsocketLimits: the per-connection subscription cap and the message size limit,
// each triggered by a real client.
func TestWebsocketLimits(t *testing.T) {
	a := newTestApp(t)
	show, _ := a.onSaleShowtime()
	t.Run("SubscriptionsPerConnection", func(t *testing.T) {
		c := dialWS(t, a, "graphql-transport-ws", "")
		for i := 1; i <= 11; i++ {
			c.send(map[string]any{"id": strconv.Itoa(i), "type": "subscribe", "payload": map[string]any{
				"query":     `subscription($id: ID!) { seatMap(showtimeId: $id) { kind } }`,
				"variables": map[string]any{"id": show},
			}})
		}
		// Each subscription's first message: a SNAPSHOT, or the refusal of the one too many
		// (which one it is depends on the order gqlgen starts them in).
		first := map[any]string{}
		for len(first) < 11 {
			m := c.next()
			if _, seen := first[m["id"]]; seen {
				continue
			}
			raw, _ := json.Marshal(m)
			switch {
			case strings.Contains(string(raw), `"kind":"SNAPSHOT"`):
				first[m["id"]] = "snapshot"
			case strings.Contains(string(raw), "RATE_LIMITED"):
				first[m["id"]] = "refused"
			default:
				t.Fatalf("unexpected message %s", raw)
			}
		}
		refused := 0
		for _, v := range first {
			if v == "refused" {
				refused++
			}
		}
		if refused != 1 {
			t.Fatalf("first messages %v: want 10 snapshots and 1 RATE_LIMITED", first)
		}
	})
	t.Run("MessageTooLarge", func(t *testing.T) {
		c := dialWS(t, a, "graphql-transport-ws", "")
		big := strings.Repeat("x", 100<<10)
		if err := c.conn.WriteJSON(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{"query": big}}); err != nil {
			// The server dropped the connection while the message was still being sent:
			// refused before it was read whole.
			return
		}
		c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		var err error
		for err == nil {
			_, _, err = c.conn.ReadMessage()
		}
		if websocket.IsCloseError(err, websocket.CloseNormalClosure) || strings.Contains(err.Error(), "timeout") {
			t.Fatalf("an oversized message got %v, want the connection refused", err)
		}
	})
}

// TestWebsocketQueriesSeeUpdates: each query a socket runs reads the catalog afresh, as
// each HTTP request does: a movie renamed between two queries on one socket is seen by
// the second (the socket's operations do not share one request's loaders, which keep
// what they read).
func TestWebsocketQueriesSeeUpdates(t *testing.T) {
	a := newTestApp(t)
	show, _ := a.onSaleShowtime()
	c := dialWS(t, a, "graphql-transport-ws", "")
	title := func(id string) string {
		t.Helper()
		c.send(map[string]any{"id": id, "type": "subscribe", "payload": map[string]any{
			"query": `query($id: ID!) { showtime(id: $id) { movie { id title } } }`, "variables": map[string]any{"id": show}}})
		m := c.next()
		raw, _ := json.Marshal(m["payload"])
		var p struct {
			Data struct {
				Showtime struct{ Movie struct{ ID, Title string } }
			}
			Errors []any
		}
		if m["type"] != "next" || json.Unmarshal(raw, &p) != nil || len(p.Errors) > 0 {
			t.Fatalf("query %s: %v", id, m)
		}
		if done := c.next(); done["type"] != "complete" {
			t.Fatalf("after query %s: %v, want complete", id, done)
		}
		return p.Data.Showtime.Movie.ID + " " + p.Data.Showtime.Movie.Title
	}
	first := title("1")
	movie, _, _ := strings.Cut(first, " ")
	a.must(a.admin, `mutation($id: ID!) { updateMovie(id: $id, input: {title: "Renamed", durationMinutes: 155}) { id } }`,
		map[string]any{"id": movie}, nil)
	if got, want := title("2"), movie+" Renamed"; got != want {
		t.Errorf("second query on the socket: %q, want %q (the first read %q)", got, want, first)
	}
}
