package cache

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow/ent/movie"
	"seatflow/internal/testenv"
)

func newClock() *testenv.Clock { return testenv.NewClock(time.Now()) }

// movies is the "database" behind the cache: the real movies table, with a loader that
// counts its calls and the keys it was asked for.
type movies struct {
	db    *testenv.DB
	loads atomic.Int64
	asked atomic.Int64
	// delay widens race windows in the stampede tests.
	delay time.Duration
}

type movieJSON struct {
	ID    int    `json:"id"`
	Title string `json:"title"`
}

func (m *movies) load(ctx context.Context, keys []string) (map[string][]byte, error) {
	m.loads.Add(1)
	m.asked.Add(int64(len(keys)))
	if m.delay > 0 {
		time.Sleep(m.delay)
	}
	var ids []int
	for _, k := range keys {
		id, err := strconv.Atoi(strings.TrimPrefix(k, "movie:"))
		if err != nil {
			return nil, fmt.Errorf("bad key %q", k)
		}
		ids = append(ids, id)
	}
	rows, err := m.db.Client.Movie.Query().Where(movie.IDIn(ids...)).All(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, r := range rows {
		b, _ := json.Marshal(movieJSON{ID: r.ID, Title: r.Title})
		out["movie:"+strconv.Itoa(r.ID)] = b
	}
	return out, nil
}

func (m *movies) create(t *testing.T, title string) int {
	t.Helper()
	now := time.Now()
	r, err := m.db.Client.Movie.Create().SetTitle(title).SetDurationMin(100).
		SetCreatedAt(now).SetUpdatedAt(now).Save(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return r.ID
}

// rename changes a movie behind the cache's back.
func (m *movies) rename(t *testing.T, id int, title string) {
	t.Helper()
	if err := m.db.Client.Movie.UpdateOneID(id).SetTitle(title).Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func newMovies(t *testing.T) *movies { return &movies{db: testenv.MySQL(t)} }

// newTestCache is one cache instance over a fresh Redis prefix, with its movies table and
// clock.
func newTestCache(t *testing.T) (*Cache, *movies, *testenv.Redis, *testenv.Clock) {
	t.Helper()
	r := testenv.NewRedis(t)
	m := newMovies(t)
	clk := newClock()
	return New(r.Client, r.Keys, testConfig(clk)), m, r, clk
}

func testConfig(clk *testenv.Clock) Config {
	return Config{LocalBytes: 1 << 20, Now: clk.Now}
}

func title(t *testing.T, b []byte) string {
	t.Helper()
	if b == nil {
		return "<missing>"
	}
	var m movieJSON
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return m.Title
}

func getTitle(t *testing.T, c *Cache, key string, load LoadFunc) string {
	t.Helper()
	b, err := c.Get(context.Background(), key, load)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	return title(t, b)
}

// putEnvelope overwrites a key's Redis envelope by hand.
func putEnvelope(t *testing.T, r *testenv.Redis, key string, data []byte, expireAt time.Time) {
	t.Helper()
	b, _ := json.Marshal(envelope{ExpireAt: expireAt.UnixMilli(), Data: data})
	if err := r.Client.Set(context.Background(), r.Keys.Cache(key), b, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
}

func readEnvelope(t *testing.T, r *testenv.Redis, key string) *envelope {
	t.Helper()
	s, err := r.Client.Get(context.Background(), r.Keys.Cache(key)).Result()
	if err == redis.Nil {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	var e envelope
	if err := json.Unmarshal([]byte(s), &e); err != nil {
		t.Fatal(err)
	}
	return &e
}

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

func TestStampede(t *testing.T) {
	r := testenv.NewRedis(t)
	m := newMovies(t)
	m.delay = 50 * time.Millisecond
	clk := newClock()
	// Three instances, as three servers would have, sharing one Redis prefix.
	instances := []*Cache{
		New(r.Client, r.Keys, testConfig(clk)),
		New(testenv.NewRedisClient(t), r.Keys, testConfig(clk)),
		New(testenv.NewRedisClient(t), r.Keys, testConfig(clk)),
	}
	race := func(t *testing.T, key string, valid ...string) {
		t.Helper()
		m.loads.Store(0)
		var errs atomic.Int64
		var wrong sync.Map
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := 0; i < 300; i++ {
			wg.Add(1)
			go func(c *Cache) {
				defer wg.Done()
				<-start
				b, err := c.Get(context.Background(), key, m.load)
				if err != nil {
					errs.Add(1)
					return
				}
				got := "<missing>"
				var mj movieJSON
				if b != nil && json.Unmarshal(b, &mj) == nil {
					got = mj.Title
				}
				for _, v := range valid {
					if got == v {
						return
					}
				}
				wrong.Store(got, true)
			}(instances[i%3])
		}
		close(start)
		wg.Wait()
		if got := m.loads.Load(); got != 1 {
			t.Errorf("database loads: got %d, want 1", got)
		}
		if got := errs.Load(); got != 0 {
			t.Errorf("errors: got %d, want 0", got)
		}
		wrong.Range(func(k, _ any) bool {
			t.Errorf("a reader got %q, want one of %v", k, valid)
			return true
		})
	}

	t.Run("LogicallyExpiredHotKey", func(t *testing.T) {
		id := m.create(t, "New")
		key := "movie:" + strconv.Itoa(id)
		old, _ := json.Marshal(movieJSON{ID: id, Title: "Old"})
		putEnvelope(t, r, key, old, clk.Now().Add(-time.Second))
		race(t, key, "Old", "New")
		if got := title(t, readEnvelope(t, r, key).value()); got != "New" {
			t.Errorf("envelope after the race: got %q, want New", got)
		}
	})

	t.Run("PhysicallyMissingKey", func(t *testing.T) {
		id := m.create(t, "Cold")
		race(t, "movie:"+strconv.Itoa(id), "Cold")
	})

	// With a fast load, a reader that saw the stale envelope can win the lock after the
	// first rebuild already finished: it must take the fresh envelope, not load again.
	t.Run("FastLoadStillOneLoad", func(t *testing.T) {
		m.delay = 0
		defer func() { m.delay = 50 * time.Millisecond }()
		for round := 0; round < 5; round++ {
			id := m.create(t, "New")
			key := "movie:" + strconv.Itoa(id)
			old, _ := json.Marshal(movieJSON{ID: id, Title: "Old"})
			putEnvelope(t, r, key, old, clk.Now().Add(-time.Second))
			race(t, key, "Old", "New")
		}
	})
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

// waitFor polls cond every 5 ms until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return cond()
}

func TestCrossInstance(t *testing.T) {
	r := testenv.NewRedis(t)
	m := newMovies(t)
	clk := newClock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	opt, err := redis.ParseURL(testenv.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	opt.ClientName = testenv.RandomName("sftestb")
	var clientB redis.UniversalClient = redis.NewClient(opt)
	if os.Getenv("SEATFLOW_TEST_REDIS_CLUSTER") != "" {
		clientB = testenv.NewRedisClient(t) // B must be on the same cluster as A
	}
	defer clientB.Close()

	a := New(r.Client, r.Keys, testConfig(clk))
	// What B's drop hook saw (the response cache's view): the keys, and whether the
	// local copy was already gone when it ran.
	var dropMu sync.Mutex
	var drops [][]string
	var dropBeforeLocal bool
	var b *Cache
	cfgB := testConfig(clk)
	cfgB.OnDrop = func(keys []string) {
		dropMu.Lock()
		defer dropMu.Unlock()
		drops = append(drops, keys)
		for _, k := range keys {
			if _, err := b.local.Get([]byte(k)); err == nil {
				dropBeforeLocal = true
			}
		}
	}
	b = New(clientB, r.Keys, cfgB)
	dropped := func(want []string) bool {
		dropMu.Lock()
		defer dropMu.Unlock()
		for _, d := range drops {
			if slices.Equal(d, want) {
				return true
			}
		}
		return false
	}
	done := make(chan struct{})
	go func() { b.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	if !waitFor(5*time.Second, func() bool { return b.Stats().LocalFlushes >= 1 }) {
		t.Fatal("instance B never subscribed")
	}

	id := m.create(t, "Old")
	key := "movie:" + strconv.Itoa(id)
	getTitle(t, a, key, m.load)
	if got := getTitle(t, b, key, m.load); got != "Old" {
		t.Fatalf("warm B: got %q, want Old", got)
	}

	t.Run("InvalidateReachesOtherInstance", func(t *testing.T) {
		m.rename(t, id, "New")
		if err := a.Invalidate(ctx, key); err != nil {
			t.Fatal(err)
		}
		gone := waitFor(100*time.Millisecond, func() bool {
			_, err := b.local.Get([]byte(key))
			return err != nil
		})
		if !gone {
			t.Fatal("B still holds the key locally 100 ms after A invalidated it")
		}
		if got := getTitle(t, b, key, m.load); got != "New" {
			t.Errorf("B: got %q, want New", got)
		}
		if n := b.Stats().InvalidationsReceived; n != 1 {
			t.Errorf("B invalidations received: got %d, want 1", n)
		}
		if !dropped([]string{key}) || dropBeforeLocal {
			t.Errorf("B's drop hook: saw %v, ran before the local drop: %v", drops, dropBeforeLocal)
		}
	})

	t.Run("LostSubscriptionFlushesLocal", func(t *testing.T) {
		if os.Getenv("SEATFLOW_TEST_REDIS_CLUSTER") != "" {
			t.Skip("cuts a connection by client name on a single Redis server")
		}
		// An invalidation B misses: the envelope goes, but no broadcast reaches B.
		m.rename(t, id, "Newer")
		if err := r.Client.Del(ctx, r.Keys.Cache(key)).Err(); err != nil {
			t.Fatal(err)
		}
		if got := getTitle(t, b, key, m.load); got != "New" {
			t.Fatalf("B before the cut: got %q, want its local New", got)
		}
		flushes := b.Stats().LocalFlushes
		killPubSub(t, r.Client, opt.ClientName)
		if !waitFor(5*time.Second, func() bool { return b.Stats().LocalFlushes > flushes }) {
			t.Fatal("B did not resubscribe after its connection was cut")
		}
		if got := getTitle(t, b, key, m.load); got != "Newer" {
			t.Errorf("B after resubscribing: got %q, want Newer", got)
		}
		if !dropped(nil) {
			t.Errorf("B's drop hook was not told of the flush: %v", drops)
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

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

// killPubSub cuts the pub/sub connections of the client named name (and only those: other
// tests share the server).
func killPubSub(t *testing.T, admin redis.UniversalClient, name string) {
	t.Helper()
	list, err := admin.ClientList(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	for _, line := range strings.Split(list, "\n") {
		fields := strings.Fields(line)
		var id string
		var named, subscribed bool
		for _, f := range fields {
			switch {
			case strings.HasPrefix(f, "id="):
				id = strings.TrimPrefix(f, "id=")
			case f == "name="+name:
				named = true
			case strings.HasPrefix(f, "sub=") && f != "sub=0":
				subscribed = true
			}
		}
		if named && subscribed {
			n, _ := strconv.ParseInt(id, 10, 64)
			if err := admin.ClientKillByFilter(context.Background(), "ID", strconv.FormatInt(n, 10)).Err(); err != nil {
				t.Fatal(err)
			}
			killed++
		}
	}
	if killed == 0 {
		t.Fatalf("no pub/sub connection named %s found", name)
	}
}

func TestRedisDown(t *testing.T) {
	m := newMovies(t)
	m.delay = 300 * time.Millisecond
	clk := newClock()
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1, DialTimeout: time.Second})
	defer dead.Close()
	r := testenv.NewRedis(t)
	c := New(dead, r.Keys, testConfig(clk))
	id := m.create(t, "Film")
	key := "movie:" + strconv.Itoa(id)

	t.Run("ReadsAnswerFromLoader", func(t *testing.T) {
		for i := 0; i < 5; i++ {
			if got := getTitle(t, c, key, m.load); got != "Film" {
				t.Fatalf("read %d: got %q, want Film", i, got)
			}
		}
		if got := c.Stats().Breaker; got != "open" {
			t.Errorf("breaker: got %s, want open", got)
		}
	})

	t.Run("OneLoadPerKeyWithBreakerOpen", func(t *testing.T) {
		m.loads.Store(0)
		var wg sync.WaitGroup
		var errs atomic.Int64
		start := make(chan struct{})
		for i := 0; i < 50; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if b, err := c.Get(context.Background(), key, m.load); err != nil || b == nil {
					errs.Add(1)
				}
			}()
		}
		close(start)
		wg.Wait()
		if n := errs.Load(); n != 0 {
			t.Errorf("failed reads: got %d, want 0", n)
		}
		if n := m.loads.Load(); n != 1 {
			t.Errorf("loads: got %d, want 1", n)
		}
		if got := c.Stats().Breaker; got != "open" {
			t.Errorf("breaker: got %s, want open", got)
		}
	})
}

// TestRedisLost is Redis going away under a warm cache: Invalidate still drops the local
// copy and reports the error; reads go to the database.
func TestRedisLost(t *testing.T) {
	r := testenv.NewRedis(t)
	m := newMovies(t)
	clk := newClock()
	client := testenv.NewRedisClient(t)
	c := New(client, r.Keys, testConfig(clk))
	id := m.create(t, "Old")
	key := "movie:" + strconv.Itoa(id)
	getTitle(t, c, key, m.load)
	m.rename(t, id, "New")
	client.Close()

	if err := c.Invalidate(context.Background(), key); err == nil {
		t.Error("Invalidate with Redis gone: got nil error, want one to log")
	}
	if got := getTitle(t, c, key, m.load); got != "New" {
		t.Errorf("got %q, want New", got)
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

// TestRebuildRacingAnInvalidation: a rebuild reads the database, then a write commits and
// invalidates the key before the rebuild stores its (now old) value. The old value must
// not come back: the invalidation took the rebuild's lock, so its store is refused.
func TestRebuildRacingAnInvalidation(t *testing.T) {
	c, m, r, _ := newTestCache(t)
	id := m.create(t, "Old")
	key := "movie:" + strconv.Itoa(id)

	loaded := make(chan struct{})
	proceed := make(chan struct{})
	slowLoad := func(ctx context.Context, keys []string) (map[string][]byte, error) {
		vals, err := m.load(ctx, keys) // reads "Old"
		close(loaded)
		<-proceed // the write and its invalidation happen here
		return vals, err
	}
	got := make(chan string)
	go func() { got <- getTitle(t, c, key, slowLoad) }()
	<-loaded
	m.rename(t, id, "New")
	if err := c.Invalidate(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	close(proceed)
	if title := <-got; title != "Old" {
		t.Fatalf("the racing read got %q, want the value it loaded (Old)", title)
	}
	if e := readEnvelope(t, r, key); e != nil && title(t, e.value()) == "Old" {
		t.Fatal("the rebuild stored the old value after the invalidation")
	}
	if title := getTitle(t, c, key, m.load); title != "New" {
		t.Fatalf("next read: got %q, want New", title)
	}
}

// TestLocalPutAfterDropIsRefused: a value read from Redis just before an invalidation
// deleted it must not enter the local level after the invalidation's local drop (the
// broadcast can arrive while the read is still on its way back).
func TestLocalPutAfterDropIsRefused(t *testing.T) {
	r := testenv.NewRedis(t)
	clk := newClock()
	c := New(r.Client, r.Keys, testConfig(clk))
	now := clk.Now().UnixMilli()
	old := &envelope{ExpireAt: now + time.Hour.Milliseconds(), Data: json.RawMessage(`{"title":"Old"}`)}
	since := c.dropGen() // the read begins
	c.dropLocal([]string{"movie:1"})
	c.putLocal("movie:1", old, now, since) // and its answer lands after the drop
	if _, err := c.local.Get([]byte("movie:1")); err == nil {
		t.Fatal("a value read before the drop entered the local level after it")
	}
	c.putLocal("movie:1", old, now, c.dropGen())
	if _, err := c.local.Get([]byte("movie:1")); err != nil {
		t.Fatal("a value read after the drop was not kept")
	}
}
