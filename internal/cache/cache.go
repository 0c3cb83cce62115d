// Package cache is the two-level catalog cache (docs/DESIGN.md "Catalog cache"): an
// in-process freecache in front of Redis envelopes {"expireAt": ms, "data": …} with a
// logical expiry, rebuilt from the database by one request at a time across all
// instances, and invalidated on every instance by a Redis broadcast backed by a
// transactional outbox. It stores opaque
// JSON bytes for catalog entries (movies, halls, showtimes and their lists); callers decode
// per read, so no caller can mutate a value another caller sees.
//
// It must never cache seat state: seats live only in the Redis hashes package seats changes,
// and a stale seat could be sold twice. Nor may a caller trust it for a decision that must be
// current (e.g. "is this showtime on sale" when holding seats): those read MySQL.
package cache

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/coocood/freecache"
	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"

	"seatflow"
	"seatflow/internal/keys"
	"seatflow/internal/redislock"
)

// Config tunes a Cache; a zero field takes the default in parentheses beside it.
type Config struct {
	LocalBytes   int           // freecache size in bytes (32 MiB); an entry larger than 1/1024 of it is not kept locally
	LocalTTL     time.Duration // how long an instance keeps its own copy, in whole seconds (60 s)
	LogicalTTL   time.Duration // how long an envelope counts as fresh (10 min)
	Jitter       time.Duration // uniform 0..Jitter added to LogicalTTL, so a batch does not expire at once (60 s)
	PhysicalTTL  time.Duration // Redis TTL of an envelope; the stale value serves while one request rebuilds (30 min)
	NegativeTTL  time.Duration // logical TTL of a "known missing" envelope (30 s)
	MaxNegative  int           // known-missing envelopes an instance writes to Redis per NegativeTTL (10,000); past it, kept locally only
	LockTTL      time.Duration // rebuild lock TTL (10 s)
	PollInterval time.Duration // how often a request that lost the lock looks for the fresh envelope (20 ms)
	PollTries    int           // how many times it looks before serving the stale value (25)
	// BreakerOpenFor is how long the circuit breaker keeps Redis out after it trips (5 s).
	BreakerOpenFor time.Duration
	Now            seatflow.ClockFunc
	// Disabled sends every read straight to the loader (benchmarks: what the cache buys).
	Disabled bool
	// OnDrop runs after keys are dropped from the local level (this instance's own
	// invalidations and those broadcast by others); keys is nil when the whole local level
	// was flushed. It runs after the drop, so whatever it forgets can no longer be rebuilt
	// from the dropped copies (the response cache's hook).
	OnDrop func(keys []string)
}

func (cfg Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if cfg.LocalBytes <= 0 {
		cfg.LocalBytes = 32 << 20
	}
	def(&cfg.LocalTTL, 60*time.Second)
	def(&cfg.LogicalTTL, 10*time.Minute)
	if cfg.Jitter < 0 {
		cfg.Jitter = 0
	} else if cfg.Jitter == 0 {
		cfg.Jitter = 60 * time.Second
	}
	def(&cfg.PhysicalTTL, 30*time.Minute)
	def(&cfg.NegativeTTL, 30*time.Second)
	if cfg.MaxNegative <= 0 {
		cfg.MaxNegative = 10_000
	}
	def(&cfg.LockTTL, 10*time.Second)
	def(&cfg.PollInterval, 20*time.Millisecond)
	if cfg.PollTries <= 0 {
		cfg.PollTries = 25
	}
	def(&cfg.BreakerOpenFor, 5*time.Second)
	return cfg
}

// LoadFunc loads catalog entries from the database: it returns the JSON of the keys it
// found; a key it leaves out is cached as known missing. GetMany takes the plain func type,
// so that consumers' interfaces need not import this package.
type LoadFunc func(ctx context.Context, keys []string) (map[string][]byte, error)

// Cache is one instance's view of the catalog cache. It is safe for concurrent use; each
// server process has one, and they coordinate only through Redis.
type Cache struct {
	rdb     redis.UniversalClient
	keys    keys.Keys
	cfg     Config
	local   *freecache.Cache
	breaker *gobreaker.CircuitBreaker[struct{}]
	flights flights
	stats   counters
	// origin tags this instance's broadcasts, so it does not count its own as received.
	origin string
	// dropMu orders local drops against local puts: drops counts the drops, and a put of a
	// value read before a drop is refused (putLocal).
	dropMu sync.RWMutex
	drops  uint64
	// negatives counts the known-missing envelopes written in the current window.
	negatives negativeBudget
}

// New returns a Cache over rdb with keys under k.
func New(rdb redis.UniversalClient, k keys.Keys, cfg Config) *Cache {
	cfg = cfg.withDefaults()
	c := &Cache{rdb: rdb, keys: k, cfg: cfg, origin: redislock.Token()}
	c.local = freecache.NewCacheCustomTimer(cfg.LocalBytes, clock(cfg.Now))
	c.flights.m = make(map[string]*flight)
	c.stats.init()
	c.breaker = gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        "catalog-cache-redis",
		MaxRequests: 1,
		Timeout:     cfg.BreakerOpenFor,
		// A few failures in a row mean Redis is down: stop paying a timeout per request.
		ReadyToTrip: func(n gobreaker.Counts) bool { return n.ConsecutiveFailures >= 3 },
		// A caller giving up is not Redis failing.
		IsExcluded:    func(err error) bool { return errors.Is(err, context.Canceled) },
		OnStateChange: breakerStateChanged,
	})
	return c
}

// clock lets freecache's TTL follow the injected Now.
type clock seatflow.ClockFunc

func (f clock) Now() uint32 { return uint32(seatflow.ClockFunc(f).Now().Unix()) }

// redisDo runs fn behind the circuit breaker; with the breaker open it fails at once.
func (c *Cache) redisDo(fn func() error) error {
	_, err := c.breaker.Execute(func() (struct{}, error) { return struct{}{}, fn() })
	return err
}

// envelope is what Redis holds for a key: the value and when it stops being fresh. Data
// null means the key is known to be missing.
type envelope struct {
	ExpireAt int64           `json:"expireAt"`
	Data     json.RawMessage `json:"data"`
}

func (e *envelope) fresh(nowMs int64) bool { return nowMs < e.ExpireAt }

// value returns the cached bytes, nil for "known missing".
func (e *envelope) value() []byte {
	if len(e.Data) == 0 || bytes.Equal(e.Data, []byte("null")) {
		return nil
	}
	return e.Data
}

func (c *Cache) nowMs() int64 { return c.cfg.Now.Now().UnixMilli() }
