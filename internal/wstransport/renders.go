package wstransport

import (
	"bytes"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"seatflow"
	"seatflow/internal/seatrender"
)

// renderCache keeps the latest rendering per showtime and selection: the watchers of a
// showtime asking the same selection share it, event by event (the hub hands each of them
// the same event).
type renderCache struct {
	mu   sync.Mutex
	last *simplelru.LRU[string, rendering]
}

type rendering struct {
	ev *seatflow.SeatMapEvent
	b  []byte
}

// renderings bounds the showtime-selection pairs kept.
const renderings = 4096

// render returns ev written with plan, from the cache when the key's last rendering is
// of ev. The bytes are shared and never changed.
func (r *renderCache) render(key string, plan *seatrender.Plan, ev *seatflow.SeatMapEvent) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last, _ = simplelru.NewLRU[string, rendering](renderings, nil)
	}
	if e, ok := r.last.Get(key); ok && e.ev == ev {
		return e.b
	}
	var buf bytes.Buffer
	buf.Grow(64 + 96*len(ev.Seats))
	plan.WriteEvent(&buf, ev)
	r.last.Add(key, rendering{ev: ev, b: buf.Bytes()})
	return buf.Bytes()
}
