package cache

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/sony/gobreaker/v2"
)

// Prometheus metrics, registered once on the default registry and shared by every Cache
// in the process (one per server in production).
var (
	metricHits = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "seatflow", Subsystem: "catalog_cache", Name: "hits_total",
		Help: "Catalog keys answered, by level: local (freecache), redis (fresh envelope), db (loader).",
	}, []string{"level"})
	metricStaleServed = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "seatflow", Subsystem: "catalog_cache", Name: "stale_served_total",
		Help: "Reads answered with a logically expired value while another request rebuilt it.",
	})
	metricRebuilds = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "seatflow", Subsystem: "catalog_cache", Name: "rebuilds_total",
		Help: "Keys reloaded from the database and written back under the rebuild lock.",
	})
	metricLockWaitTimeouts = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "seatflow", Subsystem: "catalog_cache", Name: "lock_wait_timeouts_total",
		Help: "Requests that lost the rebuild lock and saw no fresh envelope within the poll budget.",
	})
	metricNegativeHits = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "seatflow", Subsystem: "catalog_cache", Name: "negative_hits_total",
		Help: "Reads answered 'known missing' by a cache level.",
	})
	metricInvalidations = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "seatflow", Subsystem: "catalog_cache", Name: "invalidations_total",
		Help: "Invalidation broadcasts sent by this process or received from others.",
	}, []string{"direction"})
	metricLocalFlushes = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "seatflow", Subsystem: "catalog_cache", Name: "local_flushes_total",
		Help: "Whole local-cache flushes on (re)subscription to the invalidation channel.",
	})
	metricBreakerState = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: "seatflow", Subsystem: "catalog_cache", Name: "redis_breaker_state",
		Help: "Circuit breaker in front of Redis: 0 closed, 1 half-open, 2 open.",
	})
)

// Stats is a snapshot of one Cache's counters since it was created (the Prometheus metrics
// add up every Cache in the process).
type Stats struct {
	LocalHits             int64  // keys answered by freecache
	RedisHits             int64  // keys answered by a fresh Redis envelope
	DBLoads               int64  // keys handed to a loader (the "db" level)
	StaleServed           int64  // keys answered with a logically expired value
	Rebuilds              int64  // keys reloaded and written back under the rebuild lock
	LockWaitTimeouts      int64  // lock losers that found no fresh envelope in time
	NegativeHits          int64  // keys answered "known missing" by a cache level
	InvalidationsSent     int64  // Invalidate calls that reached Redis
	InvalidationsReceived int64  // broadcasts from other instances applied locally
	LocalFlushes          int64  // whole-cache flushes on (re)subscription
	Breaker               string // circuit breaker state: "closed", "half-open" or "open"
}

// counter counts for one Cache and for the process-wide metric.
type counter struct {
	n atomic.Int64
	m prometheus.Counter
}

func (c *counter) Add(n int64) {
	c.n.Add(n)
	c.m.Add(float64(n))
}

func (c *counter) Load() int64 { return c.n.Load() }

type counters struct {
	localHits, redisHits, dbLoads, staleServed, rebuilds, lockWaitTimeouts, negativeHits,
	invalidationsSent, invalidationsReceived, localFlushes counter
}

func (s *counters) init() {
	s.localHits.m = metricHits.WithLabelValues("local")
	s.redisHits.m = metricHits.WithLabelValues("redis")
	s.dbLoads.m = metricHits.WithLabelValues("db")
	s.staleServed.m = metricStaleServed
	s.rebuilds.m = metricRebuilds
	s.lockWaitTimeouts.m = metricLockWaitTimeouts
	s.negativeHits.m = metricNegativeHits
	s.invalidationsSent.m = metricInvalidations.WithLabelValues("sent")
	s.invalidationsReceived.m = metricInvalidations.WithLabelValues("received")
	s.localFlushes.m = metricLocalFlushes
}

func breakerStateChanged(_ string, _, to gobreaker.State) {
	metricBreakerState.Set(float64(to))
}

// Stats returns the cache's counters and its circuit breaker state.
func (c *Cache) Stats() Stats {
	s := &c.stats
	return Stats{
		LocalHits:             s.localHits.Load(),
		RedisHits:             s.redisHits.Load(),
		DBLoads:               s.dbLoads.Load(),
		StaleServed:           s.staleServed.Load(),
		Rebuilds:              s.rebuilds.Load(),
		LockWaitTimeouts:      s.lockWaitTimeouts.Load(),
		NegativeHits:          s.negativeHits.Load(),
		InvalidationsSent:     s.invalidationsSent.Load(),
		InvalidationsReceived: s.invalidationsReceived.Load(),
		LocalFlushes:          s.localFlushes.Load(),
		Breaker:               c.breaker.State().String(),
	}
}
