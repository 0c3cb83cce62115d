package cache

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow/internal/tooling/testenv"
)

func TestCrossInstance(t *testing.T) {
	r := testenv.NewRedis(t)
	m := newMovies(t)
	clk := newClock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var clientB redis.UniversalClient
	clientName := testenv.RandomName("sftestb")
	if os.Getenv("SEATFLOW_TEST_REDIS_CLUSTER") != "" {
		clientB = testenv.NewRedisClient(t) // B must be on the same cluster as A
	} else {
		opt, err := redis.ParseURL(testenv.RedisURL())
		if err != nil {
			t.Fatal(err)
		}
		opt.ClientName = clientName
		clientB = redis.NewClient(opt)
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
		killPubSub(t, r.Client, clientName)
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
