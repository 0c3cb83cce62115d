package wstransport

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/testserver"
	"github.com/gorilla/websocket"
)

type ctxUser struct{}

// websocketServer serves gqlgen's schema-less test server through websocketTransport;
// the only valid token is "good".
func websocketServer(t *testing.T, origins ...string) (*httptest.Server, *testserver.TestServer, *Registry) {
	t.Helper()
	conns := &Registry{}
	gql := testserver.New()
	gql.AddTransport(New(Config{
		AllowedOrigins: origins,
		Auth: func(ctx context.Context, token string) (context.Context, time.Time, error) {
			if token != "good" {
				return nil, time.Time{}, errors.New("bad token")
			}
			return context.WithValue(ctx, ctxUser{}, "u1"), time.Now().Add(time.Hour), nil
		},
		Registry: conns,
	}))
	srv := httptest.NewServer(gql)
	t.Cleanup(srv.Close)
	t.Cleanup(conns.Close)
	return srv, gql, conns
}

func dialWebsocket(t *testing.T, srv *httptest.Server, protocol string, header http.Header) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	d := websocket.Dialer{Subprotocols: []string{protocol}, HandshakeTimeout: 5 * time.Second}
	c, resp, err := d.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), header)
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, resp, err
}

type wsMessage struct {
	Type    string         `json:"type"`
	ID      string         `json:"id,omitempty"`
	Payload map[string]any `json:"payload,omitempty"`
}

// readUntil reads messages until one of type want (skipping keep-alives and pings).
func readUntil(t *testing.T, c *websocket.Conn, want string) (wsMessage, error) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		var m wsMessage
		if err := c.ReadJSON(&m); err != nil {
			return m, err
		}
		if m.Type == want {
			return m, nil
		}
	}
}

func TestWebsocketInit(t *testing.T) {
	srv, gql, _ := websocketServer(t)
	for _, protocol := range []string{"graphql-transport-ws", "graphql-ws"} {
		t.Run(protocol+"/InvalidTokenClosesWith4403", func(t *testing.T) {
			c, _, err := dialWebsocket(t, srv, protocol, nil)
			if err != nil {
				t.Fatal(err)
			}
			_ = c.WriteJSON(wsMessage{Type: "connection_init", Payload: map[string]any{"Authorization": "Bearer nope"}})
			_, err = readUntil(t, c, "connection_ack")
			if !websocket.IsCloseError(err, closeForbidden) {
				t.Fatalf("got %v, want close %d", err, closeForbidden)
			}
		})
		t.Run(protocol+"/NotBearerClosesWith4403", func(t *testing.T) {
			c, _, err := dialWebsocket(t, srv, protocol, nil)
			if err != nil {
				t.Fatal(err)
			}
			_ = c.WriteJSON(wsMessage{Type: "connection_init", Payload: map[string]any{"authorization": "Basic abc"}})
			if _, err = readUntil(t, c, "connection_ack"); !websocket.IsCloseError(err, closeForbidden) {
				t.Fatalf("got %v, want close %d", err, closeForbidden)
			}
		})
		if protocol == "graphql-ws" {
			// The legacy protocol has no close codes of its own: its clients
			// (subscriptions-transport-ws) learn why from connection_error, which must
			// arrive before the close.
			t.Run(protocol+"/InvalidTokenConnectionErrorBeforeClose", func(t *testing.T) {
				c, _, err := dialWebsocket(t, srv, protocol, nil)
				if err != nil {
					t.Fatal(err)
				}
				_ = c.WriteJSON(wsMessage{Type: "connection_init", Payload: map[string]any{"Authorization": "Bearer nope"}})
				m, err := readUntil(t, c, "connection_error")
				if err != nil || m.Payload["message"] != "invalid or expired token" {
					t.Fatalf("got %+v, %v; want connection_error \"invalid or expired token\"", m, err)
				}
				if _, err = readUntil(t, c, "connection_ack"); !websocket.IsCloseError(err, closeForbidden) {
					t.Fatalf("after connection_error: got %v, want close %d", err, closeForbidden)
				}
			})
			t.Run(protocol+"/ProtocolErrorConnectionErrorBeforeClose", func(t *testing.T) {
				c, _, err := dialWebsocket(t, srv, protocol, nil)
				if err != nil {
					t.Fatal(err)
				}
				_ = c.WriteMessage(websocket.TextMessage, []byte("not json"))
				m, err := readUntil(t, c, "connection_error")
				if err != nil || m.Payload["message"] != "invalid message" {
					t.Fatalf("got %+v, %v; want connection_error \"invalid message\"", m, err)
				}
				if _, err = readUntil(t, c, "connection_ack"); !websocket.IsCloseError(err, websocket.CloseProtocolError) {
					t.Fatalf("after connection_error: got %v, want close %d", err, websocket.CloseProtocolError)
				}
			})
		}
		for name, payload := range map[string]map[string]any{
			"Anonymous":  nil,
			"ValidToken": {"AUTHORIZATION": "bearer good"},
		} {
			t.Run(protocol+"/"+name+"Subscribes", func(t *testing.T) {
				c, _, err := dialWebsocket(t, srv, protocol, nil)
				if err != nil {
					t.Fatal(err)
				}
				_ = c.WriteJSON(wsMessage{Type: "connection_init", Payload: payload})
				if _, err := readUntil(t, c, "connection_ack"); err != nil {
					t.Fatal(err)
				}
				start, data := "subscribe", "next"
				if protocol == "graphql-ws" {
					start, data = "start", "data"
				}
				_ = c.WriteJSON(wsMessage{Type: start, ID: "1", Payload: map[string]any{"query": "subscription { name }"}})
				go func() {
					time.Sleep(50 * time.Millisecond)
					gql.SendNextSubscriptionMessage()
				}()
				m, err := readUntil(t, c, data)
				if err != nil || m.ID != "1" {
					t.Fatalf("got %+v, %v; want %s for id 1", m, err, data)
				}
			})
		}
	}
}

func TestWebsocketOrigin(t *testing.T) {
	srv, _, _ := websocketServer(t, "https://tickets.example")
	if _, resp, err := dialWebsocket(t, srv, "graphql-transport-ws", http.Header{"Origin": {"https://evil.example"}}); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign origin: got %v, want 403", err)
	}
	if _, _, err := dialWebsocket(t, srv, "graphql-transport-ws", http.Header{"Origin": {"https://tickets.example"}}); err != nil {
		t.Errorf("allowed origin: %v", err)
	}
	same, _, _ := websocketServer(t)
	if _, _, err := dialWebsocket(t, same, "graphql-transport-ws", http.Header{"Origin": {same.URL}}); err != nil {
		t.Errorf("same origin with an empty list: %v", err)
	}
	any, _, _ := websocketServer(t, "*")
	if _, _, err := dialWebsocket(t, any, "graphql-transport-ws", http.Header{"Origin": {"https://evil.example"}}); err != nil {
		t.Errorf("any origin with *: %v", err)
	}
}

func TestWebsocketCloseAllSendsGoingAway(t *testing.T) {
	srv, _, conns := websocketServer(t)
	var clients []*websocket.Conn
	for _, protocol := range []string{"graphql-transport-ws", "graphql-ws"} {
		c, _, err := dialWebsocket(t, srv, protocol, nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.WriteJSON(wsMessage{Type: "connection_init"})
		if _, err := readUntil(t, c, "connection_ack"); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	if got := len(conns.list()); got != 2 {
		t.Fatalf("open connections: got %d, want 2", got)
	}
	done := make(chan struct{})
	go func() {
		conns.CloseAll(websocket.CloseGoingAway, "server shutting down", 5*time.Second)
		close(done)
	}()
	for _, c := range clients {
		// gorilla answers the close frame itself while reading.
		if _, err := readUntil(t, c, "never"); !websocket.IsCloseError(err, websocket.CloseGoingAway) {
			t.Errorf("got %v, want close 1001", err)
		}
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("closeAll did not return")
	}
	if got := len(conns.list()); got != 0 {
		t.Errorf("open connections after closeAll: got %d, want 0", got)
	}
}

func TestWebsocketUnansweredConnectionsAreDropped(t *testing.T) {
	conns := &Registry{}
	gql := testserver.New()
	gql.AddTransport(New(Config{InitTimeout: 200 * time.Millisecond, Registry: conns}))
	srv := httptest.NewServer(gql)
	t.Cleanup(srv.Close)
	t.Cleanup(conns.Close)

	t.Run("NoConnectionInit", func(t *testing.T) {
		c, _, err := dialWebsocket(t, srv, "graphql-transport-ws", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := readUntil(t, c, "never"); !websocket.IsCloseError(err, closeInitTimeout) {
			t.Errorf("got %v, want close %d (graphql-transport-ws: initialisation timeout)", err, closeInitTimeout)
		}
	})
	t.Run("InitPayloadNotAnObject", func(t *testing.T) {
		c, _, err := dialWebsocket(t, srv, "graphql-transport-ws", nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.WriteMessage(websocket.TextMessage, []byte(`{"type":"connection_init","payload":5}`))
		if _, err := readUntil(t, c, "never"); err == nil || errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "timeout") {
			t.Errorf("got %v, want the connection dropped", err)
		}
	})
	deadline := time.Now().Add(3 * time.Second)
	for len(conns.list()) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := len(conns.list()); got != 0 {
		t.Errorf("open connections: got %d, want 0", got)
	}
}

// TestWebsocketKeepAlives: each protocol gets its own keep-alive, and only that one.
func TestWebsocketKeepAlives(t *testing.T) {
	gql := testserver.New()
	// Pings leave the client 2 intervals to answer: generous, for a loaded machine under -race.
	reg := &Registry{Tick: 20 * time.Millisecond}
	gql.AddTransport(New(Config{KeepAlive: 100 * time.Millisecond, PingPong: 300 * time.Millisecond,
		Registry: reg}))
	srv := httptest.NewServer(gql)
	t.Cleanup(srv.Close)
	t.Cleanup(reg.Close)
	for protocol, want := range map[string]struct{ keepAlive, never string }{
		"graphql-ws":           {"ka", "ping"},
		"graphql-transport-ws": {"ping", "pong"},
	} {
		c, _, err := dialWebsocket(t, srv, protocol, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.WriteJSON(wsMessage{Type: "connection_init"}); err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		for seen[want.keepAlive] < 2 {
			var m wsMessage
			if err := c.ReadJSON(&m); err != nil {
				t.Fatalf("%s: %v (seen %v)", protocol, err, seen)
			}
			seen[m.Type]++
			if m.Type == "ping" {
				_ = c.WriteJSON(wsMessage{Type: "pong"})
			}
		}
		if seen[want.never] > 0 {
			t.Errorf("%s: got %d %q messages besides its keep-alive %q", protocol, seen[want.never], want.never, want.keepAlive)
		}
	}
}
