package seatrender

import (
	"context"
	"strings"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/vektah/gqlparser/v2/ast"

	"seatflow/internal/coalesce"
)

// Memo keeps rendered seat maps of the latest version seen of each showtime, one per
// selection, so that readers of the same map at the same version share one rendering. A
// map is only ever served for the version it was rendered at: a caller asks with the
// version it knows is current, and an entry of any other version is a miss. Showtimes
// beyond maxShows are forgotten, least recently used first.
type Memo struct {
	mu    sync.Mutex
	shows *simplelru.LRU[int, *rendered]

	renders coalesce.Group[renderKey, []byte]

	// Compiled selections of the seatMap fields of the documents gqlgen keeps parsed (its
	// query cache hands every request of one document the same *ast.Field), for
	// documents without directives, whose selection no variable can change: a read of a
	// map then compiles nothing (a tenth of a warm read's CPU under 32 connections).
	planMu sync.Mutex
	plans  *simplelru.LRU[*ast.Field, *Plan]
}

type renderKey struct {
	showID int
	sel    string
}

// rendered is one showtime's maps at one version, by selection key.
type rendered struct {
	version int
	bySel   map[string][]byte
}

const (
	maxShows      = 1024
	maxSelections = 16 // per showtime and version: front ends ask a handful of shapes
)

// NewMemo returns an empty memo.
func NewMemo() *Memo {
	lru, _ := simplelru.NewLRU[int, *rendered](maxShows, nil)
	plans, _ := simplelru.NewLRU[*ast.Field, *Plan](maxPlans, nil)
	return &Memo{shows: lru, plans: plans}
}

// maxPlans bounds the compiled selections kept.
const maxPlans = 1024

// plan compiles the selection of the SeatMap field f, or returns the one compiled for f
// before when its document has no directive (nil when the renderer does not know it).
// Without a memo it always compiles.
func (m *Memo) plan(oc *graphql.OperationContext, f graphql.CollectedField) *Plan {
	if m == nil || f.Field == nil || strings.Contains(oc.RawQuery, "@") {
		return Compile(oc, f.Selections, "SeatMap")
	}
	m.planMu.Lock()
	p, ok := m.plans.Get(f.Field)
	m.planMu.Unlock()
	if ok {
		return p
	}
	p = Compile(oc, f.Selections, "SeatMap")
	m.planMu.Lock()
	m.plans.Add(f.Field, p)
	m.planMu.Unlock()
	return p
}

// Get returns the map of showtime showID rendered at version for the selection key.
func (m *Memo) Get(showID, version int, key string) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.shows.Get(showID)
	if !ok || r.version != version {
		return nil, false
	}
	b, ok := r.bySel[key]
	return b, ok
}

// Render returns a rendering of showID's map for the selection key made by render (which
// reads the map and returns its version and bytes) after this call began; concurrent
// callers for the same map and selection share one. The rendering is kept.
func (m *Memo) Render(ctx context.Context, showID int, key string, render func(context.Context) (int, []byte, error)) ([]byte, error) {
	return m.renders.Do(ctx, renderKey{showID, key}, func(ctx context.Context) ([]byte, error) {
		v, b, err := render(ctx)
		if err == nil {
			m.Put(showID, v, key, b)
		}
		return b, err
	})
}

// Put keeps b, the map of showID rendered at version for the selection key. A version
// older than the one kept is not stored; a newer one replaces every older rendering.
func (m *Memo) Put(showID, version int, key string, b []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.shows.Get(showID)
	switch {
	case ok && r.version > version:
		return
	case !ok || r.version < version:
		r = &rendered{version: version, bySel: map[string][]byte{}}
		m.shows.Add(showID, r)
	}
	if len(r.bySel) < maxSelections {
		r.bySel[key] = b
	}
}
