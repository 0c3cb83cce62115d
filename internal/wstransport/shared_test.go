package wstransport_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"seatflow/internal/nodeid"
)

// TestWebsocketSharedFrames: watchers of one showtime asking the same selection receive
// byte-identical DELTAs rendered once for all of them; watchers asking another selection
// get a rendering of their own, once for all of them too. Nothing is rendered per
// watcher: a change reaching four watchers in two selections is rendered twice.
func TestWebsocketSharedFrames(t *testing.T) {
	w := newSlowWorld(t, time.Minute)
	const (
		full  = "subscription($id: ID!) { seatMap(showtimeId: $id) { kind fromVersion version seats { seat { id } status } } }"
		short = "subscription($id: ID!) { seatMap(showtimeId: $id) { version seats { status } } }"
	)
	var watchers []*websocket.Conn
	for _, q := range []string{full, full, short, short} {
		watchers = append(watchers, w.subscribe(t, q))
	}
	renders := metric(t, "seatflow_websocket_seatmap_renders_total", nil)
	w.change(t, 1)
	frames := make([][]byte, len(watchers))
	for i, c := range watchers {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, b, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("watcher %d: %v", i, err)
		}
		frames[i] = b
	}
	if !bytes.Equal(frames[0], frames[1]) || !bytes.Equal(frames[2], frames[3]) {
		t.Errorf("same selection, different bytes:\n%s\n%s\n%s\n%s", frames[0], frames[1], frames[2], frames[3])
	}
	if bytes.Equal(frames[0], frames[2]) || !bytes.Contains(frames[0], []byte(`"kind":"DELTA"`)) ||
		bytes.Contains(frames[2], []byte(`"kind"`)) {
		t.Errorf("each selection's own fields:\n%s\n%s", frames[0], frames[2])
	}
	if got := metric(t, "seatflow_websocket_seatmap_renders_total", nil) - renders; got != 2 {
		t.Errorf("renderings of one change for 4 watchers in 2 selections: %v, want 2", got)
	}
}

// subscribe opens a watcher of the world's showtime with query and reads its SNAPSHOT.
func (w *slowWorld) subscribe(t *testing.T, query string) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.DefaultDialer.Dial(w.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for _, m := range []map[string]any{{"type": "connection_init"},
		{"id": "1", "type": "start", "payload": map[string]any{"query": query,
			"variables": map[string]any{"id": nodeid.Encode(nodeid.Showtime, w.show)}}}} {
		if err := c.WriteJSON(m); err != nil {
			t.Fatal(err)
		}
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, b, err := c.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(`"type":"data"`)) {
			return c // the SNAPSHOT (the legacy protocol: no pings to skip)
		}
	}
}
