package cache

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow/internal/redislock"
)

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
