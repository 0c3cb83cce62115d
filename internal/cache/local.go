package cache

import (
	"context"
	"encoding/binary"
	"math"
	"time"
)

// A local entry is one flag byte (1 found, 0 known missing), the second (on the cache's
// clock, big-endian uint32) it stops being served locally, then the value.
const localHeader = 5

// fromLocal fills got from freecache with one multi-get and returns the keys it lacks and
// the earliest local expiry among the keys it found. The hits are counted when every key
// was found or count is set.
func (c *Cache) fromLocal(uniq []string, got map[string][]byte, count bool) (misses []string, until uint32) {
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
		until = min(until, binary.BigEndian.Uint32(vals[i][1:localHeader]))
		if vals[i][0] == 1 {
			got[k] = vals[i][localHeader:]
		} else {
			got[k] = nil
		}
	}
	if count || len(misses) == 0 {
		for _, v := range got {
			c.stats.localHits.Add(1)
			if v == nil {
				c.stats.negativeHits.Add(1)
			}
		}
	}
	return misses, until
}

// Local returns the value of each key, in key order, when every one of them is in the
// local level: no Redis, no database, no wait. Otherwise it returns false and records
// nothing: the caller reads through GetMany.
func (c *Cache) Local(ctx context.Context, keys []string) ([][]byte, bool) {
	if c.cfg.Disabled {
		return nil, false
	}
	uniq := unique(keys)
	got := make(map[string][]byte, len(uniq))
	misses, until := c.fromLocal(uniq, got, false)
	if len(misses) > 0 {
		return nil, false
	}
	traceOf(ctx).read(uniq, until, false)
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = got[k]
	}
	return out, true
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
