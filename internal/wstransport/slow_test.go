package wstransport_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"seatflow"
	"seatflow/graph"
	"seatflow/internal/live"
	"seatflow/internal/nodeid"
	"seatflow/internal/seats"
	"seatflow/internal/tooling/testenv"
	"seatflow/internal/wstransport"
)

// socketBuffer is the kernel buffer each side of a test connection gets (Linux doubles
// it): small, so a client that stops reading blocks the server's writer after a few
// kilobytes instead of after the megabytes loopback's autotuning would take.
const socketBuffer = 4096

// afterPauseBudget bounds what a client that stopped reading may receive once it reads
// again: the two sockets' buffers, the events the transport queues for one connection
// and the batch its writer was writing, and a snapshot, all far below it. Had the
// transport queued every change instead, it would be several times this (checked).
const afterPauseBudget = 64 << 10

// slowWorld is a showtime's seat map in real Redis, its live hub, and the real websocket
// transport over the real schema, served on sockets with small buffers.
type slowWorld struct {
	url     string // the websocket's
	httpURL string
	store   *seats.Store
	hall    *seatflow.Hall
	show    int
	held    map[int]string // seat → the token holding it
	rng     *rand.Rand
}

func newSlowWorld(t *testing.T, writeTimeout time.Duration) *slowWorld {
	t.Helper()
	return newWorld(t, worldOptions{writeTimeout: writeTimeout, smallSends: true})
}

// worldOptions shape a world's server.
type worldOptions struct {
	writeTimeout time.Duration
	registry     *wstransport.Registry // default: a zero Registry
	smallSends   bool                  // accepted connections get send buffers of socketBuffer bytes
	requests     http.Handler          // served at /request, counted by the registry's Requests
}

func newWorld(t *testing.T, opts worldOptions) *slowWorld {
	t.Helper()
	// Runs last: the world leaves no connection or watch behind, so the next one starts
	// from the same gauges.
	open, watches := metric(t, "seatflow_websocket_connections", nil), metric(t, "seatflow_live_subscriptions", nil)
	t.Cleanup(func() {
		waitFor(t, "the world's connections and watches to end", func() bool {
			return metric(t, "seatflow_websocket_connections", nil) == open && metric(t, "seatflow_live_subscriptions", nil) == watches
		})
	})
	red := testenv.NewRedis(t)
	w := &slowWorld{store: &seats.Store{RDB: red.Client, Keys: red.Keys}, hall: &seatflow.Hall{ID: 1, Name: "Hall 1"}, show: 7,
		held: map[int]string{}, rng: rand.New(rand.NewPCG(1, 2))}
	for i := range 30 {
		w.hall.Seats = append(w.hall.Seats, seatflow.Seat{ID: i + 1, HallID: 1, Row: string(rune('A' + i/10)),
			Number: 1 + i%10, X: 1 + i%10, Y: i / 10, Kind: seatflow.SeatStandard, Sellable: true})
	}
	if _, err := w.store.Init(context.Background(), w.show, w.hall, nil); err != nil {
		t.Fatal(err)
	}

	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	hub := live.NewHub(red.Client, red.Keys, w.store, live.Options{Log: log})
	ctx, stopHub := context.WithCancel(context.Background())
	hubDone := make(chan error, 1)
	go func() { hubDone <- hub.Run(ctx) }()
	t.Cleanup(func() {
		stopHub()
		select {
		case err := <-hubDone:
			if err != nil {
				t.Errorf("hub: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("hub still running 10s after it was stopped")
		}
	})

	reg := opts.registry
	if reg == nil {
		reg = &wstransport.Registry{}
	}
	gql := handler.New(graph.NewExecutableSchema(graph.Config{Resolvers: &graph.Resolver{}}))
	gql.AddTransport(wstransport.New(wstransport.Config{SeatMaps: hubWatches{hub, w.hall}, Registry: reg,
		WriteTimeout: opts.writeTimeout, PingPong: time.Hour, KeepAlive: time.Hour, Log: log}))
	mux := http.NewServeMux()
	mux.Handle("/", gql)
	if opts.requests != nil {
		mux.Handle("/request", reg.Requests.Track(opts.requests))
	}
	srv := httptest.NewUnstartedServer(mux)
	if opts.smallSends {
		srv.Listener = smallSendBuffers{srv.Listener}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(reg.Close)
	w.url, w.httpURL = "ws"+strings.TrimPrefix(srv.URL, "http"), srv.URL
	return w
}

// hubWatches is the app's seat-map watches with the hall at hand.
type hubWatches struct {
	hub  *live.Hub
	hall *seatflow.Hall
}

func (h hubWatches) WatchSeatMap(ctx context.Context, showID int, sink live.Sink) error {
	return h.hub.WatchWith(ctx, showID, h.hall, sink)
}

// smallSendBuffers gives every accepted connection a send buffer of socketBuffer bytes.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(socketBuffer)
	}
	return c, err
}

// watcher is a graphql-transport-ws client of one seat map, on a socket with a small
// receive buffer, keeping the map as a front end would.
type watcher struct {
	t        *testing.T
	ws       *websocket.Conn
	m        map[string]seatflow.SeatStatus // seat id (the API's) → status
	version  int
	bytes    int // payload bytes read
	kinds    []seatflow.SeatMapEventKind
	merged   int // DELTAs spanning more than one version
	lastSize int // bytes of the last message read
}

func (w *slowWorld) watch(t *testing.T) *watcher {
	t.Helper()
	d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}, HandshakeTimeout: 5 * time.Second,
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetReadBuffer(socketBuffer)
			}
			return c, err
		}}
	ws, _, err := d.Dial(w.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	c := &watcher{t: t, ws: ws}
	c.send(map[string]any{"type": "connection_init"})
	if typ, _ := c.read(); typ != "connection_ack" {
		t.Fatalf("after connection_init: %q, want connection_ack", typ)
	}
	c.send(map[string]any{"type": "subscribe", "id": "1", "payload": map[string]any{
		"query":     "subscription($id: ID!) { seatMap(showtimeId: $id) { kind fromVersion version seats { seat { id } status } } }",
		"variables": map[string]any{"id": nodeid.Encode(nodeid.Showtime, w.show)}}})
	c.next()
	if c.kinds[0] != seatflow.EventSnapshot {
		t.Fatalf("first event: %s, want SNAPSHOT", c.kinds[0])
	}
	return c
}

func (c *watcher) send(m map[string]any) {
	c.t.Helper()
	if err := c.ws.WriteJSON(m); err != nil {
		c.t.Fatal(err)
	}
}

// read returns the next message's type and payload, within 10 s.
func (c *watcher) read() (string, json.RawMessage) {
	c.t.Helper()
	_ = c.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, b, err := c.ws.ReadMessage()
	if err != nil {
		c.t.Fatalf("read: %v (at version %d)", err, c.version)
	}
	c.bytes, c.lastSize = c.bytes+len(b), len(b)
	var m struct {
		Type    string          `json:"type"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		c.t.Fatalf("message %s: %v", b, err)
	}
	return m.Type, m.Payload
}

// next reads the next seat-map event and applies it to the watcher's map, checking that
// a DELTA applies to the version before it (fromVersion) and moves it on.
func (c *watcher) next() {
	c.t.Helper()
	typ, payload := c.read()
	if typ != "next" {
		c.t.Fatalf("message %q %s, want next", typ, payload)
	}
	var p struct {
		Data struct {
			SeatMap struct {
				Kind        seatflow.SeatMapEventKind
				FromVersion int
				Version     int
				Seats       []struct {
					Seat   struct{ ID string }
					Status seatflow.SeatStatus
				}
			}
		}
		Errors []any
	}
	if err := json.Unmarshal(payload, &p); err != nil || len(p.Errors) > 0 {
		c.t.Fatalf("event %s: %v", payload, err)
	}
	ev := p.Data.SeatMap
	if ev.Kind == seatflow.EventDelta && (ev.FromVersion != c.version || ev.Version <= c.version) {
		c.t.Fatalf("DELTA v%d→v%d after v%d: a change was skipped", ev.FromVersion, ev.Version, c.version)
	}
	if ev.Kind == seatflow.EventSnapshot {
		c.m = map[string]seatflow.SeatStatus{}
	}
	for _, s := range ev.Seats {
		c.m[s.Seat.ID] = s.Status
	}
	if ev.Kind == seatflow.EventDelta && ev.Version > ev.FromVersion+1 {
		c.merged++
	}
	c.version = ev.Version
	c.kinds = append(c.kinds, ev.Kind)
}

// realMap is the seat map in Redis, as the watcher keeps it, and its version.
func (w *slowWorld) realMap(t *testing.T) (map[string]seatflow.SeatStatus, int) {
	t.Helper()
	m, err := w.store.Map(context.Background(), w.show, w.hall)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]seatflow.SeatStatus{}
	for _, s := range m.Seats {
		out[nodeid.Encode(nodeid.Seat, s.Seat.ID)] = s.Status
	}
	return out, m.Version
}

// change holds a random free seat or releases a held one, n times: each is one DELTA.
func (w *slowWorld) change(t *testing.T, n int) {
	t.Helper()
	ctx := context.Background()
	layout := seats.NewLayout(w.hall)
	for range n {
		seat := 1 + w.rng.IntN(len(w.hall.Seats))
		if token, ok := w.held[seat]; ok {
			if _, err := w.store.Release(ctx, w.show, token, "u", []int{seat}); err != nil {
				t.Fatal(err)
			}
			delete(w.held, seat)
			continue
		}
		token := testenv.RandomName("tok")
		if err := w.store.Hold(ctx, seats.HoldRequest{ShowtimeID: w.show, Layout: layout, SeatIDs: []int{seat},
			Token: token, UserID: "u", AllowGaps: true}); err != nil {
			t.Fatal(err)
		}
		w.held[seat] = token
	}
}

// metric reads a counter or gauge of the default Prometheus registry (the one /metrics
// serves), summed over its labels that match.
func metric(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
					continue next
				}
			}
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

// waitFor polls cond every 10 ms and fails the test, naming what it waited for, after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWebsocketSlowWatcher: a watcher that stops reading while the seat map keeps
// changing costs the server a bounded queue, not one message per change. If it reads
// again within the write timeout, the changes it could not take come merged into one
// DELTA (never queued change by change, no SNAPSHOT needed) and it ends with the real
// map; if it does not, the server drops the connection and ends its watch.
func TestWebsocketSlowWatcher(t *testing.T) {
	const changes = 3000
	slow := map[string]string{"reason": live.ReasonSlow}

	t.Run("ReadsAgainAndGetsItsChangesMerged", func(t *testing.T) {
		w := newSlowWorld(t, time.Minute)
		c := w.watch(t)
		// One change read as it comes: the size of a DELTA on the wire.
		w.change(t, 1)
		c.next()
		deltaSize := c.lastSize
		slowBefore := metric(t, "seatflow_live_slow_subscribers_total", nil)
		resyncsBefore := metric(t, "seatflow_live_snapshots_sent_total", slow)
		overflowsBefore := metric(t, "seatflow_websocket_queue_overflows_total", nil)

		// The client stops reading; the changes go on until the watcher counts as slow (its
		// DELTA waited over a second for its connection).
		w.change(t, changes)
		made := changes
		deadline := time.Now().Add(30 * time.Second)
		for metric(t, "seatflow_live_slow_subscribers_total", nil) <= slowBefore {
			if time.Now().After(deadline) {
				t.Fatalf("after %d changes in 30s the watcher is not counted slow", made)
			}
			time.Sleep(100 * time.Millisecond)
			w.change(t, 10)
			made += 10
		}
		_, version := w.realMap(t)

		// It reads again, until it has the version the map had after the changes.
		read, kinds := c.bytes, len(c.kinds)
		for c.version < version {
			c.next()
		}
		afterPause := c.kinds[kinds:]
		want, wantVersion := w.realMap(t)
		if c.version != wantVersion || fmt.Sprint(c.m) != fmt.Sprint(want) {
			t.Errorf("watcher's map at v%d:\n got %v\nwant v%d %v", c.version, c.m, wantVersion, want)
		}
		for _, k := range afterPause {
			if k == seatflow.EventSnapshot {
				t.Errorf("after the pause: %v, want DELTAs only (its changes merged)", afterPause)
				break
			}
		}
		if c.merged == 0 {
			t.Errorf("after the pause: %d events, none a merged DELTA", len(afterPause))
		}
		if got := metric(t, "seatflow_live_snapshots_sent_total", slow) - resyncsBefore; got != 0 {
			t.Errorf("slow resync snapshots sent: got %v, want none", got)
		}
		if got := metric(t, "seatflow_websocket_queue_overflows_total", nil) - overflowsBefore; got != 0 {
			t.Errorf("queue overflows: got %v, want none (what waits for it is bounded)", got)
		}
		received, unbounded := c.bytes-read, made*deltaSize
		t.Logf("after the pause: %d events (%d merged DELTAs), %d bytes; every change as a DELTA would be %d bytes",
			len(afterPause), c.merged, received, unbounded)
		if unbounded < 4*afterPauseBudget {
			t.Fatalf("the changes weigh %d bytes as DELTAs, want ≥ %d to show the bound", unbounded, 4*afterPauseBudget)
		}
		if received > afterPauseBudget {
			t.Errorf("received after the pause: %d bytes, want ≤ %d (queued bytes are bounded)", received, afterPauseBudget)
		}
		if len(afterPause) >= made {
			t.Errorf("events after the pause: %d, want fewer than the %d changes", len(afterPause), made)
		}

		// And it is a normal watcher again: the next change comes as the next DELTA.
		w.change(t, 1)
		c.next()
		if k := c.kinds[len(c.kinds)-1]; k != seatflow.EventDelta || c.version != version+1 {
			t.Errorf("after the resync: %s v%d, want DELTA v%d", k, c.version, version+1)
		}
	})

	t.Run("NeverReadsAgainIsDropped", func(t *testing.T) {
		const writeTimeout = 300 * time.Millisecond
		openBefore := metric(t, "seatflow_websocket_connections", nil)
		watchesBefore := metric(t, "seatflow_live_subscriptions", nil)
		w := newSlowWorld(t, writeTimeout)
		c := w.watch(t)

		// The map keeps changing while the client reads nothing: the writer blocked on it
		// gives up after the write timeout, the connection is dropped and its watch ends on
		// the server (however fast the changes come: they go on until then).
		dropped := func() bool {
			return metric(t, "seatflow_websocket_connections", nil) == openBefore &&
				metric(t, "seatflow_live_subscriptions", nil) == watchesBefore
		}
		deadline := time.Now().Add(30 * time.Second)
		n := 0
		for ; !dropped(); n += 50 {
			if time.Now().After(deadline) {
				t.Fatalf("after %d changes in 30s the connection is still open", n)
			}
			w.change(t, 50)
		}
		// What the client still reads is what the sockets held, then the end of the
		// connection (no close frame: the server could not write one).
		read := c.bytes
		_ = c.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		var err error
		for err == nil {
			var b []byte
			_, b, err = c.ws.ReadMessage()
			c.bytes += len(b)
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the client's read timed out: want the connection ended by the server")
		}
		if received := c.bytes - read; received > afterPauseBudget {
			t.Errorf("received after the pause: %d bytes, want ≤ %d", received, afterPauseBudget)
		}
		t.Logf("dropped after %d changes; the client then read %d bytes and %v", n, c.bytes-read, err)
	})
}
