package cache

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow/ent/movie"
	"seatflow/internal/tooling/testenv"
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

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
