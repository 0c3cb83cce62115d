package faults

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"sync"
	"time"

	"seatflow/internal/tooling/gqlclient"
)

// Watcher is a websocket client of the seat-map subscription: it keeps the map the
// server told it (SNAPSHOT replaces it, DELTA updates it), reconnecting to the next
// instance when its connection ends, as a client behind a load balancer would.
type Watcher struct {
	env   *Env
	first int

	mu        sync.Mutex
	seats     map[string]string // seat id → status
	version   int64
	live      bool // subscribed and holding a snapshot of this connection
	instance  int
	events    []WatchEvent
	gaps      int
	snapshots int
	deltas    int
	// seen is every status the watcher was told of each seat, and when (staleness.go).
	seen map[int][]seen
}

// WatchEvent is something a watcher was told (or suffered) on an instance.
type WatchEvent struct {
	At       time.Time
	Instance int
	Kind     string // SNAPSHOT, CLOSED (the connection ended), ERROR (the subscription ended)
}

// StartWatchers connects per watchers to every instance; stop disconnects them.
func StartWatchers(ctx context.Context, e *Env, per int) (ws []*Watcher, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, in := range e.Instances {
		for range per {
			w := &Watcher{env: e, first: in.Index, instance: in.Index, seats: map[string]string{}, seen: map[int][]seen{}}
			ws = append(ws, w)
			wg.Add(1)
			go func() { defer wg.Done(); w.run(ctx) }()
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) && !allLive(ws) {
		time.Sleep(50 * time.Millisecond)
	}
	return ws, func() { cancel(); wg.Wait() }
}

func allLive(ws []*Watcher) bool {
	for _, w := range ws {
		if !w.Live() {
			return false
		}
	}
	return true
}

// On is the instance the watcher is (or was last) subscribed to.
func (w *Watcher) On() int { w.mu.Lock(); defer w.mu.Unlock(); return w.instance }

// Live reports whether the watcher is subscribed and holds a snapshot.
func (w *Watcher) Live() bool { w.mu.Lock(); defer w.mu.Unlock(); return w.live }

// Map returns the watcher's seat map and version.
func (w *Watcher) Map() (map[string]string, int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.seats), w.version
}

// Seen returns every status the watcher was told of each seat, by seat's database id.
func (w *Watcher) Seen() map[int][]seen {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[int][]seen, len(w.seen))
	for id, s := range w.seen {
		out[id] = append([]seen(nil), s...)
	}
	return out
}

// Events returns what the watcher was told.
func (w *Watcher) Events() []WatchEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]WatchEvent(nil), w.events...)
}

func (w *Watcher) note(in int, kind string) {
	w.mu.Lock()
	w.events = append(w.events, WatchEvent{At: time.Now(), Instance: in, Kind: kind})
	if kind != "SNAPSHOT" {
		w.live = false
	}
	w.mu.Unlock()
}

func (w *Watcher) run(ctx context.Context) {
	in := w.first
	for ctx.Err() == nil {
		err := w.once(ctx, in)
		if ctx.Err() != nil {
			return
		}
		kind := "CLOSED"
		if errors.Is(err, gqlclient.ErrEnded) {
			kind = "ERROR"
		}
		w.note(in, kind)
		in = (in + 1) % len(w.env.Instances)
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

type seatMapEvent struct {
	Data struct {
		SeatMap struct {
			Kind        string
			FromVersion int64
			Version     int64
			Seats       []struct {
				Seat   struct{ ID string }
				Status string
			}
		}
	}
}

// once runs one connection to instance in until it ends.
func (w *Watcher) once(ctx context.Context, in int) error {
	sub, err := gqlclient.Subscribe(ctx, w.env.Instances[in].URL,
		gqlclient.Request{Query: qWatch, Variables: map[string]any{"id": w.env.Show.GQLID}},
		gqlclient.SubscribeOptions{DialTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second})
	if err != nil {
		return err
	}
	defer sub.Close()
	for {
		payload, err := sub.Next()
		if err != nil {
			return err
		}
		var ev seatMapEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return err
		}
		w.apply(in, ev)
	}
}

func (w *Watcher) apply(in int, ev seatMapEvent) {
	sm := ev.Data.SeatMap
	w.mu.Lock()
	defer w.mu.Unlock()
	switch sm.Kind {
	case "SNAPSHOT":
		w.seats = map[string]string{}
		w.snapshots++
		w.live, w.instance = true, in
		w.events = append(w.events, WatchEvent{At: time.Now(), Instance: in, Kind: "SNAPSHOT"})
	case "DELTA":
		w.deltas++
		if sm.Version > w.version && sm.FromVersion != w.version { // coalesced DELTAs span versions
			w.gaps++
		}
	}
	now := time.Now()
	for _, s := range sm.Seats {
		w.seats[s.Seat.ID] = s.Status
		id := dbID(s.Seat.ID)
		w.seen[id] = append(w.seen[id], seen{at: now, status: s.Status})
	}
	w.version = max(w.version, sm.Version)
	if sm.Kind == "SNAPSHOT" {
		w.version = sm.Version
	}
}
