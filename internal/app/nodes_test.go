package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"seatflow/internal/nodeid"
	"seatflow/internal/tooling/testenv"
)

// TestNodesWorkPerPoint: nodes(ids: [100 missing ids]) was charged 1 point (the answer
// held no object), took 250–350 ms (one batch window per id) and wrote 100 known-missing
// entries. Each id is charged a point, found or not; the ids of one type are read in one
// batch (one SQL statement for 100 missing movies, one for 100 missing seats); and the
// known-missing entries go to the cache Redis, briefly, never to the seat Redis.
func TestNodesWorkPerPoint(t *testing.T) {
	cacheRedis, cacheURL := cacheRedisOf(t, 6)
	a := newTestApp(t, "-cache-redis-url", cacheURL)
	t.Cleanup(func() { testenv.DeletePrefix(cacheRedis, a.Keys.Prefix) })
	ids := func(typ string, from int) []string {
		var out []string
		for i := range 100 {
			out = append(out, nodeid.Encode(typ, from+i))
		}
		return out
	}
	const nodesQ = `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`
	// The instance's background work makes its first passes at start (the sales closer,
	// the outbox relay): let them end before statements are counted; the next ones are
	// seconds away.
	a.do(a.admin, nodesQ, map[string]any{"ids": ids(nodeid.Movie, 2_000_000)})
	time.Sleep(200 * time.Millisecond)
	for _, typ := range []string{nodeid.Movie, nodeid.Showtime, nodeid.Hall, nodeid.Seat, nodeid.Order} {
		t.Run(typ, func(t *testing.T) {
			a.db.Queries.Reset()
			start := time.Now()
			r := a.do(a.admin, nodesQ, map[string]any{"ids": ids(typ, 1_000_000)})
			took := time.Since(start)
			if len(r.Errors) > 0 || strings.Count(string(r.Data), "null") != 100 {
				t.Fatalf("100 missing %s ids: %+v %s", typ, r.Errors, r.Data)
			}
			cost, _ := r.Extensions["cost"].(map[string]any)
			if requested, actual := cost["requestedQueryCost"], cost["actualQueryCost"]; requested != 101.0 || actual != 100.0 {
				t.Errorf("charged: requested %v, actual %v; want 101 (the list and an element per id) and 100 (a point per id, found or not)", requested, actual)
			}
			if n := a.db.Queries.Count(); n > 1 {
				t.Errorf("100 missing ids took %d SQL statements, want at most 1 (one batch)", n)
			}
			t.Logf("100 missing %s ids: %s", typ, took)
			if took > time.Second {
				t.Errorf("100 missing ids took %s", took)
			}
		})
	}
	t.Run("KnownMissingInTheCacheRedisOnly", func(t *testing.T) {
		ctx := context.Background()
		inMain, _ := a.Redis.Keys(ctx, a.Keys.Prefix+":cache:*").Result()
		inCache, _ := cacheRedis.Keys(ctx, a.Keys.Prefix+":cache:*").Result()
		if len(inMain) != 0 || len(inCache) == 0 {
			t.Fatalf("known-missing entries: %d in the seat Redis, %d in the cache Redis; want none and some", len(inMain), len(inCache))
		}
		for _, k := range inCache[:5] {
			if ttl := cacheRedis.PTTL(ctx, k).Val(); ttl <= 0 || ttl > time.Minute {
				t.Errorf("%s lives %s, want a short TTL (at most a minute)", k, ttl)
			}
		}
	})
	t.Run("FoundNodesStillCountAsObjects", func(t *testing.T) {
		movie := a.createMovie("Metropolis", 153)
		r := a.do("", `query($ids: [ID!]!) { nodes(ids: $ids) { id ... on Movie { title } } }`, map[string]any{"ids": []string{movie, movie}})
		if !strings.Contains(string(r.Data), "Metropolis") {
			t.Fatalf("nodes of a movie: %s %+v", r.Data, r.Errors)
		}
		if cost, _ := r.Extensions["cost"].(map[string]any); cost["actualQueryCost"] != 2.0 {
			t.Errorf("2 ids charged %v, want 2", cost["actualQueryCost"])
		}
	})
}
