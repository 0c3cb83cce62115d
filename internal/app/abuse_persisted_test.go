package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"seatflow/internal/tooling/testenv"
)

// persisted is a persisted-query request: the document's hash, with the document when
// registering it (query not empty).
func persisted(query, hashOf string) map[string]any {
	sum := sha256.Sum256([]byte(hashOf))
	req := map[string]any{"extensions": map[string]any{"persistedQuery": map[string]any{"version": 1,
		"sha256Hash": hex.EncodeToString(sum[:])}}}
	if query != "" {
		req["query"] = query
	}
	return req
}

// keysLike lists the keys matching pattern, on every master of a cluster.
func keysLike(t *testing.T, c redis.UniversalClient, pattern string) []string {
	t.Helper()
	ctx := context.Background()
	cluster, ok := c.(*redis.ClusterClient)
	if !ok {
		keys, err := c.Keys(ctx, pattern).Result()
		if err != nil {
			t.Fatal(err)
		}
		return keys
	}
	var mu sync.Mutex
	var keys []string
	err := cluster.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		found, err := m.Keys(ctx, pattern).Result()
		mu.Lock()
		keys = append(keys, found...)
		mu.Unlock()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// Finding: any anonymous request whose sha256 matched its text was stored for 24 h, even a
// document that did not parse or broke a limit; an 800 KB GET document was stored too.
func TestAbusePersistedQueries(t *testing.T) {
	a := newTestApp(t, "-max-persisted-bytes", "300")
	stored := func() int { return len(keysLike(t, a.CacheRedis, a.Keys.APQ()+"*")) }
	for name, c := range map[string]struct{ doc, code string }{
		"DoesNotParse":  {`{ movies(`, "GRAPHQL_PARSE_FAILED"},
		"Invalid":       {`{ nope }`, "GRAPHQL_VALIDATION_FAILED"},
		"TooManyFields": {"{" + strings.Repeat(" __typename", 1001) + "}", "FIELD_LIMIT_EXCEEDED"},
		"TooCostly":     {`{ movies(first: 100) { edges { node { showtimes { hall { seats { id } } } } } } }`, "COMPLEXITY_LIMIT_EXCEEDED"},
		"TooLarge":      {"{ __typename }" + strings.Repeat(" ", 400), ""}, // runs, but is not kept
	} {
		t.Run(name, func(t *testing.T) {
			_, _, body := a.postRaw(persisted(c.doc, c.doc), nil)
			if r := decode(t, body); r.Code() != c.code {
				t.Fatalf("registering: %v, want %q", r.codes(), c.code)
			}
			_, _, body = a.postRaw(persisted("", c.doc), nil)
			if r := decode(t, body); r.Code() != "PERSISTED_QUERY_NOT_FOUND" {
				t.Fatalf("the document was kept: %s", body)
			}
		})
	}
	if n := stored(); n != 0 {
		t.Fatalf("%d documents stored by refused registrations", n)
	}
	doc := `{ movies { totalCount } }`
	a.postRaw(persisted(doc, doc), nil)
	if _, _, body := a.postRaw(persisted("", doc), nil); !strings.Contains(string(body), "totalCount") || stored() != 1 {
		t.Fatalf("a valid document was not kept: %s", body)
	}
}

// TestAbuseLongGET: a GET's query string is bounded (414), as a POST body is (413).
func TestAbuseLongGET(t *testing.T) {
	a := newTestApp(t)
	q := url.Values{"query": {"{" + strings.Repeat(" __typename", 80_000) + "}"}}
	status, h, body := a.request("GET", "/query?"+q.Encode(), nil, nil)
	r := decode(t, body)
	if status != http.StatusRequestURITooLong || r.Code() != "BAD_REQUEST" || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		t.Fatalf("800 KB GET: %d %v", status, r.codes())
	}
}

// TestPersistedOnly: with SEATFLOW_PERSISTED_ONLY only the manifest's documents run.
func TestPersistedOnly(t *testing.T) {
	doc := `query Shows { movies { totalCount } }`
	sum := sha256.Sum256([]byte(doc))
	manifest, _ := json.Marshal(map[string]any{"format": "apollo-persisted-query-manifest", "version": 1,
		"operations": []map[string]any{{"id": hex.EncodeToString(sum[:]), "name": "Shows", "type": "query", "body": doc}}})
	path := filepath.Join(t.TempDir(), "manifest.json")
	if err := os.WriteFile(path, manifest, 0o600); err != nil {
		t.Fatal(err)
	}
	a := newTestApp(t, "-persisted-only", "-persisted-queries", path)
	for name, c := range map[string]struct {
		req  map[string]any
		code string
	}{
		"AdHocRefused":           {map[string]any{"query": `{ movies { totalCount } }`}, "PERSISTED_QUERY_NOT_ALLOWED"},
		"RegistrationRefused":    {persisted(`{ __typename }`, `{ __typename }`), "PERSISTED_QUERY_NOT_ALLOWED"},
		"UnknownHash":            {persisted("", `{ __typename }`), "PERSISTED_QUERY_NOT_FOUND"},
		"OtherTextUnderItsHash":  {persisted(`{ __typename }`, doc), "BAD_REQUEST"},
		"ManifestHash":           {persisted("", doc), ""},
		"ManifestHashAndText":    {persisted(doc, doc), ""},
		"ManifestDocumentByGET?": {nil, ""},
	} {
		t.Run(name, func(t *testing.T) {
			if c.req == nil {
				ext, _ := json.Marshal(persisted("", doc)["extensions"])
				_, _, body := a.request("GET", "/query?"+url.Values{"extensions": {string(ext)}}.Encode(), nil, nil)
				if r := decode(t, body); len(r.Errors) > 0 || !strings.Contains(string(r.Data), "totalCount") {
					t.Fatalf("GET of the manifest's hash: %s", body)
				}
				return
			}
			_, _, body := a.postRaw(c.req, nil)
			r := decode(t, body)
			if r.Code() != c.code || (c.code == "" && !strings.Contains(string(r.Data), "totalCount")) {
				t.Fatalf("%v %s, want %q", r.codes(), body, c.code)
			}
		})
	}
	if n := keysLike(t, a.CacheRedis, a.Keys.APQ()+"*"); len(n) != 0 {
		t.Fatalf("persisted-only mode stored %d documents", len(n))
	}
}

// TestCacheRedisSeparate: with SEATFLOW_CACHE_REDIS_URL the catalog caches, persisted
// queries and cost budgets live in that Redis (which may evict); seat state stays in the
// main one.
func TestCacheRedisSeparate(t *testing.T) {
	cacheRedis, cacheURL := cacheRedisOf(t, 5)
	a := newTestApp(t, "-cache-redis-url", cacheURL, "-cost-budget", "50000", "-cost-restore", "1") // budgets kept a while
	t.Cleanup(func() { testenv.DeletePrefix(cacheRedis, a.Keys.Prefix) })
	show, _ := a.onSaleShowtime()
	_, _, body := a.postRaw(persisted(`{ movies { totalCount } }`, `{ movies { totalCount } }`), nil)
	if r := decode(t, body); len(r.Errors) > 0 {
		t.Fatalf("register: %s", body)
	}
	a.must("", `query($id: ID!) { showtime(id: $id) { movie { title } } }`, map[string]any{"id": show}, nil)
	ctx := context.Background()
	// The budgets' keys are under the prefix too (rdb.NewLimiter takes redis_rate's "rate:" off).
	inCache, _ := cacheRedis.Keys(ctx, a.Keys.Prefix+"*").Result()
	budgets, _ := cacheRedis.Keys(ctx, a.Keys.CostBudget()+"*").Result()
	if outside, _ := cacheRedis.Keys(ctx, "*"+a.Keys.Prefix+"*").Result(); len(outside) != len(inCache) {
		t.Fatalf("cache Redis holds %v with the prefix inside a key, %v under it", outside, inCache)
	}
	inMain, _ := a.Redis.Keys(ctx, a.Keys.Prefix+"*").Result()
	has := func(keys []string, part string) bool {
		for _, k := range keys {
			if strings.Contains(k, part) {
				return true
			}
		}
		return false
	}
	if !has(inCache, ":apq:") || !has(inCache, ":cache:") || len(budgets) == 0 {
		t.Fatalf("cache Redis holds %v and budgets %v: want persisted queries, catalog cache and cost budgets", inCache, budgets)
	}
	if has(inMain, ":apq:") || has(inMain, ":cache:{") || !has(inMain, "{show:") {
		t.Fatalf("main Redis holds %v: want seat state only", inMain)
	}
}

// cacheRedisOf is a client of database db of the test Redis, and its URL for
// -cache-redis-url: a cache Redis apart from the seat Redis. It skips the test on a
// Cluster, whose nodes have database 0 only.
func cacheRedisOf(t *testing.T, db int) (*redis.Client, string) {
	t.Helper()
	if os.Getenv("SEATFLOW_TEST_REDIS_CLUSTER") != "" {
		t.Skip("the cache Redis is a plain Redis URL")
	}
	opt, err := redis.ParseURL(testenv.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	opt.DB = db
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return c, fmt.Sprintf("redis://%s/%d", opt.Addr, db)
}
