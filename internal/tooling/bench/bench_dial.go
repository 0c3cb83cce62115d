package bench

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"seatflow/internal/tooling/gqlclient"
)

// dialSeatMap connects one graphql-transport-ws watcher (anonymous, small buffers, with
// permessage-deflate offered when compress) and subscribes it to query for showtime show
// (subscription id "1"). It returns once the first SNAPSHOT arrived, with that message.
func dialSeatMap(ctx context.Context, wsURL, query, show string, compress bool) (*websocket.Conn, []byte, error) {
	d := websocket.Dialer{Subprotocols: []string{gqlclient.Protocol}, HandshakeTimeout: 30 * time.Second,
		ReadBufferSize: 1024, WriteBufferSize: 1024, EnableCompression: compress}
	conn, _, err := d.DialContext(ctx, wsURL, nil)
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (*websocket.Conn, []byte, error) { conn.Close(); return nil, nil, err }
	conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	if err := conn.WriteJSON(gqlclient.Message{Type: gqlclient.TypeConnectionInit, Payload: map[string]any{}}); err != nil {
		return fail(err)
	}
	if err := conn.WriteJSON(gqlclient.Message{ID: "1", Type: gqlclient.TypeSubscribe, Payload: gqlclient.Request{
		Query: query, Variables: map[string]any{"id": show}}}); err != nil {
		return fail(err)
	}
	for acked := false; ; {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			return fail(err)
		}
		switch {
		case bytes.Contains(msg, []byte(`"connection_ack"`)):
			acked = true
		case bytes.Contains(msg, []byte(`"SNAPSHOT"`)) && acked:
			conn.SetReadDeadline(time.Time{})
			return conn, msg, nil
		case bytes.Contains(msg, []byte(`"error"`)):
			return fail(fmt.Errorf("subscribe: %.200s", msg))
		}
	}
}

// dialMany runs dial need times from dialers goroutines at once and stops at the first
// error, which it returns with the number of the dial that failed.
func dialMany(ctx context.Context, need, dialers int, dial func(ctx context.Context) error) error {
	var next, done atomic.Int64
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for range dialers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(need) && ctx.Err() == nil {
				if err := dial(ctx); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("connect watcher %d: %w", done.Load()+1, err)
					}
					mu.Unlock()
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return firstErr
}
