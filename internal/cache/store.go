package cache

import (
	"context"
	_ "embed"
	"encoding/json"
	mrand "math/rand/v2"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

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
				if v == nil && !c.negatives.take(now, c.cfg.NegativeTTL, c.cfg.MaxNegative) {
					c.putLocal(k, e, now, since) // over the bound: this instance alone knows it
					continue
				}
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

//go:embed store.lua
var storeSource string

// storeScript writes an envelope only while the writer holds the key's rebuild lock; its
// KEYS, ARGV and reply are in store.lua.
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

// negativeBudget bounds the known-missing envelopes written to Redis (ids that do not exist
// cost a client nothing to invent): it counts them in a fixed window of
// NegativeTTL. A fixed window is all the bound needs: as each envelope lives 2 ×
// NegativeTTL in Redis, an instance has at most 3 × MaxNegative there at once.
type negativeBudget struct {
	mu    sync.Mutex
	start int64 // the window's start, ms
	used  int
}

// take reports whether one more known-missing envelope may be written at nowMs.
func (b *negativeBudget) take(nowMs int64, window time.Duration, limit int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if nowMs-b.start >= window.Milliseconds() {
		b.start, b.used = nowMs, 0
	}
	if b.used >= limit {
		return false
	}
	b.used++
	return true
}
