package cache

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow/internal/tooling/testenv"
)

func TestReadPath(t *testing.T) {
	c, m, r, clk := newTestCache(t)
	id := m.create(t, "Old")
	key := "movie:" + strconv.Itoa(id)

	if got := getTitle(t, c, key, m.load); got != "Old" {
		t.Fatalf("warm: got %q, want Old", got)
	}
	m.rename(t, id, "New")

	t.Run("ChangedBehindItsBackStillOld", func(t *testing.T) {
		if got := getTitle(t, c, key, m.load); got != "Old" {
			t.Errorf("local: got %q, want Old", got)
		}
		// Another instance has no local copy: it must be answered by the Redis envelope.
		other := New(r.Client, r.Keys, testConfig(clk))
		if got := getTitle(t, other, key, m.load); got != "Old" {
			t.Errorf("redis: got %q, want Old", got)
		}
		if got := m.loads.Load(); got != 1 {
			t.Errorf("loads: got %d, want 1", got)
		}
		if s := other.Stats(); s.RedisHits != 1 || s.DBLoads != 0 {
			t.Errorf("other instance stats: got %+v, want 1 redis hit, 0 db loads", s)
		}
	})

	t.Run("InvalidateShowsNew", func(t *testing.T) {
		if err := c.Invalidate(context.Background(), key); err != nil {
			t.Fatal(err)
		}
		if got := getTitle(t, c, key, m.load); got != "New" {
			t.Errorf("got %q, want New", got)
		}
	})

	t.Run("ExpiredEnvelopeRebuilt", func(t *testing.T) {
		m.rename(t, id, "Newest")
		old, _ := json.Marshal(movieJSON{ID: id, Title: "Old"})
		putEnvelope(t, r, key, old, clk.Now().Add(-time.Second))
		fresh := New(r.Client, r.Keys, testConfig(clk)) // no local copy
		if got := getTitle(t, fresh, key, m.load); got != "Newest" {
			t.Errorf("got %q, want Newest", got)
		}
		e := readEnvelope(t, r, key)
		if e == nil || !e.fresh(clk.Now().UnixMilli()) || title(t, e.value()) != "Newest" {
			t.Errorf("envelope after rebuild: got %+v, want a fresh one with Newest", e)
		}
		if n, err := r.Client.Exists(context.Background(), r.Keys.CacheLock(key)).Result(); err != nil || n != 0 {
			t.Errorf("rebuild lock left behind: exists=%d err=%v", n, err)
		}
	})

	t.Run("LogicalExpiryFollowsClock", func(t *testing.T) {
		m.rename(t, id, "Later")
		before := m.loads.Load()
		if got := getTitle(t, c, key, m.load); got == "Later" {
			t.Fatalf("got %q before expiry, want the cached title", got)
		}
		clk.Advance(11*time.Minute + time.Second) // past LogicalTTL + Jitter and LocalTTL
		if got := getTitle(t, c, key, m.load); got != "Later" {
			t.Errorf("got %q after expiry, want Later", got)
		}
		if got := m.loads.Load() - before; got != 1 {
			t.Errorf("loads: got %d, want 1", got)
		}
	})
}

func TestNegativeCache(t *testing.T) {
	c, m, _, _ := newTestCache(t)
	// A fresh database numbers its first movie 1: look it up before it exists.
	const key = "movie:1"
	queries := m.db.Queries.Count()
	for i := 0; i < 100; i++ {
		if got := getTitle(t, c, key, m.load); got != "<missing>" {
			t.Fatalf("lookup %d: got %q, want missing", i, got)
		}
	}
	if n := m.loads.Load(); n != 1 {
		t.Errorf("loads: got %d, want 1", n)
	}
	if n := m.db.Queries.Count() - queries; n != 1 {
		t.Errorf("SQL queries: got %d, want 1", n)
	}
	if s := c.Stats(); s.NegativeHits != 99 {
		t.Errorf("negative hits: got %d, want 99", s.NegativeHits)
	}

	if id := m.create(t, "Arrived"); id != 1 {
		t.Fatalf("created id %d, want 1", id)
	}
	if err := c.Invalidate(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if got := getTitle(t, c, key, m.load); got != "Arrived" {
		t.Errorf("after create: got %q, want Arrived", got)
	}
}

// commandCounter counts the Redis commands a client sends, pipelined or not.
type commandCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *commandCounter) add(name string) {
	h.mu.Lock()
	h.n[name]++
	h.mu.Unlock()
}

func (h *commandCounter) get(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[name]
}

func (h *commandCounter) reset() {
	h.mu.Lock()
	h.n = map[string]int{}
	h.mu.Unlock()
}

func (h *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.add(cmd.Name())
		return next(ctx, cmd)
	}
}

func (h *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.add(cmd.Name())
		}
		return next(ctx, cmds)
	}
}

func TestBatching(t *testing.T) {
	r := testenv.NewRedis(t)
	m := newMovies(t)
	clk := newClock()
	var keys []string
	for i := 0; i < 50; i++ {
		keys = append(keys, "movie:"+strconv.Itoa(m.create(t, "Movie "+strconv.Itoa(i))))
	}
	// Another instance warms the first 20 into Redis.
	warm := New(r.Client, r.Keys, testConfig(clk))
	if _, err := warm.GetMany(context.Background(), keys[:20], m.load); err != nil {
		t.Fatal(err)
	}

	client := testenv.NewRedisClient(t)
	counter := &commandCounter{n: map[string]int{}}
	client.AddHook(counter)
	c := New(client, r.Keys, testConfig(clk))
	m.loads.Store(0)
	m.asked.Store(0)

	// Reversed, with a duplicate and an unknown id, to check results follow key order.
	ask := []string{"movie:999999"}
	for i := len(keys) - 1; i >= 0; i-- {
		ask = append(ask, keys[i])
	}
	ask = append(ask, keys[0])
	got, err := c.GetMany(context.Background(), ask, m.load)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ask) {
		t.Fatalf("results: got %d, want %d", len(got), len(ask))
	}
	if got[0] != nil {
		t.Errorf("unknown id: got %s, want nil", got[0])
	}
	for i, k := range ask[1:] {
		var mj movieJSON
		if err := json.Unmarshal(got[i+1], &mj); err != nil || "movie:"+strconv.Itoa(mj.ID) != k {
			t.Errorf("result %d: got %s, want %s", i+1, got[i+1], k)
		}
	}
	if n := m.loads.Load(); n != 1 {
		t.Errorf("load calls: got %d, want 1", n)
	}
	if n := m.asked.Load(); n != 31 {
		t.Errorf("keys loaded: got %d, want 31 (30 cold + the unknown id)", n)
	}
	// One read of the 51 keys, then one of the 31 misses inside the lock pipeline (the
	// re-check after taking the locks, in the same round trip as the locks).
	if os.Getenv("SEATFLOW_TEST_REDIS_CLUSTER") != "" {
		// A Cluster refuses a cross-slot MGET: the reads go as pipelines of GETs.
		if n := counter.get("get"); n != 51+31 || counter.get("mget") != 0 {
			t.Errorf("cluster: GETs %d, MGETs %d, want pipelines of 51 and 31 GETs", n, counter.get("mget"))
		}
	} else {
		if n := counter.get("mget"); n != 2 {
			t.Errorf("MGETs: got %d, want 2 (the read, and the re-check in the lock pipeline)", n)
		}
		if n := counter.get("get"); n != 0 {
			t.Errorf("GETs: got %d, want 0", n)
		}
	}

	t.Run("SecondReadIsLocal", func(t *testing.T) {
		counter.reset()
		if _, err := c.GetMany(context.Background(), ask, m.load); err != nil {
			t.Fatal(err)
		}
		if n := m.loads.Load(); n != 1 {
			t.Errorf("load calls: got %d, want 1", n)
		}
		if n := counter.get("mget"); n != 0 {
			t.Errorf("MGETs: got %d, want 0", n)
		}
	})
}

// TestTrace: a traced read records its keys, and only reads answered wholly by the local
// level give an expiry, the earliest of the copies read.
func TestTrace(t *testing.T) {
	c, m, _, clk := newTestCache(t)
	id := m.create(t, "Traced")
	key, missing := "movie:"+strconv.Itoa(id), "movie:999999999"
	read := func() *Trace {
		tr := &Trace{}
		if _, err := c.GetMany(WithTrace(context.Background(), tr), []string{key, missing}, m.load); err != nil {
			t.Fatal(err)
		}
		return tr
	}
	if _, ok := read().Until(); ok {
		t.Fatal("a read that went to the database gave an expiry")
	}
	start := clk.Now()
	tr := read()
	until, ok := tr.Until()
	if !ok {
		t.Fatal("a read answered by the local level gave no expiry")
	}
	// The earliest copy: the known-missing entry, kept locally no longer than NegativeTTL.
	cfg := testConfig(clk).withDefaults()
	if want := start.Add(min(cfg.LocalTTL, cfg.NegativeTTL)); until.After(want) || until.Before(want.Add(-time.Second)) {
		t.Errorf("until = %v, want the negative entry's end %v", until, want)
	}
	if got := tr.Keys(); !slices.Equal(sorted(got), sorted([]string{key, missing})) {
		t.Errorf("keys = %v", got)
	}
	c.dropLocal([]string{key})
	if _, ok := read().Until(); ok {
		t.Fatal("a read of a dropped key gave an expiry")
	}
}

func TestDisabled(t *testing.T) {
	r := testenv.NewRedis(t)
	m := newMovies(t)
	cfg := testConfig(newClock())
	cfg.Disabled = true
	c := New(r.Client, r.Keys, cfg)
	id := m.create(t, "Film")
	key := "movie:" + strconv.Itoa(id)
	for i := 0; i < 3; i++ {
		getTitle(t, c, key, m.load)
	}
	if n := m.loads.Load(); n != 3 {
		t.Errorf("loads: got %d, want 3", n)
	}
	if e := readEnvelope(t, r, key); e != nil {
		t.Errorf("envelope written while disabled: %+v", e)
	}
}
