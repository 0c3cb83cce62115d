// Package cache is the two-level catalog cache (DESIGN.md "Catalog cache"): an in-process
// freecache in front of Redis envelopes {"expireAt": ms, "data": …} with a logical expiry,
// rebuilt from the database by one request at a time across all instances, and invalidated
// on every instance by a Redis broadcast backed by a transactional outbox. It stores opaque
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
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"sync"
	"time"

	"github.com/coocood/freecache"
	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"

	"seatflow/internal/keys"
	"seatflow/internal/redislock"
)

// Config tunes a Cache; zero fields take the defaults of DESIGN.md.
type Config struct {
	LocalBytes   int           // freecache size in bytes (32 MiB); an entry larger than 1/1024 of it is not kept locally
	LocalTTL     time.Duration // how long an instance keeps its own copy, in whole seconds (60 s)
	LogicalTTL   time.Duration // how long an envelope counts as fresh (10 min)
	Jitter       time.Duration // uniform 0..Jitter added to LogicalTTL, so a batch does not expire at once (60 s)
	PhysicalTTL  time.Duration // Redis TTL of an envelope; the stale value serves while one request rebuilds (30 min)
	NegativeTTL  time.Duration // logical TTL of a "known missing" envelope (30 s)
	LockTTL      time.Duration // rebuild lock TTL (10 s)
	PollInterval time.Duration // how often a request that lost the lock looks for the fresh envelope (20 ms)
	PollTries    int           // how many times it looks before serving the stale value (25)
	// BreakerOpenFor is how long the circuit breaker keeps Redis out after it trips (5 s).
	BreakerOpenFor time.Duration
	Now            func() time.Time
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
	def(&cfg.LockTTL, 10*time.Second)
	def(&cfg.PollInterval, 20*time.Millisecond)
	if cfg.PollTries <= 0 {
		cfg.PollTries = 25
	}
	def(&cfg.BreakerOpenFor, 5*time.Second)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
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
type clock func() time.Time

func (f clock) Now() uint32 { return uint32(f().Unix()) }

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

// GetMany returns the value of each key in key order; a nil entry means "known missing".
// Keys not in the local cache cost one Redis MGET together; load is called once with
// every key this call must rebuild, and once more only for keys another instance was
// rebuilding that are still absent from Redis after the wait (so the call does not fail).
// A logically expired value is rebuilt by one request across all instances while the
// others serve it stale; with Redis down, reads go to load, one per key per instance.
func (c *Cache) GetMany(ctx context.Context, keys []string, load func(ctx context.Context, keys []string) (map[string][]byte, error)) ([][]byte, error) {
	uniq := unique(keys)
	got := make(map[string][]byte, len(uniq))
	var err error
	if c.cfg.Disabled {
		traceOf(ctx).read(uniq, 0, true)
		got, err = c.load(ctx, uniq, load)
	} else {
		err = c.getMany(ctx, uniq, got, load)
	}
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = got[k]
	}
	return out, nil
}

// Get is GetMany for one key.
func (c *Cache) Get(ctx context.Context, key string, load func(ctx context.Context, keys []string) (map[string][]byte, error)) ([]byte, error) {
	v, err := c.GetMany(ctx, []string{key}, load)
	if err != nil {
		return nil, err
	}
	return v[0], nil
}

func (c *Cache) getMany(ctx context.Context, uniq []string, got map[string][]byte, load LoadFunc) error {
	since := c.dropGen() // before any read below: a drop after it keeps their values out of the local level
	misses, until := c.fromLocal(uniq, got)
	traceOf(ctx).read(uniq, until, len(misses) > 0)
	if len(misses) == 0 {
		return nil
	}
	envs, redisErr := c.fetch(ctx, misses)
	stale := map[string]*envelope{}
	var need []string
	if redisErr != nil {
		need = misses
	} else {
		now := c.nowMs()
		for _, k := range misses {
			e := envs[k]
			switch {
			case e == nil:
				need = append(need, k)
			case e.fresh(now):
				got[k] = e.value()
				c.stats.redisHits.Add(1)
				c.countNegative(got[k])
				c.putLocal(k, e, now, since)
			default:
				need = append(need, k)
				stale[k] = e
			}
		}
	}
	if len(need) == 0 {
		return nil
	}

	// Per instance, one caller per key goes on to the lock; the others wait for its result.
	own, others := c.flights.claim(need)
	if len(own) > 0 {
		var vals map[string][]byte
		err := errors.New("catalog cache rebuild panicked")
		func() {
			// Finish even if load panics, or the waiters would wait forever.
			defer func() { c.flights.finish(own, vals, err) }()
			// Others wait on this rebuild: it must not end because this caller went away.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.LockTTL)
			defer cancel()
			vals, err = c.rebuild(rctx, own, stale, redisErr == nil, load, since)
		}()
		if err != nil {
			return err
		}
		for _, k := range own {
			got[k] = vals[k]
		}
	}
	for k, f := range others {
		select {
		case <-f.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if f.err != nil {
			return f.err
		}
		got[k] = f.val
	}
	return nil
}

// rebuild resolves keys that are stale or missing in Redis. The request that wins a key's
// lock loads it and writes both levels; the others wait for the fresh envelope and serve
// the stale one if it does not come in time.
func (c *Cache) rebuild(ctx context.Context, keys []string, stale map[string]*envelope, redisUp bool, load LoadFunc, since uint64) (map[string][]byte, error) {
	if !redisUp {
		// No lock and no write without Redis; nor a local copy, because the broadcast that
		// would drop it cannot reach this instance either.
		return c.load(ctx, keys, load)
	}
	token := redislock.Token()
	won, lost, after, err := c.lock(ctx, keys, token)
	if err != nil {
		return c.load(ctx, keys, load)
	}
	vals := make(map[string][]byte, len(keys))
	won = c.freshSinceLocked(ctx, won, after, token, vals, since)
	if len(won) > 0 {
		loaded, err := c.load(ctx, won, load)
		if err != nil {
			c.unlock(ctx, won, token)
			// The database failing is no reason to fail a read we hold a stale value for.
			for _, k := range won {
				if stale[k] == nil {
					return nil, err
				}
			}
			for _, k := range won {
				vals[k] = stale[k].value()
				c.stats.staleServed.Add(1)
			}
		} else {
			c.store(ctx, loaded, token, since)
			c.unlock(ctx, won, token)
			c.stats.rebuilds.Add(int64(len(won)))
			for k, v := range loaded {
				vals[k] = v
			}
		}
	}
	if len(lost) > 0 {
		if err := c.await(ctx, lost, stale, load, vals, since); err != nil {
			return nil, err
		}
	}
	return vals, nil
}

// freshSinceLocked takes the keys whose lock this request won but whose envelope was
// fresh right after the lock (see lock): it fills vals with them, releases their locks,
// and returns the keys still to load.
func (c *Cache) freshSinceLocked(ctx context.Context, won []string, after map[string]*envelope, token string, vals map[string][]byte, since uint64) []string {
	now := c.nowMs()
	var need, done []string
	for _, k := range won {
		if e := after[k]; e != nil && e.fresh(now) {
			vals[k] = e.value()
			c.stats.redisHits.Add(1)
			c.putLocal(k, e, now, since)
			done = append(done, k)
		} else {
			need = append(need, k)
		}
	}
	if len(done) > 0 {
		c.unlock(ctx, done, token)
	}
	return need
}

// await polls for envelopes another request is rebuilding. A key that stays stale is
// served stale; a key that stays missing is loaded here rather than failing the read.
func (c *Cache) await(ctx context.Context, pending []string, stale map[string]*envelope, load LoadFunc, vals map[string][]byte, since uint64) error {
	for i := 0; i < c.cfg.PollTries && len(pending) > 0; i++ {
		if !sleep(ctx, c.cfg.PollInterval) {
			break
		}
		envs, err := c.fetch(ctx, pending)
		if err != nil {
			break
		}
		now := c.nowMs()
		var next []string
		for _, k := range pending {
			e := envs[k]
			if e != nil && e.fresh(now) {
				vals[k] = e.value()
				c.stats.redisHits.Add(1)
				c.countNegative(vals[k])
				c.putLocal(k, e, now, since)
				continue
			}
			if e != nil {
				stale[k] = e
			}
			next = append(next, k)
		}
		pending = next
	}
	var missing []string
	for _, k := range pending {
		c.stats.lockWaitTimeouts.Add(1)
		if s := stale[k]; s != nil {
			vals[k] = s.value()
			c.stats.staleServed.Add(1)
		} else {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	// Loaded without the lock, so not stored: the lock holder's rebuild will be.
	loaded, err := c.load(ctx, missing, load)
	if err != nil {
		return err
	}
	for k, v := range loaded {
		vals[k] = v
	}
	return nil
}

// load calls the loader and returns a value (nil for missing) for every key asked.
func (c *Cache) load(ctx context.Context, keys []string, load LoadFunc) (map[string][]byte, error) {
	found, err := load(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("load catalog entries: %w", err)
	}
	c.stats.dbLoads.Add(int64(len(keys)))
	out := make(map[string][]byte, len(keys))
	for _, k := range keys {
		out[k] = found[k]
	}
	return out, nil
}

// A local entry is one flag byte (1 found, 0 known missing), the second (on the cache's
// clock, big-endian uint32) it stops being served locally, then the value.
const localHeader = 5

// fromLocal fills got from freecache with one multi-get and returns the keys it lacks and
// the earliest local expiry among the keys it found.
func (c *Cache) fromLocal(uniq []string, got map[string][]byte) (misses []string, until uint32) {
	bkeys := make([][]byte, len(uniq))
	for i, k := range uniq {
		bkeys[i] = []byte(k)
	}
	vals, errs := c.local.MultiGet(bkeys)
	until = math.MaxUint32
	for i, k := range uniq {
		if errs[i] != nil || len(vals[i]) < localHeader {
			misses = append(misses, k)
			continue
		}
		c.stats.localHits.Add(1)
		until = min(until, binary.BigEndian.Uint32(vals[i][1:localHeader]))
		if vals[i][0] == 1 {
			got[k] = vals[i][localHeader:]
		} else {
			got[k] = nil
			c.stats.negativeHits.Add(1)
		}
	}
	return misses, until
}

// putLocal keeps e locally for LocalTTL, but never past its logical expiry, so the local
// level never serves what Redis would call stale; and not at all if a local drop happened
// since the read that produced e began (since = dropGen then): an envelope read from Redis
// just before an invalidation deleted it must not come back after the broadcast's drop.
func (c *Cache) putLocal(key string, e *envelope, nowMs int64, since uint64) {
	ttl := min(c.cfg.LocalTTL, time.Duration(e.ExpireAt-nowMs)*time.Millisecond)
	secs := int(ttl / time.Second)
	if secs < 1 {
		return
	}
	v := e.value()
	entry := make([]byte, localHeader, localHeader+len(v))
	if v != nil {
		entry[0] = 1
	}
	binary.BigEndian.PutUint32(entry[1:], uint32(nowMs/1000)+uint32(secs))
	entry = append(entry, v...)
	c.dropMu.RLock()
	defer c.dropMu.RUnlock()
	if c.drops != since {
		return
	}
	// ErrLargeEntry only means the entry lives in Redis alone.
	_ = c.local.Set([]byte(key), entry, secs)
}

// dropGen is the count of local drops so far.
func (c *Cache) dropGen() uint64 {
	c.dropMu.RLock()
	defer c.dropMu.RUnlock()
	return c.drops
}

func (c *Cache) dropLocal(keys []string) {
	c.dropMu.Lock()
	for _, k := range keys {
		c.local.Del([]byte(k))
	}
	c.drops++
	c.dropMu.Unlock()
	c.dropped(keys)
}

// clearLocal empties the local level.
func (c *Cache) clearLocal() {
	c.dropMu.Lock()
	c.local.Clear()
	c.drops++
	c.dropMu.Unlock()
	c.stats.localFlushes.Add(1)
	c.dropped(nil)
}

// dropped tells the OnDrop hook, after the local drop.
func (c *Cache) dropped(keys []string) {
	if c.cfg.OnDrop != nil {
		c.cfg.OnDrop(keys)
	}
}

func (c *Cache) countNegative(v []byte) {
	if v == nil {
		c.stats.negativeHits.Add(1)
	}
}

// fetch reads the envelopes of keys in one round trip; keys with no (readable) envelope
// are absent from the result.
func (c *Cache) fetch(ctx context.Context, keys []string) (map[string]*envelope, error) {
	var read func() map[string]*envelope
	err := c.redisDo(func() error {
		_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			read = c.queueReads(ctx, p, keys)
			return nil
		})
		return ignoreNil(err)
	})
	if err != nil {
		return nil, fmt.Errorf("read cache envelopes: %w", err)
	}
	return read(), nil
}

// queueReads queues the reads of keys' envelopes on p: one MGET, or on a Cluster (which
// refuses a cross-slot MGET) one GET per key. The returned function decodes the replies
// once p has run.
func (c *Cache) queueReads(ctx context.Context, p redis.Pipeliner, keys []string) func() map[string]*envelope {
	rkeys := make([]string, len(keys))
	for i, k := range keys {
		rkeys[i] = c.keys.Cache(k)
	}
	var raw func(i int) (string, bool)
	if _, cluster := c.rdb.(*redis.ClusterClient); cluster {
		cmds := make([]*redis.StringCmd, len(keys))
		for i, rk := range rkeys {
			cmds[i] = p.Get(ctx, rk)
		}
		raw = func(i int) (string, bool) { s, err := cmds[i].Result(); return s, err == nil }
	} else {
		cmd := p.MGet(ctx, rkeys...)
		raw = func(i int) (string, bool) {
			vals := cmd.Val()
			if i >= len(vals) {
				return "", false
			}
			s, ok := vals[i].(string)
			return s, ok
		}
	}
	return func() map[string]*envelope {
		out := make(map[string]*envelope, len(keys))
		for i, k := range keys {
			s, ok := raw(i)
			if !ok {
				continue
			}
			var e envelope
			if json.Unmarshal([]byte(s), &e) == nil {
				out[k] = &e
			}
		}
		return out
	}
}

func ignoreNil(err error) error {
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}

// store writes fresh envelopes for loaded (nil = known missing) and keeps them locally.
// A failed write is not an error: the value is still right, the next read rebuilds.
func (c *Cache) store(ctx context.Context, loaded map[string][]byte, token string, since uint64) {
	now := c.nowMs()
	envs := make(map[string]*envelope, len(loaded))
	cmds := make(map[string]*redis.Cmd, len(loaded))
	_ = c.redisDo(func() error {
		_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for k, v := range loaded {
				e, physical := c.newEnvelope(v, now)
				b, err := json.Marshal(e)
				if err != nil {
					continue // not JSON: serve it, but do not cache it
				}
				envs[k] = e
				// EVAL, not EVALSHA: in a pipeline a NOSCRIPT reply comes too late to fall back.
				cmds[k] = storeScript.Eval(ctx, p, []string{c.keys.CacheLock(k), c.keys.Cache(k)}, token, b, physical.Milliseconds())
			}
			return nil
		})
		return err
	})
	for k, e := range envs {
		if n, err := cmds[k].Int(); err == nil && n == 1 {
			c.putLocal(k, e, now, since)
		}
	}
}

// storeScript writes an envelope only while the writer holds the key's rebuild lock.
//
// KEYS[1] the lock, KEYS[2] the envelope; ARGV[1] token, ARGV[2] envelope, ARGV[3] TTL ms;
// returns 1 if written.
//
//go:embed store.lua
var storeSource string

var storeScript = redis.NewScript(storeSource)

// newEnvelope returns the envelope for v and its Redis TTL. A negative envelope lives
// briefly: serving it stale buys nothing, and ids nobody asks again should not linger.
func (c *Cache) newEnvelope(v []byte, nowMs int64) (*envelope, time.Duration) {
	if v == nil {
		return &envelope{ExpireAt: nowMs + c.cfg.NegativeTTL.Milliseconds()}, 2 * c.cfg.NegativeTTL
	}
	logical := c.cfg.LogicalTTL
	if c.cfg.Jitter > 0 {
		logical += time.Duration(mrand.Int64N(int64(c.cfg.Jitter) + 1))
	}
	return &envelope{ExpireAt: nowMs + logical.Milliseconds(), Data: v}, max(c.cfg.PhysicalTTL, 2*logical)
}

// lock tries the rebuild lock of every key with SET NX PX and, in the same round trip and
// after the locks, reads the envelopes again (after): a request that saw a stale envelope
// may win a lock only after another request's rebuild finished, and must then take that
// fresh value rather than load again. On one Redis server the pipeline keeps this order;
// on a Cluster the lock and the envelope may live on different nodes, so there a late
// winner can, rarely, still load twice.
func (c *Cache) lock(ctx context.Context, keys []string, token string) (won, lost []string, after map[string]*envelope, err error) {
	var cmds []*redis.BoolCmd
	var read func() map[string]*envelope
	err = c.redisDo(func() error {
		_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			cmds = make([]*redis.BoolCmd, len(keys))
			for i, k := range keys {
				cmds[i] = p.SetNX(ctx, c.keys.CacheLock(k), token, c.cfg.LockTTL)
			}
			read = c.queueReads(ctx, p, keys)
			return nil
		})
		return ignoreNil(err)
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("take rebuild locks: %w", err)
	}
	for i, cmd := range cmds {
		if cmd.Val() {
			won = append(won, keys[i])
		} else {
			lost = append(lost, keys[i])
		}
	}
	return won, lost, read(), nil
}

// unlock releases the locks still held by token. EVAL rather than EVALSHA: inside a
// pipeline a NOSCRIPT reply comes too late to fall back, and the script is tiny. A failed
// unlock only delays the next rebuild until the lock's TTL.
func (c *Cache) unlock(ctx context.Context, keys []string, token string) {
	_ = c.redisDo(func() error {
		_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range keys {
				redislock.UnlockScript.Eval(ctx, p, []string{c.keys.CacheLock(k)}, token)
			}
			return nil
		})
		return err
	})
}

func (c *Cache) nowMs() int64 { return c.cfg.Now().UnixMilli() }

// flight is one in-progress resolution of a key inside this instance.
type flight struct {
	done chan struct{}
	val  []byte
	err  error
}

// flights is a singleflight for batches: a caller owns the keys nobody is resolving yet,
// resolves them in one go, and waits for the rest. Owners finish their own keys before
// waiting on others', so two batches that overlap cannot wait on each other.
type flights struct {
	mu sync.Mutex
	m  map[string]*flight
}

func (f *flights) claim(keys []string) (own []string, others map[string]*flight) {
	f.mu.Lock()
	defer f.mu.Unlock()
	others = map[string]*flight{}
	for _, k := range keys {
		if fl, ok := f.m[k]; ok {
			others[k] = fl
			continue
		}
		f.m[k] = &flight{done: make(chan struct{})}
		own = append(own, k)
	}
	return own, others
}

func (f *flights) finish(own []string, vals map[string][]byte, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range own {
		fl := f.m[k]
		delete(f.m, k)
		fl.val, fl.err = vals[k], err
		close(fl.done)
	}
}

func unique(keys []string) []string {
	seen := make(map[string]bool, len(keys))
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// sleep waits d or until ctx ends; it reports whether the full wait happened.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
