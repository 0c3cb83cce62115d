package wstransport

import (
	"runtime"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestWebsocketIdleConnectionsHoldNoGoroutine: on Linux the registry's poller reads a
// connection only when its client has sent something, so connections that wait hold no
// goroutine between messages, and every message is still read and answered.
func TestWebsocketIdleConnectionsHoldNoGoroutine(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("connections are polled on Linux only; elsewhere each has a read loop")
	}
	const n = 200
	srv, _, reg := websocketServer(t)
	reg.Start()
	before := runtime.NumGoroutine()
	conns := make([]*websocket.Conn, n)
	for i := range conns {
		c, _, err := dialWebsocket(t, srv, protoTransportWS, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.WriteJSON(wsMessage{Type: "connection_init"}); err != nil {
			t.Fatal(err)
		}
		if _, err := readUntil(t, c, "connection_ack"); err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	// The dialer's read side is the test's (none runs); what grows is the server's.
	deadline := time.Now().Add(5 * time.Second)
	grown := runtime.NumGoroutine() - before
	for grown > n/10 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // the handshakes' and the reads' goroutines end
		grown = runtime.NumGoroutine() - before
	}
	if grown > n/10 {
		t.Errorf("%d idle connections: %d more goroutines, want at most %d", n, grown, n/10)
	}
	for i, c := range conns {
		if err := c.WriteJSON(wsMessage{Type: "ping"}); err != nil {
			t.Fatal(err)
		}
		if _, err := readUntil(t, c, "pong"); err != nil {
			t.Fatalf("connection %d after idling: %v", i, err)
		}
	}
}

// TestWebsocketMessagesInOneSegment: messages that reach the server in one read (one TCP
// segment) are all answered, though the socket shows nothing more once the first is read.
func TestWebsocketMessagesInOneSegment(t *testing.T) {
	srv, _, _ := websocketServer(t)
	c, _, err := dialWebsocket(t, srv, protoTransportWS, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Client frames, final, text, masked with a zero key (RFC 6455 5.3 allows any key).
	frame := func(payload string) []byte {
		return append([]byte{0x81, 0x80 | byte(len(payload)), 0, 0, 0, 0}, payload...)
	}
	var three []byte
	three = append(three, frame(`{"type":"connection_init"}`)...)
	three = append(three, frame(`{"type":"ping","payload":{"n":1}}`)...)
	three = append(three, frame(`{"type":"ping","payload":{"n":2}}`)...)
	if _, err := c.NetConn().Write(three); err != nil {
		t.Fatal(err)
	}
	if _, err := readUntil(t, c, "connection_ack"); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 2; n++ {
		m, err := readUntil(t, c, "pong")
		if err != nil {
			t.Fatalf("pong %d: %v", n, err)
		}
		if got := m.Payload["n"]; got != float64(n) {
			t.Errorf("pong %d carries %v", n, got)
		}
	}
}
