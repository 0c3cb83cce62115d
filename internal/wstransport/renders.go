package wstransport

import (
	"bytes"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"seatflow"
	"seatflow/internal/seatrender"
)

// renderCache keeps the renderings of the latest seat-map events per selection (showtime
// and the selection's shape): the watchers of a showtime asking the same selection share
// one rendering of each event the hub hands them (a SNAPSHOT, or a DELTA from one version
// to the show's latest), however many take it and in whatever order. A showtime's
// watchers are at a handful of versions at once, so a few events per selection are kept,
// the oldest replaced: a rendering (and the event it holds) lives no longer than the
// next few.
type renderCache struct {
	mu   sync.Mutex
	last *simplelru.LRU[string, *renderSlots]

	// The selections watched, by key: every watch of a showtime asking the same shape
	// shares one compiled plan and one key string.
	selMu sync.Mutex
	sels  *simplelru.LRU[string, *selection]
}

type selection struct {
	plan *seatrender.Plan
	key  string
}

// selection returns the plan and key the watches of key share (plan and key if none has
// them yet).
func (r *renderCache) selection(key string, plan *seatrender.Plan) (*seatrender.Plan, string) {
	r.selMu.Lock()
	defer r.selMu.Unlock()
	if r.sels == nil {
		r.sels, _ = simplelru.NewLRU[string, *selection](selections, nil)
	}
	if s, ok := r.sels.Get(key); ok {
		return s.plan, s.key
	}
	r.sels.Add(key, &selection{plan, key})
	return plan, key
}

// renderSlots are one selection's latest renderings, by event.
type renderSlots struct {
	next  int
	slots [eventsPerSelection]struct {
		ev *seatflow.SeatMapEvent
		b  []byte
	}
}

const (
	// selections bounds the selections kept (showtime and shape).
	selections = 1024
	// eventsPerSelection is how many events of one selection are kept.
	eventsPerSelection = 4
)

var seatMapRenders = promauto.NewCounter(prometheus.CounterOpts{
	Namespace: "seatflow", Subsystem: "websocket", Name: "seatmap_renders_total",
	Help: "Seat-map events rendered for subscriptions: once per event and selection, shared by every watcher asking the same.",
})

// render returns ev written with plan, from the cache when the selection key's rendering
// of ev is there. The bytes are shared and never changed.
func (r *renderCache) render(key string, plan *seatrender.Plan, ev *seatflow.SeatMapEvent) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last, _ = simplelru.NewLRU[string, *renderSlots](selections, nil)
	}
	rs, ok := r.last.Get(key)
	if !ok {
		rs = &renderSlots{}
		r.last.Add(key, rs)
	}
	for _, s := range rs.slots {
		if s.ev == ev {
			return s.b
		}
	}
	var buf bytes.Buffer
	buf.Grow(64 + 96*len(ev.Seats))
	plan.WriteEvent(&buf, ev)
	seatMapRenders.Inc()
	rs.slots[rs.next].ev, rs.slots[rs.next].b = ev, buf.Bytes()
	rs.next = (rs.next + 1) % eventsPerSelection
	return buf.Bytes()
}
