package app

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"seatflow/internal/seatrender/seatrendertest"
)

// rawWS is a websocket client that reads messages as bytes.
type rawWS struct {
	t    *testing.T
	conn *websocket.Conn
}

func dialRaw(t *testing.T, url, proto string) *rawWS {
	t.Helper()
	d := websocket.Dialer{Subprotocols: []string{proto}}
	conn, _, err := d.Dial("ws"+strings.TrimPrefix(url, "http")+"/query", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c := &rawWS{t: t, conn: conn}
	c.send(`{"type":"connection_init"}`)
	if m := c.next(); !bytes.Contains(m, []byte(`"connection_ack"`)) {
		t.Fatalf("after init: %s", m)
	}
	return c
}

func (c *rawWS) send(s string) {
	c.t.Helper()
	if err := c.conn.WriteMessage(websocket.TextMessage, []byte(s)); err != nil {
		c.t.Fatal(err)
	}
}

// next returns the next message that is not a keep-alive.
func (c *rawWS) next() []byte {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, m, err := c.conn.ReadMessage()
		if err != nil {
			c.t.Fatalf("read: %v", err)
		}
		if !bytes.Contains(m, []byte(`"type":"ka"`)) && !bytes.Contains(m, []byte(`"type":"ping"`)) {
			return m
		}
	}
}

// TestSeatMapEventsMatchTheExecutor: a seat-map subscription answered straight from the
// hub (no executor, no goroutine) sends the very bytes the executor sends for the same
// selection, SNAPSHOT and DELTA, on both protocols, for random selections.
func TestSeatMapEventsMatchTheExecutor(t *testing.T) {
	a := newTestApp(t)
	show, seatIDs := a.onSaleShowtime()
	// The same instance served with seat maps through gqlgen's executor.
	api := a.API()
	api.SeatMapWatches = nil
	mux := http.NewServeMux()
	api.Register(mux)
	viaExecutor := httptest.NewServer(mux)
	t.Cleanup(viaExecutor.Close)

	rng := rand.New(rand.NewPCG(5, 8))
	buyer := a.token("render-buyer", "customer")
	for i := range 30 {
		proto, start := "graphql-transport-ws", "subscribe"
		if i%2 == 1 {
			proto, start = "graphql-ws", "start"
		}
		q := seatrendertest.Query(rng, "subscription", "SeatMapEvent", "s: seatMap(showtimeId: $id)")
		vars := fmt.Sprintf(`{"id":%q}`, show)
		if strings.Contains(q, "$yes") {
			vars = fmt.Sprintf(`{"id":%q,"yes":%v}`, show, rng.IntN(2) == 0)
		}
		msg := fmt.Sprintf(`{"id":"1","type":%q,"payload":{"query":%q,"variables":%s}}`, start, q, vars)
		fast, slow := dialRaw(t, a.srv.URL, proto), dialRaw(t, viaExecutor.URL, proto)
		fast.send(msg)
		slow.send(msg)
		want, got := slow.next(), fast.next()
		if bytes.Contains(want, []byte(`"errors"`)) {
			t.Fatalf("selection %d: the executor refused %s: %s", i, q, want)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("selection %d (%s, SNAPSHOT) differs:\nquery: %s\n  got %s\n want %s", i, proto, q, got, want)
		}
		if i%5 == 0 { // a change: both get the same DELTA
			a.hold(buyer, show, []string{seatIDs[i/5]}, fmt.Sprint("render-", i))
			want, got := slow.next(), fast.next()
			if !bytes.Equal(got, want) {
				t.Fatalf("selection %d (%s, DELTA) differs:\nquery: %s\n  got %s\n want %s", i, proto, q, got, want)
			}
		}
		fast.conn.Close()
		slow.conn.Close()
	}
}
