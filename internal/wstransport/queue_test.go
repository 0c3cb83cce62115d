package wstransport

import (
	"context"
	"encoding/json"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/testserver"
	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// smallBuffers lets a test fill a connection's queue with little data: the server's
// socket sends from a small buffer and the client's receives into one, so what the client
// does not read waits in the queue instead of the kernel's buffers.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(8 << 10)
	}
	return c, err
}

// queueServer serves gqlgen's test server with the queue bounded at maxQueued bytes,
// through sockets with small buffers.
func queueServer(t *testing.T, maxQueued int) (*httptest.Server, *Registry) {
	t.Helper()
	reg := &Registry{}
	gql := testserver.New()
	gql.AddTransport(New(Config{Registry: reg, MaxQueuedBytes: maxQueued}))
	srv := httptest.NewUnstartedServer(gql)
	srv.Listener = smallBuffers{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(reg.Close)
	return srv, reg
}

func dialSmall(t *testing.T, srv *httptest.Server) *websocket.Conn {
	t.Helper()
	d := websocket.Dialer{Subprotocols: []string{protoTransportWS}, HandshakeTimeout: 5 * time.Second,
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetReadBuffer(8 << 10)
			}
			return c, err
		}}
	c, _, err := d.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestWebsocketQueueBound: every message a connection queues counts against one byte
// bound; a client that does not read what it asked for (pongs) is closed with 1008 once
// the bound is passed, and never costs more than the bound.
func TestWebsocketQueueBound(t *testing.T) {
	t.Run("UnreadPongsClose1008", func(t *testing.T) {
		srv, _ := queueServer(t, 128<<10)
		c := dialSmall(t, srv)
		ping, _ := json.Marshal(map[string]any{"type": "ping", "payload": map[string]string{"pad": strings.Repeat("x", 60<<10)}})
		overflows := testutil.ToFloat64(queueOverflows)
		const pings = 40 // 2.4 MB of pongs: far past the bound and the sockets' buffers
		for i := range pings {
			if err := c.WriteMessage(websocket.TextMessage, ping); err != nil {
				t.Fatalf("ping %d: %v", i, err)
			}
		}
		time.Sleep(100 * time.Millisecond) // the server reads them all
		pongs := 0
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		var err error
		for {
			var m wsMessage
			if err = c.ReadJSON(&m); err != nil {
				break
			}
			pongs++
		}
		if !websocket.IsCloseError(err, websocket.ClosePolicyViolation) {
			t.Fatalf("after %d pongs: %v, want close 1008", pongs, err)
		}
		if pongs >= pings {
			t.Errorf("got all %d pongs: the bound was never reached", pongs)
		}
		if got := testutil.ToFloat64(queueOverflows) - overflows; got != 1 {
			t.Errorf("queue overflows counted: %v, want 1", got)
		}
	})
	t.Run("LargeMessageAloneIsSent", func(t *testing.T) {
		srv, reg := queueServer(t, 64<<10)
		c := dialSmall(t, srv)
		if err := c.WriteJSON(wsMessage{Type: "connection_init"}); err != nil {
			t.Fatal(err)
		}
		if _, err := readUntil(t, c, "connection_ack"); err != nil {
			t.Fatal(err)
		}
		conns := reg.list()
		if len(conns) != 1 {
			t.Fatalf("open connections: %d, want 1", len(conns))
		}
		// An answer four times the bound, and right behind it its complete: what waits
		// behind the next message is the complete alone.
		big := frame("next", "1", []byte(`{"data":{"name":"`+strings.Repeat("x", 256<<10)+`"}}`))
		conns[0].send(big)
		conns[0].send(frame("complete", "1", nil))
		var next, complete wsMessage
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if err := c.ReadJSON(&next); err != nil || next.Type != "next" {
			t.Fatalf("large answer: %+v, %v", next, err)
		}
		if err := c.ReadJSON(&complete); err != nil || complete.Type != "complete" {
			t.Fatalf("after the large answer: %+v, %v", complete, err)
		}
		if err := c.WriteJSON(wsMessage{Type: "ping"}); err != nil {
			t.Fatal(err)
		}
		if _, err := readUntil(t, c, "pong"); err != nil {
			t.Fatalf("the connection did not survive a large answer: %v", err)
		}
	})
	t.Run("WaitingBytesAreCounted", func(t *testing.T) {
		srv, reg := queueServer(t, 64<<10)
		dialSmall(t, srv) // never reads
		deadline := time.Now().Add(5 * time.Second)
		for len(reg.list()) == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		cn := reg.list()[0]
		chunk := make([]byte, 16<<10)
		var wg sync.WaitGroup
		for range 4 { // the queue is filled from several goroutines at once, as the hub and answers do
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 200 {
					cn.send(chunk)
				}
			}()
		}
		wg.Wait()
		cn.mu.Lock()
		waiting, closed := cn.queuedBytes, cn.closed
		cn.mu.Unlock()
		if !closed || waiting > 64<<10 {
			t.Fatalf("after 12.8 MB sent to a client that does not read: closed %v, %d bytes waiting; want closed, at most 64 KiB", closed, waiting)
		}
	})
}
