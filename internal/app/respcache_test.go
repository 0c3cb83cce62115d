package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rawPost posts a GraphQL request and returns the body as sent and whether the response
// cache answered it.
func (a *testApp) rawPost(token, query string, vars map[string]any) (body string, hit bool) {
	a.t.Helper()
	body, hit, err := a.tryPost(token, query, vars)
	if err != nil {
		a.t.Fatal(err)
	}
	return body, hit
}

// tryPost is rawPost for goroutines other than the test's: it returns its error.
func (a *testApp) tryPost(token, query string, vars map[string]any) (body string, hit bool, err error) {
	resp, raw, err := a.send(token, query, vars)
	if err != nil {
		return "", false, err
	}
	if resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %d: %s", resp.StatusCode, raw)
	}
	return withoutExtensions(raw), resp.Header.Get("X-Response-Cache") == "hit", err
}

// withoutExtensions is a response without its extensions (the cost, which the budget's
// state makes differ from one response to the next).
func withoutExtensions(raw []byte) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return string(raw)
	}
	delete(m, "extensions")
	out, _ := json.Marshal(m)
	return string(out)
}

const pickerQ = `query($id: ID!) { showtime(id: $id) { id status movie { title } hall { name seats { id row number kind } } } }`

func TestResponseCache(t *testing.T) {
	a := newTestApp(t)
	movie := a.createMovie("Memo", 90)
	hall := a.createHall("H", 2, 3)
	show := a.createShowtime(movie, hall, testNow.Add(48*time.Hour))
	vars := map[string]any{"id": show}

	first, hit := a.rawPost("", pickerQ, vars) // entities from MySQL: not storable
	if hit {
		t.Fatal("the first read was a hit")
	}
	second, hit := a.rawPost("", pickerQ, vars) // entities local now: executed and stored
	if hit || second != first {
		t.Fatalf("second read: hit %v, same body %v", hit, second == first)
	}
	a.db.Queries.Reset()
	third, hit := a.rawPost("", pickerQ, vars)
	if !hit || third != first {
		t.Fatalf("third read: hit %v, body %s, want %s", hit, third, first)
	}
	if n := a.db.Queries.Count(); n != 0 {
		t.Fatalf("a hit cost %d SQL statements", n)
	}

	t.Run("OtherContentTypeIsNotAnswered", func(t *testing.T) {
		// A cross-site form post (no preflight) must meet gqlgen's refusal, not a hit.
		body, _ := json.Marshal(map[string]any{"query": pickerQ, "variables": vars})
		resp, err := http.Post(a.srv.URL+"/query", "text/plain", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK || resp.Header.Get("X-Response-Cache") != "" {
			t.Fatalf("text/plain POST of a cached query: status %d, cache %q", resp.StatusCode, resp.Header.Get("X-Response-Cache"))
		}
	})
	t.Run("WriteThroughTheAPIDropsIt", func(t *testing.T) {
		a.must(a.admin, `mutation($id: ID!) { updateMovie(id: $id, input: {title: "Memo 2", durationMinutes: 90}) { id } }`, map[string]any{"id": movie}, nil)
		body, hit := a.rawPost("", pickerQ, vars)
		if hit || !strings.Contains(body, `"Memo 2"`) {
			t.Fatalf("after the update: hit %v, body %s", hit, body)
		}
		a.must(a.admin, `mutation($id: ID!) { openSales(showtimeId: $id) { id } }`, vars, nil)
		if body, _ := a.rawPost("", pickerQ, vars); !strings.Contains(body, `"ON_SALE"`) {
			t.Fatalf("right after openSales: %s", body)
		}
	})

	t.Run("LivesNoLongerThanTheLocalCopies", func(t *testing.T) {
		a.rawPost("", pickerQ, vars)
		if _, hit := a.rawPost("", pickerQ, vars); !hit {
			t.Fatal("not stored")
		}
		a.clock.Advance(61 * time.Second) // past the local level's 60 s
		if _, hit := a.rawPost("", pickerQ, vars); hit {
			t.Fatal("a hit after the local copies expired")
		}
	})

	t.Run("MoviesPageDroppedByANewMovieAndAStatusChange", func(t *testing.T) {
		const q = `{ movies(first: 50) { totalCount edges { node { id status } } } }`
		count := func() (int, bool) {
			body, hit := a.rawPost("", q, nil)
			var out struct {
				Data struct{ Movies struct{ TotalCount int } }
			}
			if err := json.Unmarshal([]byte(body), &out); err != nil {
				t.Fatalf("%s: %v", body, err)
			}
			return out.Data.Movies.TotalCount, hit
		}
		before, _ := count()
		count()
		if _, hit := count(); !hit {
			t.Fatal("the movies page was not memoised")
		}
		id := a.createMovie("Another film", 95)
		if n, hit := count(); hit || n != before+1 {
			t.Fatalf("after createMovie: %d movies (hit %v), want %d and a fresh page", n, hit, before+1)
		}
		a.must(a.admin, `mutation($id: ID!) { setMovieStatus(id: $id, status: DELISTED) { id } }`, map[string]any{"id": id}, nil)
		body, hit := a.rawPost("", `{ movies(first: 50, status: DELISTED) { totalCount } }`, nil)
		if hit || !strings.Contains(string(body), `"totalCount":1`) {
			t.Fatalf("delisted movies after setMovieStatus: %s (hit %v)", body, hit)
		}
	})

	t.Run("OnlyCatalogQueriesWithoutErrors", func(t *testing.T) {
		buyer := a.token("memo-buyer", "customer")
		for name, q := range map[string]struct {
			token, query string
			vars         map[string]any
		}{
			"seat map":         {"", `query($id: ID!) { showtime(id: $id) { id seatMap { version } } }`, vars},
			"seat map by root": {"", `query($id: ID!) { seatMap(showtimeId: $id) { version } }`, vars},
			"own orders":       {buyer, `{ myOrders { id } }`, nil},
			"an error":         {"", `query($id: ID!) { showtime(id: $id) { id } movie(id: "x") { id } }`, vars},
			"a fragment":       {"", `query($id: ID!) { showtime(id: $id) { ...F } } fragment F on Showtime { id seatMap { version } }`, vars},
			"a mutation":       {a.admin, `mutation($id: ID!) { closeSales(showtimeId: $id) { id status } }`, vars},
		} {
			for i := 0; i < 3; i++ {
				if _, hit := a.rawPost(q.token, q.query, q.vars); hit {
					t.Fatalf("%s: answered from the response cache", name)
				}
			}
		}
	})
}

// TestResponseCacheAcrossInstances: an update through instance A drops what instance B
// memoised, within the broadcast's reach, while B is read concurrently; B never keeps a
// response built from a value older than the last write.
func TestResponseCacheAcrossInstances(t *testing.T) {
	a := newTestApp(t)
	b := a.sibling()
	movie := a.createMovie("Title 0", 90)
	q := `query($id: ID!) { movie(id: $id) { id title } }`
	vars := map[string]any{"id": movie}
	b.rawPost("", q, vars)
	b.rawPost("", q, vars)
	if _, hit := b.rawPost("", q, vars); !hit {
		t.Fatal("instance B did not memoise the response")
	}

	// Readers hammer B while A writes: a read that took the old title just before B's
	// drop must not be stored after it.
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if _, _, err := b.tryPost("", q, vars); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()
	for round := 1; round <= 20; round++ {
		title := fmt.Sprint("Title ", round)
		a.must(a.admin, `mutation($id: ID!, $t: String!) { updateMovie(id: $id, input: {title: $t, durationMinutes: 90}) { id } }`,
			map[string]any{"id": movie, "t": title}, nil)
		deadline := time.Now().Add(100 * time.Millisecond)
		for {
			body, _ := b.rawPost("", q, vars)
			if strings.Contains(body, `"`+title+`"`) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: instance B still answers %s 100 ms after the update", round, body)
			}
			time.Sleep(5 * time.Millisecond)
		}
		// Once B answered the new title, it never goes back to an old one.
		for i := 0; i < 5; i++ {
			if body, _ := b.rawPost("", q, vars); !strings.Contains(body, `"`+title+`"`) {
				t.Fatalf("round %d: instance B went back to %s", round, body)
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a concurrent reader: %v", err)
	}
	if s := b.Responses.Stats(); s.Hits == 0 || s.Drops == 0 {
		t.Fatalf("instance B's response cache: %+v; the test did not exercise it", s)
	}
}
