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
	"seatflow/internal/tooling/gqlclient"
)

// hotShowtimeQ is what a seat-picker page asks for: a showtime with its movie, prices and
// the hall's seat layout, all catalog data.
const hotShowtimeQ = `query Hot($id: ID!) { showtime(id: $id) { id startsAt endsAt status purchaseLimit
  prices { kind amountCents }
  movie { id title synopsis durationMinutes rating genres }
  hall { id name seats { id row number x y kind } } } }`

// lightShowtimeQ is a showtime listing's card: the showtime, its movie's title and its
// hall's name.
const lightShowtimeQ = `query Light($id: ID!) { showtime(id: $id) { id startsAt status movie { title } hall { name } } }`

// seatMapQ is the read every buyer makes on a premiere night.
const seatMapQ = `query Map($id: ID!) { seatMap(showtimeId: $id) { version seats { status seat { id row number kind } } } }`

const typenameQ = `{ __typename }`

const (
	stampedeRounds = 5
	catalogRows    = 10
	catalogPerRow  = 15 // 150 seats
	variedShows    = 20
)

// Targets of the read path, as ratios to `{ __typename }` on the same server.
const (
	cachedTarget  = 0.7
	lightTarget   = 0.5
	variedTarget  = 0.4
	mapLiveTarget = 0.6
	mapTarget     = 0.3
)

// catalogRounds is how many turns the read path's queries take: each runs for
// Duration/catalogRounds at a time, every query once per round, so a host that speeds up
// or slows down during the section weighs on every ratio alike.
const catalogRounds = 5

// queryProbe posts one of bodies (in turn) through client and checks each answer has data
// and no error.
func queryProbe(b *benchEnv, client *gqlclient.Client, label string, bodies ...[]byte) *probe {
	want, bad := []byte(`"data"`), []byte(`"errors"`)
	bufs := make([]bytes.Buffer, b.Opt.Clients) // one per client, reused
	return &probe{label: label, do: func(ctx context.Context, worker, i int) error {
		buf := &bufs[worker]
		if _, err := client.Post(ctx, "", bodies[i%len(bodies)], buf); err != nil {
			return err
		}
		if raw := buf.Bytes(); bytes.Contains(raw, bad) || !bytes.Contains(raw, want) {
			return fmt.Errorf("response with errors: %.200s", raw)
		}
		return nil
	}}
}

// benchCatalog compares the read path's queries with `{ __typename }` and a bare net/http
// handler on the same kind of server, side by side in one run.
func benchCatalog(ctx context.Context, b *benchEnv, w io.Writer) error {
	wait := b.Opt.LoaderWait.String()
	open := func(flags ...string) (*benchServer, error) {
		return b.openBenchApp(ctx, append([]string{"-loader-wait", wait}, flags...)...)
	}
	cached, err := open()
	if err != nil {
		return err
	}
	defer cached.Close()
	entity, err := open("-response-cache-bytes", "0")
	if err != nil {
		return err
	}
	defer entity.Close()
	noMemo, err := open("-seat-map-memo=false")
	if err != nil {
		return err
	}
	defer noMemo.Close()
	uncached, err := open("-cache=false")
	if err != nil {
		return err
	}
	defer uncached.Close()
	shows, err := cached.createShows(ctx, variedShows, catalogRows, catalogPerRow, false, 6, true)
	if err != nil {
		return err
	}
	vars := map[string]any{"id": shows[0].ID}
	hot, light, seatMap := gqlclient.Body(hotShowtimeQ, vars), gqlclient.Body(lightShowtimeQ, vars), gqlclient.Body(seatMapQ, vars)
	seatMapUnwatched := gqlclient.Body(seatMapQ, map[string]any{"id": shows[1].ID})
	var varied [][]byte
	for _, s := range shows {
		varied = append(varied, gqlclient.Body(lightShowtimeQ, map[string]any{"id": s.ID}))
	}
	// Warm every server and check the answers are complete.
	var out struct {
		Showtime struct {
			Hall struct{ Seats []struct{ ID string } }
		}
	}
	var buf bytes.Buffer
	for _, s := range []*benchServer{cached, entity, noMemo, uncached} {
		if err := s.client.Do(ctx, "", hotShowtimeQ, vars, &out); err != nil {
			return err
		}
		if got := len(out.Showtime.Hall.Seats); got != catalogRows*catalogPerRow {
			return fmt.Errorf("hot query returned %d seats, want %d", got, catalogRows*catalogPerRow)
		}
		for _, body := range append(varied, seatMap, seatMapUnwatched) {
			if _, err := s.client.Post(ctx, "", body, &buf); err != nil {
				return err
			}
		}
	}
	sizes := map[string]int{}
	for name, body := range map[string][]byte{"hot": hot, "map": seatMap} {
		if _, err := cached.client.Post(ctx, "", body, &buf); err == nil {
			sizes[name] = buf.Len()
		}
	}

	// Two showtimes of one hall: the first has a watcher on the cached instance throughout,
	// so its live subscription vouches for the version; the second never has one, so a
	// read of its map asks Redis for the version.
	watcher, err := (&fanout{}).dial(ctx, gqlclient.WebsocketURL(cached.URL), shows[0].ID)
	if err != nil {
		return fmt.Errorf("seat-map watcher: %w", err)
	}
	defer watcher.conn.Close()

	var respHits, respExecuted, localHits, redisHits, dbLoads int64
	hotProbe := queryProbe(b, cached.client, "hot showtime with its hall, response cache on", hot)
	hotProbe.turn = func() func() {
		before := cached.Responses.Stats()
		return func() {
			after := cached.Responses.Stats()
			respHits += after.Hits - before.Hits
			respExecuted += after.Misses + after.Skipped - before.Misses - before.Skipped
		}
	}
	variedProbe := queryProbe(b, entity.client, fmt.Sprintf("same, %d showtime ids in turn", len(varied)), varied...)
	variedProbe.turn = func() func() {
		before := entity.Cache.Stats()
		return func() {
			after := entity.Cache.Stats()
			localHits += after.LocalHits - before.LocalHits
			redisHits += after.RedisHits - before.RedisHits
			dbLoads += after.DBLoads - before.DBLoads
		}
	}
	runs, err := interleave(ctx, b,
		&probe{label: "GET /healthz (bare net/http handler)", do: func(ctx context.Context, _, _ int) error {
			return cached.client.Get(ctx, "/healthz")
		}},
		queryProbe(b, cached.client, "{ __typename }", gqlclient.Body(typenameQ, nil)),
		hotProbe,
		queryProbe(b, entity.client, "hot showtime (movie, hall name), response cache off", light),
		variedProbe,
		queryProbe(b, entity.client, "hot showtime with its hall, response cache off", hot),
		queryProbe(b, cached.client, "seat map, memo warm, live subscription vouches", seatMap),
		queryProbe(b, cached.client, "seat map, memo warm, version read from Redis", seatMapUnwatched),
		queryProbe(b, noMemo.client, "seat map, rendered every read (memo off)", seatMap),
		queryProbe(b, uncached.client, "hot showtime with its hall, -cache=false", hot),
	)
	if err != nil {
		return err
	}
	healthz, typename, hotRun, lightRun, variedRun, entityRun := runs[0], runs[1], runs[2], runs[3], runs[4], runs[5]
	mapLive, mapRedis, mapRender, noCache := runs[6], runs[7], runs[8], runs[9]

	fmt.Fprintf(w, "\n## 1. Read path\n\n")
	fmt.Fprintf(w, "Queries through the real HTTP handler (`POST /query`), %d concurrent keep-alive clients (in the bench process, each reading every answer whole into a buffer it reuses, as load tools do) for %s per query, in %d turns: every query runs %s in each round, the rounds one after another, so a host that speeds up or slows down weighs on every query alike; each ratio is to `{ __typename }` measured in the same run (the last column to the bare `GET /healthz`). The hall has %d seats: the hot showtime response is %d bytes, the seat map %d. Loader batch window %s. Servers: as shipped (response cache and seat-map memo on), with the response cache off (one execution over the two-level entity cache per request), with the seat-map memo off, and with the catalog cache off.\n",
		b.Opt.Clients, b.Opt.Duration, catalogRounds, b.Opt.Duration/catalogRounds, catalogRows*catalogPerRow, sizes["hot"], sizes["map"], wait)
	row := func(label string, r catalogRun, target float64) []string {
		ratio := r.rps / typename.rps
		out := []string{label, fmt.Sprintf("%.0f", r.rps), ms(r.lat.pct(50)), ms(r.lat.pct(99)), fmt.Sprintf("%.2f", ratio), "", "",
			fmt.Sprintf("%.2f", r.rps/healthz.rps), errCell(r)}
		if target > 0 {
			out[5], out[6] = fmt.Sprintf("≥ %.2f", target), verdict(ratio >= target)
		}
		return out
	}
	table(w, []string{"query", "req/s", "p50", "p99", "ratio to `__typename`", "target", "result", "ratio to `/healthz`", "errors"}, [][]string{
		row("`GET /healthz` (bare net/http handler)", healthz, 0),
		row("`{ __typename }`", typename, 0),
		row("hot showtime with its hall, response cache on", hotRun, cachedTarget),
		row("hot showtime (movie, hall name), response cache off", lightRun, lightTarget),
		row(fmt.Sprintf("the same with %d showtime ids in turn (no response-cache hits)", len(varied)), variedRun, variedTarget),
		row("hot showtime with its hall, response cache off (diagnostic)", entityRun, 0),
		row("seat map, version known from the instance's live subscription (memo warm)", mapLive, mapLiveTarget),
		row("seat map, version read from Redis: one round trip (memo warm, a showtime no watcher of the instance follows)", mapRedis, mapTarget),
		row("seat map rendered on every read: memo off (diagnostic: a map that changes between every two reads)", mapRender, 0),
		row("hot showtime with its hall, `-cache=false` (MySQL every time)", noCache, 0),
	})
	fmt.Fprintf(w, "\nDuring the cached run the response cache answered %d requests and executed %d. The varied run answered %d keys from the local level, %d from Redis and sent %d to MySQL. A seat-map read renders the map from a compiled selection (no goroutine per seat, no per-field resolvers) and reuses a rendering while the showtime's version is unchanged; while a live subscription of the instance vouches for the version (a watcher in step, a heartbeat heard within a second) no Redis round trip is made at all.\n",
		respHits, respExecuted, localHits, redisHits, dbLoads)
	b.writeWrkRows(ctx, w, []wrkQuery{
		{label: "`{ __typename }`", url: cached.URL + "/query", body: gqlclient.Body(typenameQ, nil), inProcess: typename},
		{label: "seat map, version known from the instance's live subscription (memo warm)", url: cached.URL + "/query", body: seatMap, inProcess: mapLive, target: mapLiveTarget},
		{label: "hot showtime (movie, hall name), response cache off", url: entity.URL + "/query", body: light, inProcess: lightRun, target: lightTarget},
		{label: "hot showtime with its hall, response cache on", url: cached.URL + "/query", body: hot, inProcess: hotRun},
	})
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
	if err := s.client.Do(ctx, "", `query($id: ID!) { showtime(id: $id) { movie { id } } }`, map[string]any{"id": shows[0].ID}, &show); err != nil {
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

	fmt.Fprintf(w, "\n## 2. Cache stampede\n\n")
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
