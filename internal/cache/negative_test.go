package cache

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestKnownMissingBounded: a flood of lookups of ids that do not exist writes at most
// MaxNegative known-missing envelopes to Redis per NegativeTTL window of an instance,
// each with a short TTL; the rest are kept in the instance's own level (bounded by its
// size), so every one of them is still answered without the database until it expires.
func TestKnownMissingBounded(t *testing.T) {
	_, m, r, clk := newTestCache(t)
	cfg := testConfig(clk)
	cfg.MaxNegative = 10
	c := New(r.Client, r.Keys, cfg)
	ctx := context.Background()
	missing := func(from int) []string {
		var keys []string
		for i := range 50 {
			keys = append(keys, fmt.Sprintf("movie:%d", from+i))
		}
		return keys
	}
	inRedis := func(keys []string) int {
		t.Helper()
		n := 0
		for _, k := range keys {
			ttl, err := r.Client.PTTL(ctx, r.Keys.Cache(k)).Result()
			if err != nil {
				t.Fatal(err)
			}
			if ttl > 0 {
				n++
				if ttl > 2*time.Minute {
					t.Errorf("%s lives %s in Redis, want at most a minute", k, ttl)
				}
			}
		}
		return n
	}
	first := missing(1_000_000)
	vals, err := c.GetMany(ctx, first, m.load)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		if v != nil {
			t.Fatalf("%s: %s, want missing", first[i], v)
		}
	}
	if n := inRedis(first); n != 10 {
		t.Fatalf("%d known-missing envelopes in Redis after 50 missing keys, want MaxNegative (10)", n)
	}
	asked := m.asked.Load()
	if _, err := c.GetMany(ctx, first, m.load); err != nil {
		t.Fatal(err)
	}
	if n := m.asked.Load() - asked; n != 0 {
		t.Errorf("a second read of the 50 missing keys asked the database for %d, want 0 (the local level knows them)", n)
	}
	// Within the same window no more are written; in the next one, MaxNegative more.
	if _, err := c.GetMany(ctx, missing(2_000_000), m.load); err != nil {
		t.Fatal(err)
	}
	if n := inRedis(missing(2_000_000)); n != 0 {
		t.Errorf("%d more envelopes written within the window, want 0", n)
	}
	clk.Advance(c.cfg.NegativeTTL)
	if _, err := c.GetMany(ctx, missing(3_000_000), m.load); err != nil {
		t.Fatal(err)
	}
	if n := inRedis(missing(3_000_000)); n != 10 {
		t.Errorf("%d envelopes written in the next window, want 10", n)
	}
}
