package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"seatflow/internal/tooling/gqlclient"
)

// mapProbe is a watcher that keeps its own seat map (seatCopy) and notes when each seat
// first showed HELD in it. On a gap, or when the server ends its subscription, it does
// what a front end does: it subscribes again (a new id) and waits for the SNAPSHOT.
type mapProbe struct {
	conn  *websocket.Conn
	query string
	show  string

	mu       sync.Mutex
	sub      int // number of the subscription in force (its graphql-transport-ws id)
	copy     seatCopy
	heldAt   map[string]time.Time
	frames   int       // next messages
	lastAt   time.Time // when the newest next message came
	gaps     int
	stale    int
	ended    int // subscriptions the server ended (complete or error)
	resubbed int
	endedBy  string // the first message that ended a subscription
	lost     bool   // the connection ended before the bench closed it
	done     chan struct{}
}

// dialProbe connects a probe; its copy starts from the subscription's first SNAPSHOT.
func dialProbe(ctx context.Context, wsURL, query, show string) (*mapProbe, error) {
	conn, snapshot, err := dialSeatMap(ctx, wsURL, query, show, false)
	if err != nil {
		return nil, err
	}
	p := &mapProbe{conn: conn, query: query, show: show, sub: 1, heldAt: map[string]time.Time{}, done: make(chan struct{})}
	p.take(scanSeatEvent(snapshot), time.Now())
	go p.read()
	return p, nil
}

func (p *mapProbe) read() {
	defer close(p.done)
	for {
		_, msg, err := p.conn.ReadMessage()
		now := time.Now()
		if err != nil {
			p.mu.Lock()
			p.lost = true
			p.mu.Unlock()
			return
		}
		ev := scanSeatEvent(msg)
		if ev.typ == gqlclient.TypePing {
			_ = p.conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"pong"}`))
			continue
		}
		p.mu.Lock()
		current := ev.id == strconv.Itoa(p.sub)
		resubscribe := false
		switch {
		case !current:
		case ev.typ == gqlclient.TypeNext:
			resubscribe = p.take(ev, now) == eventGap
		case ev.typ == gqlclient.TypeComplete || ev.typ == gqlclient.TypeError:
			p.ended++
			if p.endedBy == "" {
				p.endedBy = string(msg[:min(len(msg), 200)])
			}
			resubscribe = true
		}
		if resubscribe {
			p.resubscribe(ev.typ == gqlclient.TypeNext)
		}
		p.mu.Unlock()
	}
}

// take applies one event and notes the seats it shows HELD for the first time; mu held
// (or the probe not yet shared).
func (p *mapProbe) take(ev seatEvent, now time.Time) applied {
	p.frames++
	p.lastAt = now
	a := p.copy.apply(ev)
	switch a {
	case eventApplied:
		for _, s := range ev.seats {
			if _, seen := p.heldAt[s[0]]; !seen && s[1] == "HELD" {
				p.heldAt[s[0]] = now
			}
		}
	case eventGap:
		p.gaps++
	case eventStale:
		p.stale++
	}
	return a
}

// resubscribe ends the subscription in force (when the server has not) and starts the
// next; mu held.
func (p *mapProbe) resubscribe(endOld bool) {
	old := strconv.Itoa(p.sub)
	p.sub++
	p.resubbed++
	p.copy.synced = false
	if endOld {
		_ = p.conn.WriteJSON(gqlclient.Message{ID: old, Type: gqlclient.TypeComplete})
	}
	_ = p.conn.WriteJSON(gqlclient.Message{ID: strconv.Itoa(p.sub), Type: gqlclient.TypeSubscribe,
		Payload: gqlclient.Request{Query: p.query, Variables: map[string]any{"id": p.show}}})
}

// frameCounter is a watcher that only counts its next messages and reads the version of
// each from its first bytes: thousands of them share the cores with the server, read by
// one goroutine (bench_rawws.go).
type frameCounter struct {
	c       *rawClient
	frames  atomic.Int32
	version atomic.Int64
	ended   atomic.Bool // the server ended the subscription (complete or error)
	failed  string      // why the subscription was refused, before it was ready
}

// counterHead is how much of a message a frameCounter looks at.
const counterHead = 256

// dialCounter connects a counter and subscribes it; it returns once its SNAPSHOT came.
func dialCounter(ctx context.Context, clients *rawClients, wsURL, query, show string) (*frameCounter, error) {
	c, first, err := dialRaw(ctx, wsURL, gqlclient.Protocol)
	if err != nil {
		return nil, err
	}
	w := &frameCounter{c: c}
	c.onText = w.take
	if err := clients.start(c, first); err != nil {
		c.Close()
		return nil, err
	}
	sub, _ := json.Marshal(gqlclient.Message{ID: "1", Type: gqlclient.TypeSubscribe,
		Payload: gqlclient.Request{Query: query, Variables: map[string]any{"id": show}}})
	if err := c.send(`{"type":"connection_init","payload":{}}`); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.send(string(sub)); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.waitReady(ctx); err != nil {
		c.Close()
		return nil, err
	}
	if w.failed != "" {
		c.Close()
		return nil, fmt.Errorf("subscribe: %s", w.failed)
	}
	return w, nil
}

// take reads one message (on the clients' reading goroutine).
func (w *frameCounter) take(c *rawClient, msg []byte) {
	head := textHead(msg)
	switch {
	case strings.Contains(head, `"type":"next"`):
		select {
		case <-c.ready:
			w.frames.Add(1)
		default:
			if !strings.Contains(head, `"SNAPSHOT"`) {
				return
			}
			defer c.markReady()
		}
		if v := intAfter([]byte(head), `"version":`); v > 0 {
			w.version.Store(int64(v))
		}
	case strings.Contains(head, `"type":"ping"`):
		_ = c.send(`{"type":"pong"}`)
	case hasAny(head, `"type":"complete"`, `"type":"error"`):
		select {
		case <-c.ready:
			w.ended.Store(true)
		default:
			w.failed = string(msg[:min(len(msg), 200)])
			c.markReady()
		}
	}
}

// crowd is the watchers of one on-sale run: the probes and the counters.
type crowd struct {
	mu       sync.Mutex
	probes   []*mapProbe
	counters []*frameCounter
	clients  rawClients // reads the counters
}

// grow connects probes probes, then counters until there are n watchers in all.
func (c *crowd) grow(ctx context.Context, wsURL, query, show string, n, probes int) error {
	err := dialMany(ctx, min(probes, n), fanoutDialers, func(ctx context.Context) error {
		p, err := dialProbe(ctx, wsURL, query, show)
		if err == nil {
			c.mu.Lock()
			c.probes = append(c.probes, p)
			c.mu.Unlock()
		}
		return err
	})
	if err != nil {
		return err
	}
	return dialMany(ctx, n-len(c.probes), fanoutDialers, func(ctx context.Context) error {
		w, err := dialCounter(ctx, &c.clients, wsURL, query, show)
		if err == nil {
			c.mu.Lock()
			c.counters = append(c.counters, w)
			c.mu.Unlock()
		}
		return err
	})
}

// resetFrames starts counting frames from zero (the burst's own).
func (c *crowd) resetFrames() {
	for _, p := range c.probes {
		p.mu.Lock()
		p.frames = 0
		p.mu.Unlock()
	}
	for _, w := range c.counters {
		w.frames.Store(0)
	}
}

// behind counts the watchers still connected and subscribed whose map is older than
// version (a probe waiting for a SNAPSHOT is behind), and those that can no longer
// catch up (ended by the server, or lost).
func (c *crowd) behind(version int) (waiting, gone int) {
	for _, p := range c.probes {
		p.mu.Lock()
		switch {
		case p.lost:
			gone++
		case !p.copy.synced || p.copy.version < version:
			waiting++
		}
		p.mu.Unlock()
	}
	for _, w := range c.counters {
		switch {
		case w.ended.Load() || w.c.lost.Load():
			gone++
		case w.version.Load() < int64(version):
			waiting++
		}
	}
	return waiting, gone
}

// probesBehind counts the probes whose map is older than version.
func (c *crowd) probesBehind(version int) (waiting int) {
	for _, p := range c.probes {
		p.mu.Lock()
		if !p.lost && (!p.copy.synced || p.copy.version < version) {
			waiting++
		}
		p.mu.Unlock()
	}
	return waiting
}

// probeSpan is when the first and the last probe at version or above had their newest
// message: with one change under way, when they saw it. The probes are a random sample
// of the watchers' order in a pass (a showtime tells its watchers in its map's order).
func (c *crowd) probeSpan(version int) (first, last time.Time) {
	for _, p := range c.probes {
		p.mu.Lock()
		if p.copy.version >= version {
			if first.IsZero() || p.lastAt.Before(first) {
				first = p.lastAt
			}
			if p.lastAt.After(last) {
				last = p.lastAt
			}
		}
		p.mu.Unlock()
	}
	return first, last
}

// frames are the next messages each watcher received since resetFrames.
func (c *crowd) frames() []int {
	var out []int
	for _, p := range c.probes {
		p.mu.Lock()
		out = append(out, p.frames)
		p.mu.Unlock()
	}
	for _, w := range c.counters {
		out = append(out, int(w.frames.Load()))
	}
	return out
}

// ended counts the subscriptions the server ended (each end of a probe's, which
// subscribes again) and the connections lost, and gives the first message that ended one.
func (c *crowd) ended() (ended, lost int, by string) {
	for _, p := range c.probes {
		p.mu.Lock()
		ended += p.ended
		if by == "" {
			by = p.endedBy
		}
		if p.lost {
			lost++
		}
		p.mu.Unlock()
	}
	for _, w := range c.counters {
		if w.ended.Load() {
			ended++
		}
		if w.c.lost.Load() {
			lost++
		}
	}
	return ended, lost, by
}

func (c *crowd) closeAll() {
	for _, p := range c.probes {
		p.conn.Close()
	}
	for _, w := range c.counters {
		w.c.Close()
	}
	c.clients.Close()
}
