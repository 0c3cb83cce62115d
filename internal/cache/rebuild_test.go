package cache

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seatflow/internal/tooling/testenv"
)

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
