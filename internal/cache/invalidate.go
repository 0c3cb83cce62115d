package cache

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// invalidation is the broadcast payload: the keys every instance must drop locally.
type invalidation struct {
	Origin string   `json:"origin"`
	Keys   []string `json:"keys"`
}

// Invalidate drops keys from this instance's local cache, deletes their Redis envelopes
// and tells every other instance to drop its local copy. The local drop happens even when
// Redis is down; the error then says the other levels were not reached, and the outbox
// relay replays the invalidation later.
func (c *Cache) Invalidate(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	c.dropLocal(keys)
	payload, err := json.Marshal(invalidation{Origin: c.origin, Keys: keys})
	if err != nil {
		return fmt.Errorf("invalidate %v: %w", keys, err)
	}
	err = c.redisDo(func() error {
		// DEL before PUBLISH, in separate round trips: a Cluster pipeline may run them on
		// different nodes in any order, and an instance told first could re-read the old
		// envelope into its local cache.
		if _, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range keys {
				// The lock goes too: a rebuild in flight read the database before this
				// write, and without its lock it cannot store the old value (store.lua).
				p.Del(ctx, c.keys.Cache(k), c.keys.CacheLock(k))
			}
			return nil
		}); err != nil {
			return err
		}
		return c.rdb.Publish(ctx, c.keys.CacheInvalidations(), payload).Err()
	})
	if err != nil {
		return fmt.Errorf("invalidate %v: %w", keys, err)
	}
	c.stats.invalidationsSent.Add(1)
	return nil
}

// Run keeps this instance subscribed to the invalidation channel until ctx ends, dropping
// the local copies other instances invalidate. Every (re)subscription flushes the whole
// local cache: while the connection was down, broadcasts may have been missed, and a
// missed one would leave a stale copy for up to LocalTTL.
func (c *Cache) Run(ctx context.Context) {
	ps := c.rdb.Subscribe(ctx, c.keys.CacheInvalidations())
	defer ps.Close()
	// Close unblocks Receive when ctx ends.
	stop := context.AfterFunc(ctx, func() { _ = ps.Close() })
	defer stop()

	const minBackoff, maxBackoff = 50 * time.Millisecond, 2 * time.Second
	backoff := minBackoff
	for {
		msg, err := ps.Receive(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			// go-redis reconnects and resubscribes on the next Receive; the confirmation
			// that follows flushes the local cache. Back off while Redis stays down.
			if !sleep(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		backoff = minBackoff
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				c.clearLocal()
			}
		case *redis.Message:
			var inv invalidation
			if json.Unmarshal([]byte(m.Payload), &inv) != nil {
				continue
			}
			c.dropLocal(inv.Keys)
			if inv.Origin != c.origin {
				c.stats.invalidationsReceived.Add(1)
			}
		}
	}
}
