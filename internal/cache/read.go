package cache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

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
	misses, until := c.fromLocal(uniq, got, true)
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
