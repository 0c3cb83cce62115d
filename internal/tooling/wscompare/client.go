package wscompare

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// crowd is the watchers of one server: gorilla clients, each read by a goroutine of its
// own that counts whole messages and throws their bytes away.
type crowd struct {
	conns    []*websocket.Conn
	messages atomic.Int64
	size     atomic.Int64 // payload bytes of the last message read
	dropped  atomic.Int64 // connections that ended before close
	closing  atomic.Bool
	wg       sync.WaitGroup
}

// seatMapQuery is the subscription the seatflow server's watchers make: the on-sale
// page's selection.
const seatMapQuery = `subscription($id: ID!) { seatMap(showtimeId: $id) { kind fromVersion version seats { seat { id } status } } }`

// connect opens n watchers of url, 64 at a time; graphql subscribes each to the seat
// map (graphql-transport-ws) as a browser would.
func connect(ctx context.Context, url string, graphql bool, n int) (*crowd, error) {
	c := &crowd{conns: make([]*websocket.Conn, n)}
	d := websocket.Dialer{HandshakeTimeout: 30 * time.Second, ReadBufferSize: 4096, WriteBufferSize: 1024}
	if graphql {
		d.Subprotocols = []string{"graphql-transport-ws"}
	}
	var (
		next  atomic.Int64
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				ws, err := dial(ctx, &d, url, graphql)
				if err != nil {
					mu.Lock()
					first = fmt.Errorf("watcher %d: %w", i, err)
					mu.Unlock()
					next.Store(int64(n))
					return
				}
				c.conns[i] = ws
			}
		}()
	}
	wg.Wait()
	for _, ws := range c.conns {
		if ws != nil {
			c.wg.Add(1)
			go c.read(ws)
		}
	}
	if first != nil {
		c.close()
		return nil, first
	}
	return c, nil
}

func dial(ctx context.Context, d *websocket.Dialer, url string, graphql bool) (*websocket.Conn, error) {
	ws, _, err := d.DialContext(ctx, url, nil)
	if err != nil || !graphql {
		return ws, err
	}
	_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	if err := ws.WriteJSON(map[string]any{"type": "connection_init"}); err != nil {
		ws.Close()
		return nil, err
	}
	var ack struct{ Type string }
	if err := ws.ReadJSON(&ack); err != nil || ack.Type != "connection_ack" {
		ws.Close()
		return nil, fmt.Errorf("connection_init answered %q (%v)", ack.Type, err)
	}
	_ = ws.SetReadDeadline(time.Time{})
	err = ws.WriteJSON(map[string]any{"type": "subscribe", "id": "1", "payload": map[string]any{
		"query": seatMapQuery, "variables": map[string]any{"id": showtimeID}}})
	if err != nil {
		ws.Close()
		return nil, err
	}
	return ws, nil
}

func (c *crowd) read(ws *websocket.Conn) {
	defer c.wg.Done()
	for {
		_, r, err := ws.NextReader()
		if err != nil {
			if !c.closing.Load() {
				c.dropped.Add(1)
			}
			return
		}
		n, err := io.Copy(io.Discard, r)
		if err != nil {
			continue
		}
		c.size.Store(n)
		c.messages.Add(1)
	}
}

func (c *crowd) received() int64 { return c.messages.Load() }
func (c *crowd) lastSize() int   { return int(c.size.Load()) }
func (c *crowd) lost() int       { return int(c.dropped.Load()) }

// await waits until the watchers have received want messages in all; false after wait.
func (c *crowd) await(ctx context.Context, want int64, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for c.received() < want {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(200 * time.Microsecond)
	}
	return true
}

func (c *crowd) close() {
	c.closing.Store(true)
	for _, ws := range c.conns {
		if ws != nil {
			ws.Close()
		}
	}
	c.wg.Wait()
}
