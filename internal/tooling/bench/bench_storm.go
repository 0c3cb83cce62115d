package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"seatflow"
	"seatflow/internal/tooling/gqlclient"
)

// Storm settings: watchers, how long, the rate of holds on the show, and how often a
// watcher leaves and a new one arrives.
const (
	stormWatchers = 2000
	stormFor      = 10 * time.Second
	stormHolds    = 200 // per second
	stormChurn    = 5 * time.Millisecond
)

// stormWatcher follows one subscription as a front end would: its own copy of the map,
// built from the SNAPSHOT and the DELTAs after it by the clients' rule (seatCopy).
type stormWatcher struct {
	conn *websocket.Conn
	mu   sync.Mutex
	copy seatCopy
	gaps int // DELTAs that did not follow the copy with no SNAPSHOT in between
	done chan struct{}
}

func (w *stormWatcher) read() {
	defer close(w.done)
	for {
		_, msg, err := w.conn.ReadMessage()
		if err != nil {
			return
		}
		ev := scanSeatEvent(msg)
		switch ev.typ {
		case gqlclient.TypePing:
			_ = w.conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"pong"}`))
		case gqlclient.TypeNext:
			w.mu.Lock()
			if w.copy.apply(ev) == eventGap {
				w.gaps++
			}
			w.mu.Unlock()
		}
	}
}

func dialStorm(ctx context.Context, wsURL, query, show string) (*stormWatcher, error) {
	d := websocket.Dialer{Subprotocols: []string{gqlclient.Protocol}, HandshakeTimeout: 30 * time.Second,
		ReadBufferSize: 1024, WriteBufferSize: 1024}
	conn, _, err := d.DialContext(ctx, wsURL, nil)
	if err != nil {
		return nil, err
	}
	_ = conn.WriteJSON(gqlclient.Message{Type: gqlclient.TypeConnectionInit})
	if err := conn.WriteJSON(gqlclient.Message{ID: "1", Type: gqlclient.TypeSubscribe, Payload: gqlclient.Request{
		Query: query, Variables: map[string]any{"id": show}}}); err != nil {
		conn.Close()
		return nil, err
	}
	w := &stormWatcher{conn: conn, done: make(chan struct{})}
	go w.read()
	return w, nil
}

// benchStorm: watchers come and go while seats of their showtime change at stormHolds a
// second; at the end every watcher's own map must equal the real one, and no watcher may
// have seen a version skipped without a SNAPSHOT.
func (b *benchEnv) benchStorm(ctx context.Context, w io.Writer, show benchShow, holder string) error {
	child, err := b.startChildServer(ctx)
	if err != nil {
		return err
	}
	defer child.Stop()
	wsURL := gqlclient.WebsocketURL(child.URL)
	client := newBenchClient(child.URL, 16)
	withFrom, err := hasFromVersion(ctx, client)
	if err != nil {
		return err
	}
	query := seatMapSubscription(withFrom)
	var mu sync.Mutex
	var live []*stormWatcher
	for range stormWatchers {
		sw, err := dialStorm(ctx, wsURL, query, show.ID)
		if err != nil {
			return fmt.Errorf("storm: dial: %w", err)
		}
		live = append(live, sw)
	}
	progress("bench:   storm: %d watchers subscribed; holds at %d/s with churn every %s for %s", stormWatchers, stormHolds, stormChurn, stormFor)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var holds, holdErrs, churned atomic.Int64
	var gapsGone atomic.Int64 // gaps of watchers that left
	// Holds: each takes a random seat and, a moment later, gives it back.
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Second / stormHolds)
		defer tick.Stop()
		rng := rand.New(rand.NewPCG(1, 2))
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			seat := show.SeatIDs[rng.IntN(len(show.SeatIDs))]
			go func() {
				r, err := client.Send(ctx, holder, gqlclient.Body(benchHoldQ, map[string]any{"in": map[string]any{"showtimeId": show.ID,
					"seatIds": []string{seat}, "idempotencyKey": fmt.Sprintf("storm-%d", i)}}))
				holds.Add(1)
				if err != nil || (r.Err() != nil && r.Code() != seatflow.ESEATSUNAVAILABLE && r.Code() != seatflow.ELIMIT) {
					holdErrs.Add(1)
					return
				}
				var out struct{ HoldSeats struct{ ID string } }
				if r.Err() == nil && json.Unmarshal(r.Data, &out) == nil {
					_, _ = client.Send(ctx, holder, gqlclient.Body(`mutation($id: ID!) { cancelOrder(orderId: $id) { id } }`, map[string]any{"id": out.HoldSeats.ID}))
				}
			}()
		}
	}()
	// Churn: a watcher leaves, a new one arrives.
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(stormChurn)
		defer tick.Stop()
		rng := rand.New(rand.NewPCG(3, 4))
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			mu.Lock()
			i := rng.IntN(len(live))
			old := live[i]
			mu.Unlock()
			old.conn.Close()
			<-old.done
			old.mu.Lock()
			gapsGone.Add(int64(old.gaps))
			old.mu.Unlock()
			sw, err := dialStorm(ctx, wsURL, query, show.ID)
			if err != nil {
				continue
			}
			mu.Lock()
			live[i] = sw
			mu.Unlock()
			churned.Add(1)
		}
	}()
	time.Sleep(stormFor)
	close(stop)
	wg.Wait()
	time.Sleep(2 * time.Second) // the last holds and cancels finish; their deltas arrive

	// The real map, then every watcher's own, once it has caught up with the real version.
	var real struct {
		SeatMap struct {
			Version int
			Seats   []struct {
				Seat   struct{ ID string }
				Status string
			}
		}
	}
	if err := client.Do(ctx, "", `query($id: ID!) { seatMap(showtimeId: $id) { version seats { seat { id } status } } }`,
		map[string]any{"id": show.ID}, &real); err != nil {
		return err
	}
	want := map[string]string{}
	for _, s := range real.SeatMap.Seats {
		want[s.Seat.ID] = s.Status
	}
	mismatched, behind, gaps := 0, 0, int(gapsGone.Load())
	deadline := time.Now().Add(20 * time.Second)
	for _, sw := range live {
		for {
			sw.mu.Lock()
			ver := sw.copy.version
			sw.mu.Unlock()
			if ver >= real.SeatMap.Version || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		sw.mu.Lock()
		if sw.copy.version < real.SeatMap.Version || !sw.copy.synced {
			behind++
		} else if fmt.Sprint(sw.copy.seats) != fmt.Sprint(want) {
			mismatched++
		}
		gaps += sw.gaps
		sw.mu.Unlock()
		sw.conn.Close()
	}
	snaps := child.metrics(`seatflow_live_snapshots_sent_total{reason="slow"}`, `seatflow_live_snapshots_sent_total{reason="gap"}`)
	progress("bench:   storm: %d holds (%d failed), %d watchers replaced; at the end %d mismatched, %d behind, %d unexplained gaps",
		holds.Load(), holdErrs.Load(), churned.Load(), mismatched, behind, gaps)

	fmt.Fprintf(w, "\n### Storm\n\n")
	fmt.Fprintf(w, "%d watchers of one showtime (a child server) while seats change at %d holds per second (each hold cancelled right after) and, every %s, one watcher leaves and a new one arrives, for %s. Each watcher keeps its own map from the SNAPSHOT and the DELTAs, as a front end does: a SNAPSHOT replaces the map whatever its version; a DELTA applies only to the map at its `fromVersion` (%s), and is otherwise an unexplained gap, after which the watcher waits for a SNAPSHOT (a slow watcher is resynced with one, which explains the gap it had). At the end, once each has reached the real version, its map is compared with the real seat map.\n",
		stormWatchers, stormHolds, stormChurn, stormFor, fromVersionRule(withFrom))
	table(w, []string{"measure", "value", "target", "result"}, [][]string{
		{"holds sent (failed)", fmt.Sprintf("%d (%d)", holds.Load(), holdErrs.Load()), "", ""},
		{"watchers replaced during the storm", strconv.FormatInt(churned.Load(), 10), "", ""},
		{"resync snapshots sent (slow / gap)", fmt.Sprintf("%.0f / %.0f", snaps[`seatflow_live_snapshots_sent_total{reason="slow"}`], snaps[`seatflow_live_snapshots_sent_total{reason="gap"}`]), "", ""},
		{"watchers whose final map differs from the real one", strconv.Itoa(mismatched), "0", verdict(mismatched == 0)},
		{"watchers that never reached the final version", strconv.Itoa(behind), "0", verdict(behind == 0)},
		{"unexplained version gaps", strconv.Itoa(gaps), "0", verdict(gaps == 0)},
	})
	return nil
}
