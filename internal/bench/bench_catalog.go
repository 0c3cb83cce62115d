package bench

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow/internal/cache"
	"seatflow/internal/keys"
)

// hotShowtimeQ is what a seat-picker page asks for: a showtime with its movie, prices and
// the hall's seat layout, all catalog data.
const hotShowtimeQ = `query Hot($id: ID!) { showtime(id: $id) { id startsAt endsAt status purchaseLimit
  prices { kind amountCents }
  movie { id title synopsis durationMinutes rating genres }
  hall { id name seats { id row number x y kind } } } }`

// hotNoSeatsQ is the same query without the seat layout: it takes the same cache and
// loader path, so the difference to hotShowtimeQ is the cost of the response's size.
const hotNoSeatsQ = `query HotNoSeats($id: ID!) { showtime(id: $id) { id startsAt endsAt status purchaseLimit
  prices { kind amountCents }
  movie { id title synopsis durationMinutes rating genres }
  hall { id name } } }`

const typenameQ = `{ __typename }`

const (
	stampedeRounds = 5
	catalogRows    = 10
	catalogPerRow  = 12
	catalogTarget  = 0.7
)

// catalogRun is one timed run of a query against one server.
type catalogRun struct {
	label, wait string
	rps         float64
	lat         latencies
	errors      int
	firstErr    string
}

func measureQuery(ctx context.Context, b *benchEnv, s *benchServer, label string, body []byte) (catalogRun, error) {
	want := []byte(`"data"`)
	bad := []byte(`"errors"`)
	n, lat, errs, took := runFor(ctx, b.Opt.Clients, b.Opt.Duration, func(ctx context.Context, _, _ int) error {
		raw, err := s.client.post(ctx, "", body)
		if err != nil {
			return err
		}
		if bytes.Contains(raw, bad) || !bytes.Contains(raw, want) {
			return fmt.Errorf("response with errors: %.200s", raw)
		}
		return nil
	})
	r := catalogRun{label: label, wait: s.Config.LoaderWait.String(), rps: float64(n) / took.Seconds(), lat: lat,
		errors: sumErrors(errs), firstErr: firstError(errs)}
	progress("bench:   %-40s loader-wait %-5s %8.0f req/s  p50 %s  p99 %s  errors %d", label, r.wait, r.rps,
		ms(lat.pct(50)), ms(lat.pct(99)), r.errors)
	if n == 0 {
		return r, fmt.Errorf("%s: no successful request (%s)", label, r.firstErr)
	}
	return r, nil
}

// benchCatalog compares the hot catalog query with `{ __typename }` on the same server, and
// with the same query on a server whose cache is off.
func benchCatalog(ctx context.Context, b *benchEnv, w io.Writer) error {
	wait := b.Opt.LoaderWait.String()
	cached, err := b.openBenchApp(ctx, "-loader-wait", wait)
	if err != nil {
		return err
	}
	defer cached.Close()
	uncached, err := b.openBenchApp(ctx, "-loader-wait", wait, "-cache=false")
	if err != nil {
		return err
	}
	defer uncached.Close()
	shows, err := cached.createShows(ctx, 1, catalogRows, catalogPerRow, false, 6, true)
	if err != nil {
		return err
	}
	vars := map[string]any{"id": shows[0].ID}
	hot := gqlBody(hotShowtimeQ, vars)
	// Warm both levels and check the answer is complete.
	var out struct {
		Showtime struct {
			Hall struct{ Seats []struct{ ID string } }
		}
	}
	if err := cached.client.must(ctx, "", hotShowtimeQ, vars, &out); err != nil {
		return err
	}
	if got := len(out.Showtime.Hall.Seats); got != catalogRows*catalogPerRow {
		return fmt.Errorf("hot query returned %d seats, want %d", got, catalogRows*catalogPerRow)
	}
	size := 0
	if raw, err := cached.client.post(ctx, "", hot); err == nil {
		size = len(raw)
	}

	typename, err := measureQuery(ctx, b, cached, "{ __typename }", gqlBody(typenameQ, nil))
	if err != nil {
		return err
	}
	respBefore := cached.Responses.Stats()
	hotRun, err := measureQuery(ctx, b, cached, "hot showtime query, cache on", hot)
	if err != nil {
		return err
	}
	respAfter := cached.Responses.Stats()
	// The same query when the response is not memoised: what one execution over the
	// entity cache costs.
	entity, err := b.openBenchApp(ctx, "-loader-wait", wait, "-response-cache-bytes", "0")
	if err != nil {
		return err
	}
	defer entity.Close()
	if err := entity.client.must(ctx, "", hotShowtimeQ, vars, nil); err != nil {
		return err
	}
	before := entity.Cache.Stats()
	entityRun, err := measureQuery(ctx, b, entity, "hot showtime query, entity cache only", hot)
	if err != nil {
		return err
	}
	after := entity.Cache.Stats()
	noSeats, err := measureQuery(ctx, b, entity, "same without hall seats, entity cache only", gqlBody(hotNoSeatsQ, vars))
	if err != nil {
		return err
	}
	noCache, err := measureQuery(ctx, b, uncached, "hot showtime query, -cache=false", hot)
	if err != nil {
		return err
	}

	fmt.Fprintf(w, "\n## 1. Catalog hot path (issue 3)\n\n")
	fmt.Fprintf(w, "A showtime with its movie, prices and hall (%d seats; response %d bytes), all cached, through the real HTTP handler (`POST /query`), %d concurrent keep-alive clients for %s per run, runs one after another. Baseline: `{ __typename }` on the same server. Loader batch window %s (the server default is 2ms). The first row is the server as it ships: catalog-only responses are memoised per instance (`internal/respcache`, tagged by the cache keys they were built from and dropped with them); the next rows turn that off (`-response-cache-bytes 0`) to show one execution over the two-level entity cache, and the cache altogether.\n",
		catalogRows*catalogPerRow, size, b.Opt.Clients, b.Opt.Duration, wait)
	ratio := hotRun.rps / typename.rps
	row := func(label string, r catalogRun, target bool) []string {
		out := []string{label, fmt.Sprintf("%.0f", r.rps), ms(r.lat.pct(50)), ms(r.lat.pct(99)), fmt.Sprintf("%.2f", r.rps/typename.rps), "", "", errCell(r)}
		if target {
			out[5], out[6] = "≥ 0.70", verdict(ratio >= catalogTarget)
		}
		return out
	}
	rows := [][]string{
		row("`{ __typename }`", typename, false),
		row("hot showtime query, cached", hotRun, true),
		row("hot showtime query, entity cache only (no response cache)", entityRun, false),
		row("same query without the hall's seats, entity cache only (diagnostic)", noSeats, false),
		row("hot showtime query, `-cache=false` (MySQL every time)", noCache, false),
	}
	table(w, []string{"query", "req/s", "p50", "p99", "ratio to `__typename`", "target", "result", "errors"}, rows)
	fmt.Fprintf(w, "\nDuring the cached run the response cache answered %d requests and executed %d. What the caches buy: %.1f× the throughput of the same query without them (%.0f vs %.0f req/s); the entity cache alone %.1f×, answering %d keys from the local level, %d from Redis and sending %d to MySQL during its run. Without the response cache the cost is gqlgen executing 120 seat objects per request (a goroutine per list element) and decoding the cached hall.\n",
		respAfter.Hits-respBefore.Hits, respAfter.Misses+respAfter.Skipped-respBefore.Misses-respBefore.Skipped,
		hotRun.rps/noCache.rps, hotRun.rps, noCache.rps, entityRun.rps/noCache.rps,
		after.LocalHits-before.LocalHits, after.RedisHits-before.RedisHits, after.DBLoads-before.DBLoads)
	return nil
}

func errCell(r catalogRun) string {
	if r.errors == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", r.errors, r.firstErr)
}

// stampedeLoader counts its calls and reads real rows of the movies table.
type stampedeLoader struct {
	db    *sql.DB
	delay time.Duration
	calls atomic.Int64
}

func (l *stampedeLoader) load(ctx context.Context, ks []string) (map[string][]byte, error) {
	l.calls.Add(1)
	out := map[string][]byte{}
	for _, k := range ks {
		id, err := strconv.Atoi(strings.TrimPrefix(k, "bench:movie:"))
		if err != nil {
			continue
		}
		var title string
		err = l.db.QueryRowContext(ctx, "SELECT title FROM movies WHERE id = ?", id).Scan(&title)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		} else if err != nil {
			return nil, err
		}
		out[k], _ = json.Marshal(map[string]any{"id": id, "title": title})
	}
	if l.delay > 0 {
		time.Sleep(l.delay)
	}
	return out, nil
}

// benchStampede counts database loads when readers hit a logically expired hot key.
func benchStampede(ctx context.Context, b *benchEnv, w io.Writer) error {
	s, err := b.openBenchApp(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	shows, err := s.createShows(ctx, 1, 1, 4, false, 6, false)
	if err != nil {
		return err
	}
	var show struct {
		Showtime struct{ Movie struct{ ID string } }
	}
	if err := s.client.must(ctx, "", `query($id: ID!) { showtime(id: $id) { movie { id } } }`, map[string]any{"id": shows[0].ID}, &show); err != nil {
		return err
	}
	key := "bench:movie:" + show.Showtime.Movie.ID
	k := keys.New(b.Prefix)
	opt, err := redis.ParseURL(b.RedisURL)
	if err != nil {
		return err
	}

	type trial struct {
		label              string
		instances, readers int
		delay              time.Duration
		loads              []int64 // per round
		errs, stale        int64
		took               time.Duration
	}
	var trials []*trial
	for _, d := range []time.Duration{0, 50 * time.Millisecond} {
		trials = append(trials, &trial{label: "1 reader", instances: 1, readers: 1, delay: d},
			&trial{label: "3 instances × 100 readers", instances: 3, readers: 300, delay: d},
			&trial{label: "1 instance × 300 readers", instances: 1, readers: 300, delay: d})
	}
	for _, t := range trials {
		for round := 0; round < stampedeRounds; round++ {
			// Fresh instances (empty local caches, as separate servers would have) over one prefix.
			var caches []*cache.Cache
			var clients []*redis.Client
			for i := 0; i < t.instances; i++ {
				c := redis.NewClient(opt)
				clients = append(clients, c)
				caches = append(caches, cache.New(c, k, cache.Config{LocalBytes: 1 << 20}))
			}
			// The hot key, logically expired a second ago: its "data" is the old value.
			env, _ := json.Marshal(map[string]any{"expireAt": time.Now().Add(-time.Second).UnixMilli(),
				"data": map[string]any{"id": 0, "title": "stale"}})
			if err := b.RDB.Set(ctx, k.Cache(key), env, time.Hour).Err(); err != nil {
				return err
			}
			loader := &stampedeLoader{db: s.SQL, delay: t.delay}
			var wg sync.WaitGroup
			var errs, stale atomic.Int64
			start := make(chan struct{})
			for i := 0; i < t.readers; i++ {
				wg.Add(1)
				go func(c *cache.Cache) {
					defer wg.Done()
					<-start
					v, err := c.Get(ctx, key, loader.load)
					if err != nil {
						errs.Add(1)
					} else if bytes.Contains(v, []byte(`"stale"`)) {
						stale.Add(1)
					}
				}(caches[i%t.instances])
			}
			t0 := time.Now()
			close(start)
			wg.Wait()
			t.took = max(t.took, time.Since(t0))
			t.loads = append(t.loads, loader.calls.Load())
			t.errs += errs.Load()
			t.stale += stale.Load()
			for _, c := range clients {
				c.Close()
			}
		}
		progress("bench:   %-28s load +%-5s → loads per round %v, %d errors, %d stale, slowest %s", t.label, t.delay, t.loads, t.errs, t.stale, t.took.Round(time.Millisecond))
	}

	fmt.Fprintf(w, "\n## 2. Cache stampede (issue 3)\n\n")
	fmt.Fprintf(w, "`internal/cache` directly: independent `cache.New` instances (each its own Redis connection pool and empty local cache, as separate servers would have) on one key prefix; the hot key's Redis envelope is overwritten with a past `expireAt`, then every reader calls `Get` at once. %d rounds per row, fresh instances each round. The loader reads the real MySQL row and counts its calls; the second group adds 50 ms to each load to widen the race window.\n", stampedeRounds)
	var rows [][]string
	for _, t := range trials {
		worst := slices.Max(t.loads)
		var each []string
		for _, n := range t.loads {
			each = append(each, strconv.FormatInt(n, 10))
		}
		rows = append(rows, []string{t.label, fmt.Sprintf("+%s", t.delay), strconv.Itoa(t.readers),
			strings.Join(each, ", "), strconv.FormatInt(worst, 10), "1", strconv.FormatInt(t.errs, 10), strconv.FormatInt(t.stale, 10),
			ms(t.took), verdict(worst == 1 && t.errs == 0)})
	}
	table(w, []string{"readers", "load delay", "reads per round", "database loads, each round", "most loads for one expiry", "target", "errors", "served stale", "slowest round", "result"}, rows)
	if slices.ContainsFunc(trials, func(t *trial) bool { return slices.Max(t.loads) > 1 }) {
		fmt.Fprintf(w, "\nMore than one load for one expiry means a second rebuild won the lock after the first had already written the fresh envelope and unlocked (it read the stale envelope before the write): the lock winner does not look at the envelope again before loading.\n")
	}
	return nil
}
