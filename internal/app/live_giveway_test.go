package app

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestHoldsStayFastDuringPasses: a buyer's hold is never queued behind the live fan-out.
// 4,000 watchers follow a showtime; in each round staff block a seat, which starts a pass
// writing a frame to every watcher, and a buyer holds another seat at once, with real
// MySQL and Redis behind it. The hold is answered long before the pass has reached every
// watcher (median of the rounds): it does not wait for the frames, and the writers give
// way to it while it runs (internal/wstransport/share.go).
func TestHoldsStayFastDuringPasses(t *testing.T) {
	const (
		watchers = 4000
		rounds   = 12
	)
	// Every watcher comes from one address without a token: one session to the caps.
	a := newTestApp(t, "-holds-per-minute", "0", "-ws-max-conns-per-session", "0")
	hall := a.createHall("Hall 1", 10, 20)
	show := a.createShowtime(a.createMovie("Dune", 155), hall, testNow.Add(30*time.Hour))
	seats := a.openSales(show)

	// The watchers: each reads its SNAPSHOT, then counts the events that follow.
	var ready sync.WaitGroup
	var frames, subscribed atomic.Int64
	var readers sync.WaitGroup
	t.Cleanup(readers.Wait) // after the connections close
	url := "ws" + strings.TrimPrefix(a.srv.URL, "http") + "/query"
	dial := make(chan struct{}, 16)
	var dialErr atomic.Value
	for range watchers {
		dial <- struct{}{}
		ready.Add(1)
		readers.Add(1)
		go func() {
			defer readers.Done()
			conn, err := watcherConn(url, show)
			<-dial
			if err != nil {
				dialErr.CompareAndSwap(nil, err)
				ready.Done()
				return
			}
			t.Cleanup(func() { conn.Close() })
			snapshot := false
			for {
				_, msg, err := conn.ReadMessage()
				if err != nil {
					if !snapshot {
						ready.Done()
					}
					return
				}
				if !bytes.Contains(msg, []byte(`"type":"next"`)) {
					continue
				}
				if !snapshot {
					snapshot = true
					subscribed.Add(1)
					ready.Done()
					continue
				}
				frames.Add(1)
			}
		}()
	}
	ready.Wait()
	if err := dialErr.Load(); err != nil {
		t.Fatalf("a watcher: %v", err)
	}
	if n := subscribed.Load(); n != watchers {
		t.Fatalf("%d watchers had their SNAPSHOT, want %d", n, watchers)
	}

	var holds, passes []time.Duration
	for i := range rounds {
		time.Sleep(250 * time.Millisecond) // a quiet showtime: the change goes at once
		f0 := frames.Load()
		a.must(a.admin, blockQ, blockVars(show, seats[i:i+1], "staff"), nil)
		changed := time.Now()
		a.must(a.token("buyer-"+strconv.Itoa(i), "customer"), holdQ, holdVars(show, seats[100+i:101+i], "k"), nil)
		holds = append(holds, time.Since(changed))
		for frames.Load() < f0+watchers {
			if time.Since(changed) > 30*time.Second {
				t.Fatalf("round %d: %d of %d watchers had the change after 30 s", i, frames.Load()-f0, watchers)
			}
			time.Sleep(time.Millisecond)
		}
		passes = append(passes, time.Since(changed))
	}
	slices.Sort(holds)
	slices.Sort(passes)
	hold, pass := holds[rounds/2], passes[rounds/2]
	t.Logf("median hold %s, median pass over %d watchers %s (holds %v)", hold, watchers, pass, holds)
	if hold >= pass/2 {
		t.Fatalf("median hold %s during passes of %s over %d watchers: want it answered within half a pass", hold, pass, watchers)
	}
}

// watcherConn opens a graphql-transport-ws connection subscribed to show's seat map.
func watcherConn(url, show string) (*websocket.Conn, error) {
	d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}, HandshakeTimeout: 30 * time.Second}
	conn, _, err := d.Dial(url, nil)
	if err != nil {
		return nil, err
	}
	for _, m := range []map[string]any{{"type": "connection_init"}, {"id": "1", "type": "subscribe", "payload": map[string]any{
		"query":     `subscription($id: ID!) { seatMap(showtimeId: $id) { version seats { status } } }`,
		"variables": map[string]any{"id": show}}}} {
		if err := conn.WriteJSON(m); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return conn, nil
}
