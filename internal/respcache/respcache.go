// Package respcache keeps the data of the responses of catalog-only GraphQL queries, so a hot
// query (a seat-picker page asking for a showtime with its movie and the hall's 120 seats)
// costs a map look-up instead of an execution. A hit is still a GraphQL request: parsed,
// checked against every limit and charged its cost; only the execution is saved.
//
// A response is kept only when every field of its operation is catalog data (Allowed: no
// seat state, no orders, nothing that depends on the caller, no list read straight from
// MySQL) and every catalog value it was built from came from this instance's local cache
// level (cache.Trace). It is tagged with those cache keys and lives until the earliest of
// their local expiries; dropping any of the keys locally (this instance's own invalidation,
// another instance's broadcast, the flush after a lost subscription) drops it too
// (cache.Config.OnDrop). So the response cache is a memo of the local level: never staler, never
// longer lived.
//
// A drop racing a request that read the old value before the drop is caught by a
// generation counter: the request saw the counter before its first read, and a response
// whose generation moved on while it was built is not stored.
package respcache

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"seatflow"
)

// Limits of a Store: entries beyond maxEntry bytes are not kept.
const (
	maxEntry   = 256 << 10
	maxEntries = 1 << 16
)

var (
	metricLookups = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "seatflow", Subsystem: "response_cache", Name: "lookups_total",
		Help: "Cacheable GraphQL requests by outcome: hit, miss (stored afterwards) or skipped (not storable).",
	}, []string{"outcome"})
	metricDrops = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "seatflow", Subsystem: "response_cache", Name: "drops_total",
		Help: "Responses dropped because a catalog key they were built from was invalidated.",
	})
	metricBytes = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: "seatflow", Subsystem: "response_cache", Name: "bytes",
		Help: "Bytes of responses held by the response caches of this process.",
	})
)

// Store holds the data of responses under their request, tagged by the catalog cache keys
// they were built from, in at most MaxBytes (least recently used out first).
type Store struct {
	mu       sync.Mutex
	lru      *simplelru.LRU[string, *entry]
	byTag    map[string]map[string]struct{}
	gen      uint64
	bytes    int
	maxBytes int
	now      seatflow.ClockFunc
	fields   map[string]bool

	hits, misses, skipped, drops atomic.Int64
}

// Stats counts a Store's look-ups and drops since it was created.
type Stats struct {
	Hits    int64 // answered from the store
	Misses  int64 // executed, then stored
	Skipped int64 // executed and not storable (errors, a read past the local level, a drop meanwhile)
	Drops   int64 // responses forgotten because a key they were built from was dropped
}

type entry struct {
	data  json.RawMessage
	etag  string
	tags  []string
	until time.Time
}

// New returns a Store of at most maxBytes of responses to queries that select only
// catalog fields: those the schema marks @catalog (__typename is always allowed), learnt
// when the Extension is added to the GraphQL server. now is the clock the catalog cache's
// local level runs on.
func New(maxBytes int, now func() time.Time) *Store {
	s := &Store{byTag: map[string]map[string]struct{}{}, maxBytes: maxBytes, now: now, fields: map[string]bool{}}
	s.lru, _ = simplelru.NewLRU(maxEntries, s.evicted)
	return s
}

// evicted unlinks an entry leaving the LRU (evicted, removed or replaced); mu is held.
func (s *Store) evicted(key string, e *entry) {
	s.bytes -= len(e.data)
	metricBytes.Sub(float64(len(e.data)))
	for _, t := range e.tags {
		if keys := s.byTag[t]; keys != nil {
			delete(keys, key)
			if len(keys) == 0 {
				delete(s.byTag, t)
			}
		}
	}
}

func (s *Store) get(key string) (*entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.lru.Get(key)
	if !ok {
		return nil, false
	}
	if !s.now.Now().Before(e.until) {
		s.lru.Remove(key)
		return nil, false
	}
	return e, true
}

func (s *Store) generation() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

// put keeps e unless a drop happened since gen was read.
func (s *Store) put(key string, gen uint64, e *entry) bool {
	if len(e.data) > maxEntry || len(e.data) > s.maxBytes {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != gen || !s.now.Now().Before(e.until) {
		return false
	}
	s.lru.Remove(key) // Add replacing a key would not unlink the old entry
	s.lru.Add(key, e)
	s.bytes += len(e.data)
	metricBytes.Add(float64(len(e.data)))
	for _, t := range e.tags {
		if s.byTag[t] == nil {
			s.byTag[t] = map[string]struct{}{}
		}
		s.byTag[t][key] = struct{}{}
	}
	for s.bytes > s.maxBytes {
		s.lru.RemoveOldest()
	}
	return true
}

// Drop forgets every response built from one of keys; nil keys forget everything. The
// catalog cache calls it after it dropped the keys from its local level.
func (s *Store) Drop(keys []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	n := s.lru.Len()
	if keys == nil {
		s.lru.Purge()
	} else {
		for _, t := range keys {
			for key := range s.byTag[t] {
				s.lru.Remove(key)
			}
		}
	}
	n -= s.lru.Len()
	s.drops.Add(int64(n))
	metricDrops.Add(float64(n))
}

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	return Stats{Hits: s.hits.Load(), Misses: s.misses.Load(), Skipped: s.skipped.Load(), Drops: s.drops.Load()}
}

var (
	lookupHit     = metricLookups.WithLabelValues("hit")
	lookupMiss    = metricLookups.WithLabelValues("miss")
	lookupSkipped = metricLookups.WithLabelValues("skipped")
)
