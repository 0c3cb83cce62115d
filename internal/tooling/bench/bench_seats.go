package bench

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/showtime"
	"seatflow/internal/booking"
	"seatflow/internal/keys"
	"seatflow/internal/nodeid"
	"seatflow/internal/seats"
	"seatflow/internal/tooling/gqlclient"
)

const (
	holdScriptWorkers = 16
	holdScriptTarget  = 0.5
	holdSeatsWorkers  = 16
	holdSeatsTarget   = 0.5
	redisBenchClients = 8
)

// oneHSET is the baseline script: the least a Lua script that changes a hash can cost.
const oneHSET = `return redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])`

// benchHoldScript compares seats.Store.Hold with redis-benchmark running EVALSHA of a
// one-HSET script against the same Redis.
func benchHoldScript(ctx context.Context, b *benchEnv, w io.Writer) error {
	k := keys.New(b.Prefix)
	opt, err := redis.ParseURL(b.RedisURL)
	if err != nil {
		return err
	}
	opt.PoolSize = holdScriptWorkers * 2
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	store := &seats.Store{RDB: rdb, Keys: k}

	// Showtimes that exist only in Redis (ids far above MySQL's), 10 rows × 50 seats each,
	// all built before the clock starts: hold n takes seat n of them in turn, so every hold
	// succeeds and the timed loop runs holds only.
	const rows, perRow = 10, 50
	perShow := rows * perRow
	hall := &seatflow.Hall{ID: 1}
	for r := 0; r < rows; r++ {
		for n := 1; n <= perRow; n++ {
			hall.Seats = append(hall.Seats, seatflow.Seat{ID: r*perRow + n, Row: rowLabel(r), Number: n, Kind: "STANDARD", Sellable: true})
		}
	}
	layout := seats.NewLayout(hall)
	const base = 900_000_000
	for show := 0; show*perShow < b.Opt.HoldOps; show++ {
		if _, err := store.Init(ctx, base+show, hall, nil); err != nil {
			return err
		}
	}
	sha, err := b.RDB.ScriptLoad(ctx, oneHSET).Result()
	if err != nil {
		return err
	}
	rate := func(label string) (float64, error) {
		return redisBenchmark(ctx, opt, sha, k.Bench("hset"), b.Opt.HoldOps, label)
	}
	evalBefore, err := rate("before")
	if err != nil {
		return err
	}

	// Holds alone, at most HoldOps of them, for at most the run's duration.
	var total atomic.Int64
	holds, _, holdErrs, holdTook := runFor(ctx, holdScriptWorkers, b.Opt.Duration, func(ctx context.Context, wk, _ int) error {
		n := int(total.Add(1)) - 1
		if n >= b.Opt.HoldOps {
			return errBenchStop
		}
		return store.Hold(ctx, seats.HoldRequest{ShowtimeID: base + n/perShow, Layout: layout, SeatIDs: []int{n%perShow + 1},
			Token: "t" + strconv.Itoa(n), UserID: "hold-user-" + strconv.Itoa(wk), AllowGaps: true})
	})
	holdRate := float64(holds) / holdTook.Seconds()
	progress("bench:   hold: %d holds in %s = %.0f/s (%d failed)", holds, holdTook.Round(time.Millisecond), holdRate, sumErrors(holdErrs))

	// The client's side of the ratio: the baseline's one-HSET script from the same
	// goroutines through plain go-redis (one round trip per call, as redis-benchmark does).
	hset := redis.NewScript(oneHSET)
	total.Store(0)
	plain, _, plainErrs, plainTook := runFor(ctx, holdScriptWorkers, b.Opt.Duration, func(ctx context.Context, wk, i int) error {
		if total.Add(1) > int64(b.Opt.HoldOps) {
			return errBenchStop
		}
		return hset.Run(ctx, rdb, []string{k.Bench("hset")}, "f"+strconv.Itoa(i%1000), "v").Err()
	})
	plainRate := float64(plain) / plainTook.Seconds()
	progress("bench:   one-HSET script through go-redis: %.0f/s (%d failed)", plainRate, sumErrors(plainErrs))

	// Hold + release cycles, one showtime per worker.
	for wk := 0; wk < holdScriptWorkers; wk++ {
		if _, err := store.Init(ctx, base+50_000+wk, hall, nil); err != nil {
			return err
		}
	}
	cycles, _, errs, took := runFor(ctx, holdScriptWorkers, b.Opt.Duration, func(ctx context.Context, wk, i int) error {
		id := base + 50_000 + wk
		seat := []int{i%perShow + 1}
		token := "c" + strconv.Itoa(i)
		user := "cycle-user-" + strconv.Itoa(wk)
		if err := store.Hold(ctx, seats.HoldRequest{ShowtimeID: id, Layout: layout, SeatIDs: seat, Token: token, UserID: user, AllowGaps: true}); err != nil {
			return err
		}
		_, err := store.Release(ctx, id, token, user, seat)
		return err
	})
	cycleRate := float64(cycles) / took.Seconds()
	progress("bench:   hold+release: %.0f cycles/s (%d errors)", cycleRate, sumErrors(errs))

	evalAfter, err := rate("after")
	if err != nil {
		return err
	}
	evalRate := (evalBefore + evalAfter) / 2
	total.Store(0)
	failures := sumErrors(holdErrs)
	ratio := holdRate / evalRate
	fmt.Fprintf(w, "\n## 3. Hold script vs redis-benchmark\n\n")
	fmt.Fprintf(w, "`seats.Store.Hold` (the `hold` Lua script by EVALSHA through go-redis, calls that arrive while eight round trips are under way sent together in one pipeline: purchase limit, version bump and PUBLISH of the delta; gaps allowed) from %d goroutines, one seat per hold, %d holds in %s on showtimes of %d seats that exist only in Redis, built before the clock starts, so every hold succeeds. Baseline in the same run: `redis-benchmark -q -n %d -c %d EVALSHA <sha of %q> 1 key field value` against the same Redis, run just before and just after the holds (%.0f and %.0f req/s; their mean is the baseline).\n",
		holdScriptWorkers, holds, holdTook.Round(time.Millisecond), perShow, b.Opt.HoldOps, redisBenchClients, oneHSET, evalBefore, evalAfter)
	table(w, []string{"measure", "ops/s", "ratio to EVALSHA", "target", "result", "errors"}, [][]string{
		{"redis-benchmark EVALSHA one HSET (-c 8), mean", fmt.Sprintf("%.0f", evalRate), "1.00", "", "", "0"},
		{"`Hold` (one seat)", fmt.Sprintf("%.0f", holdRate), fmt.Sprintf("%.2f", ratio), "≥ 0.50", verdict(ratio >= holdScriptTarget), strconv.Itoa(failures)},
		{"one-HSET script through go-redis from the same goroutines, unbatched (diagnostic: the client's ceiling)", fmt.Sprintf("%.0f", plainRate), fmt.Sprintf("%.2f", plainRate/evalRate), "", "", strconv.Itoa(sumErrors(plainErrs))},
		{"`Hold` + `Release` cycle (2 scripts)", fmt.Sprintf("%.0f cycles/s", cycleRate), fmt.Sprintf("%.2f (%.2f scripts)", cycleRate/evalRate, 2*cycleRate/evalRate), "", "", strconv.Itoa(sumErrors(errs))},
	})
	if cfg, err := b.RDB.ConfigGet(ctx, "hash-max-listpack-entries").Result(); err == nil {
		if n, err := strconv.Atoi(cfg["hash-max-listpack-entries"]); err == nil && perShow <= n {
			fmt.Fprintf(w, "\nThis Redis keeps hashes of up to %d fields as listpacks (`hash-max-listpack-entries`, the Redis default), so each seat hash here (%d seats) is one: every HGET and HSET inside the script scans it, about 2.8 µs each instead of 0.5 µs for a hashtable (`INFO commandstats`). A seat Redis with a threshold below its halls' sizes trades memory for that time.\n", n, perShow)
		}
	}
	return nil
}

// redisBenchmark runs redis-benchmark EVALSHA of the one-HSET script and returns its
// requests per second.
func redisBenchmark(ctx context.Context, opt *redis.Options, sha, key string, n int, label string) (float64, error) {
	host, port := opt.Addr, "6379"
	if h, p, ok := strings.Cut(opt.Addr, ":"); ok {
		host, port = h, p
	}
	args := []string{"-h", host, "-p", port, "-q", "-n", strconv.Itoa(n), "-c", strconv.Itoa(redisBenchClients)}
	if opt.DB != 0 {
		args = append(args, "--dbnum", strconv.Itoa(opt.DB))
	}
	if opt.Password != "" {
		args = append(args, "-a", opt.Password)
	}
	args = append(args, "EVALSHA", sha, "1", key, "field", "value")
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	raw, err := exec.CommandContext(ctx, "redis-benchmark", args...).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("redis-benchmark: %w: %s", err, raw)
	}
	m := regexp.MustCompile(`([0-9.]+) requests per second`).FindAllStringSubmatch(string(raw), -1)
	if len(m) == 0 {
		return 0, fmt.Errorf("redis-benchmark: no requests per second in %q", raw)
	}
	r, _ := strconv.ParseFloat(m[len(m)-1][1], 64)
	progress("bench:   redis-benchmark EVALSHA one HSET (%s): %.0f req/s", label, r)
	return r, nil
}

const benchHoldQ = `mutation($in: HoldSeatsInput!) { holdSeats(input: $in) { id status } }`

// benchHoldSeats compares holdSeats through GraphQL with a loop inserting the same rows.
func benchHoldSeats(ctx context.Context, b *benchEnv, w io.Writer) error {
	s, err := b.openBenchApp(ctx, "-holds-per-minute", "0")
	if err != nil {
		return err
	}
	defer s.Close()
	// Enough seats that neither run runs out within its time on a fast host.
	const rows, perRow, nShows = 20, 25, 40
	live, err := s.createShows(ctx, nShows, rows, perRow, true, 10, true)
	if err != nil {
		return err
	}
	plain, err := s.createShows(ctx, 2*nShows, rows, perRow, true, 10, true) // for two loops; on sale, as the count asks
	if err != nil {
		return err
	}
	capacity := int64(len(plain) * rows * perRow)

	// holdSeats over HTTP: each hold is one seat for a user of its own.
	var next atomic.Int64
	holds := holdSeatsProbe("holdSeats over HTTP", "hs-", s.client, s.token, live, &next)

	// The same rows through the same ent client, one transaction each.
	plainIDs := make([]int, len(plain))
	for i, p := range plain {
		plainIDs[i] = databaseID(p.ID)
	}
	// The loops write orders beside Redis, as no hold does: their showtimes are cancelled
	// once measured, so that verify's checks of the on-sale showtimes (the contention
	// section's) keep to the showtimes holds made.
	defer func() {
		if err := s.DB.Showtime.Update().Where(showtime.IDIn(plainIDs...)).SetStatus(seatflow.ShowtimeCancelled).Exec(context.WithoutCancel(ctx)); err != nil {
			b.note("holdSeats end to end: the loops' showtimes could not be cancelled (%v): verify will report their rows.", err)
		}
	}()
	seatIDs := make([]int, len(plain[0].SeatIDs))
	for i, id := range plain[0].SeatIDs {
		seatIDs[i] = databaseID(id)
	}
	var nextPlain atomic.Int64
	insertLoop := func(label string, counted bool) *probe {
		return &probe{label: label, workers: holdSeatsWorkers, do: func(ctx context.Context, _, _ int) error {
			i := nextPlain.Add(1) - 1
			if i >= capacity {
				return errBenchStop
			}
			return insertOrderRows(ctx, s.DB, "plain-"+strconv.FormatInt(i, 10), plainIDs[i/(rows*perRow)], seatIDs[i%(rows*perRow)], "p"+strconv.FormatInt(i, 10), counted)
		}}
	}
	cpu := make([]storeCPU, 3)
	runs, err := interleave(ctx, b, withStoreCPU(ctx, b, holds, &cpu[0]), withStoreCPU(ctx, b, insertLoop("insert+commit loop", false), &cpu[1]),
		withStoreCPU(ctx, b, insertLoop("insert+count+commit loop", true), &cpu[2]))
	if err != nil {
		return err
	}
	holdRun, insertRun, countedRun := runs[0], runs[1], runs[2]

	ratio := holdRun.rps / insertRun.rps
	fmt.Fprintf(w, "\n## 4. holdSeats end to end\n\n")
	fmt.Fprintf(w, "`holdSeats` through the real HTTP handler (auth, the cost budget, GraphQL, the idempotency marker, the showtime from the catalog cache, the `hold` script, then order + order_seats + seat_occupancy + the purchase count, which checks the sale, in one transaction, then the expiry entry and the marker in one round trip), %d concurrent clients for %s, one seat per hold, each hold by a user of its own (rate limit off: `-holds-per-minute 0`). Baseline: the same three rows inserted and committed in one transaction each through the same ent client and connection pool, %d goroutines for %s. The two take turns, %d rounds of %s each, as the read path's queries do.\n",
		holdSeatsWorkers, b.Opt.Duration, holdSeatsWorkers, b.Opt.Duration, catalogRounds, b.Opt.Duration/catalogRounds)
	table(w, []string{"measure", "ops/s", "p50", "p99", "ratio to insert loop", "target", "result", "errors", "CPU per op, µs: bench process / MySQL / Redis"}, [][]string{
		{"insert + commit loop (ent)", fmt.Sprintf("%.0f", insertRun.rps), ms(insertRun.lat.pct(50)), ms(insertRun.lat.pct(99)), "1.00", "", "", errCell(insertRun), cpu[1].perOp(len(insertRun.lat))},
		{"`holdSeats` over HTTP", fmt.Sprintf("%.0f", holdRun.rps), ms(holdRun.lat.pct(50)), ms(holdRun.lat.pct(99)), fmt.Sprintf("%.2f", ratio), "≥ 0.50", verdict(ratio >= holdSeatsTarget), errCell(holdRun), cpu[0].perOp(len(holdRun.lat))},
		{"insert + purchase count + commit loop (ent)", fmt.Sprintf("%.0f", countedRun.rps), ms(countedRun.lat.pct(50)), ms(countedRun.lat.pct(99)), fmt.Sprintf("%.2f", countedRun.rps/insertRun.rps), "", "", errCell(countedRun), cpu[2].perOp(len(countedRun.lat))},
	})
	fmt.Fprintf(w, "\nThe last row is the transaction a hold commits: the three rows, then the seat added to the customer's purchase count while the showtime is on sale (`booking.AddPurchase`: one `INSERT … SELECT … ON DUPLICATE KEY UPDATE` of the customer's row for the showtime, from the showtime's row while it is `ON_SALE`, its count read back through `LAST_INSERT_ID`). `holdSeats` is %.2f of it. The last column is what each operation cost the host: CPU time over the probe's turns of the bench process (its clients, and the server in it), of the MySQL server (`/proc`) and of the Redis server (`INFO cpu`), divided by the operations.\n", holdRun.rps/countedRun.rps)
	return nil
}

// holdSeatsProbe holds, through client, one seat per call for a user of its own (users
// prefix+n, tokens from token): seat next of shows, counted in their order, so probes
// sharing next never ask for one seat twice; it stops when every seat is held.
func holdSeatsProbe(label, prefix string, client *gqlclient.Client, token func(user string) string, shows []benchShow, next *atomic.Int64) *probe {
	perShow := int64(len(shows[0].SeatIDs))
	capacity := int64(len(shows)) * perShow
	return &probe{label: label, workers: holdSeatsWorkers, do: func(ctx context.Context, _, _ int) error {
		i := next.Add(1) - 1
		if i >= capacity {
			return errBenchStop
		}
		show := shows[i/perShow]
		seat := show.SeatIDs[i%perShow]
		body := gqlclient.Body(benchHoldQ, map[string]any{"in": map[string]any{"showtimeId": show.ID, "seatIds": []string{seat},
			"idempotencyKey": "k" + strconv.FormatInt(i, 10)}})
		r, err := client.Send(ctx, token(prefix+strconv.FormatInt(i, 10)), body)
		if err != nil {
			return err
		}
		return r.Err()
	}}
}

// databaseID is the database id behind an id the API returned.
func databaseID(apiID string) int {
	_, ids, _ := nodeid.Decode(apiID)
	if len(ids) != 1 {
		return 0
	}
	return ids[0]
}

// insertOrderRows writes what holdSeats commits for one seat: the order, its seat and the
// occupancy row, in one transaction; counted, with the seat added to the customer's
// purchase count after the rows, as a hold's transaction does.
func insertOrderRows(ctx context.Context, db *ent.Client, user string, showID, seatID int, key string, counted bool) error {
	tx, err := db.Tx(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	o, err := tx.Order.Create().SetUserID(user).SetShowtimeID(showID).SetHoldToken(uuid.NewString()).
		SetIdempotencyKey(key).SetStatus(seatflow.OrderPending).SetAmountCents(1000).
		SetCurrency("USD").SetExpiresAt(now.Add(15 * time.Minute)).SetCreatedAt(now).Save(ctx)
	if err == nil {
		err = tx.OrderSeat.Create().SetOrderID(o.ID).SetSeatID(seatID).Exec(ctx)
	}
	if err == nil {
		err = tx.SeatOccupancy.Create().SetShowtimeID(showID).SetSeatID(seatID).SetOrderID(o.ID).Exec(ctx)
	}
	if err == nil && counted {
		_, err = booking.AddPurchase(ctx, tx, booking.Purchase{UserID: user, ShowtimeID: showID, Seats: 1, OnSale: true}, false)
	}
	if err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
