package wstransport

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/testserver"
	"github.com/gorilla/websocket"

	"seatflow/internal/tooling/testenv"
)

type ctxUpgradeExpiry struct{}

// TestWebsocketUpgradeTokenExpires: a token of the upgrade's Authorization header ends
// the connection (4403) when it expires, as one of connection_init does; a token of
// connection_init replaces it, with its own expiry.
func TestWebsocketUpgradeTokenExpires(t *testing.T) {
	clock := testenv.NewClock(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	headerExpiry := clock.Now().Add(time.Minute)
	reg := &Registry{Tick: 10 * time.Millisecond}
	gql := testserver.New()
	gql.AddTransport(New(Config{Registry: reg, Now: clock.Now,
		Auth: func(ctx context.Context, token string) (context.Context, time.Time, error) {
			if token != "good" {
				return nil, time.Time{}, errors.New("bad token")
			}
			return ctx, clock.Now().Add(time.Hour), nil
		},
		UpgradeExpiry: func(ctx context.Context) time.Time {
			exp, _ := ctx.Value(ctxUpgradeExpiry{}).(time.Time)
			return exp
		},
	}))
	// As the HTTP middleware does: the header's token read into the request's context.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer header-token" {
			r = r.WithContext(context.WithValue(r.Context(), ctxUpgradeExpiry{}, headerExpiry))
		}
		gql.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(reg.Close)
	header := http.Header{"Authorization": {"Bearer header-token"}}

	open := func(t *testing.T, init map[string]any) *websocket.Conn {
		t.Helper()
		c, _, err := dialWebsocket(t, srv, protoTransportWS, header)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.WriteJSON(wsMessage{Type: "connection_init", Payload: init}); err != nil {
			t.Fatal(err)
		}
		if _, err := readUntil(t, c, "connection_ack"); err != nil {
			t.Fatal(err)
		}
		return c
	}
	headerOnly := open(t, nil)
	initToken := open(t, map[string]any{"Authorization": "Bearer good"})
	clock.Advance(2 * time.Minute) // past the header's token, not the init's

	if _, err := readUntil(t, headerOnly, "never"); !websocket.IsCloseError(err, closeForbidden) {
		t.Errorf("header token expired: got %v, want close %d", err, closeForbidden)
	}
	if err := initToken.WriteJSON(wsMessage{Type: "ping"}); err != nil {
		t.Fatal(err)
	}
	if _, err := readUntil(t, initToken, "pong"); err != nil {
		t.Errorf("a connection_init token valid for an hour: %v, want the connection open", err)
	}
	clock.Advance(time.Hour)
	if _, err := readUntil(t, initToken, "never"); !websocket.IsCloseError(err, closeForbidden) {
		t.Errorf("connection_init token expired: got %v, want close %d", err, closeForbidden)
	}
}
