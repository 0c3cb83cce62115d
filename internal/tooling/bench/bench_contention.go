package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"seatflow"
	"seatflow/internal/nodeid"
	"seatflow/internal/reconcile"
	"seatflow/internal/tooling/gqlclient"
)

// benchContention races many buyers for few seats.
func benchContention(ctx context.Context, b *benchEnv, w io.Writer) error {
	s, err := b.openBenchApp(ctx, "-holds-per-minute", "0")
	if err != nil {
		return err
	}
	defer s.Close()
	perRow := 20
	rows := (b.Opt.Seats + perRow - 1) / perRow
	shows, err := s.createShows(ctx, 1, rows, perRow, true, 6, true)
	if err != nil {
		return err
	}
	show := shows[0]
	sellable := len(show.SeatIDs)
	client := newBenchClient(s.URL, b.Opt.Buyers+16)
	mapBody := gqlclient.Body(`query($id: ID!) { seatMap(showtimeId: $id) { available seats { seat { id } status } } }`, map[string]any{"id": show.ID})

	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var (
		mu                       sync.Mutex
		buyerLat, holdLat        latencies
		holders, soldOut, failed atomic.Int64
		attempts, retries        atomic.Int64
		codes                    = map[string]int{}
	)
	count := func(code string) { mu.Lock(); codes[code]++; mu.Unlock() }
	tokens := make([]string, b.Opt.Buyers)
	for i := range tokens {
		tokens[i] = s.token("buyer-" + strconv.Itoa(i))
	}
	// Buyers are connected before the start, as browsers that loaded the page are: each
	// opens its keep-alive connection with a GET /healthz, all at once, then waits.
	var wg, connected sync.WaitGroup
	startLine := make(chan struct{})
	for i := 0; i < b.Opt.Buyers; i++ {
		wg.Add(1)
		connected.Add(1)
		go func(i int) {
			defer wg.Done()
			err := client.Get(ctx, "/healthz")
			connected.Done()
			if err != nil {
				count("connect: " + err.Error())
			}
			<-startLine
			t0 := time.Now()
			var myHolds latencies
			defer func() {
				mu.Lock()
				buyerLat = append(buyerLat, time.Since(t0))
				holdLat = append(holdLat, myHolds...)
				mu.Unlock()
			}()
			rng := rand.New(rand.NewPCG(uint64(i), 42))
			var buf bytes.Buffer // the buyer's, reused: freeSeats copies what it keeps
			for try := 0; ; try++ {
				if ctx.Err() != nil || try > 200 {
					failed.Add(1)
					return
				}
				if _, err := client.Post(ctx, "", mapBody, &buf); err != nil {
					count("seatMap: " + err.Error())
					continue
				}
				free, ok := freeSeats(buf.Bytes())
				if !ok {
					count("seatMap: unexpected answer")
					continue
				}
				if len(free) == 0 {
					soldOut.Add(1)
					return
				}
				seat := free[rng.IntN(len(free))]
				attempts.Add(1)
				h0 := time.Now()
				r, err := client.Send(ctx, tokens[i], gqlclient.Body(benchHoldQ, map[string]any{"in": map[string]any{"showtimeId": show.ID,
					"seatIds": []string{seat}, "idempotencyKey": fmt.Sprintf("b%d-%d", i, try)}}))
				myHolds = append(myHolds, time.Since(h0))
				if err != nil {
					count("holdSeats: " + err.Error())
					continue
				}
				switch code := r.Code(); code {
				case "":
					holders.Add(1)
					return
				case seatflow.ESEATSUNAVAILABLE, seatflow.ESEATGAP:
					retries.Add(1)
				default:
					count(code)
				}
			}
		}(i)
	}
	connected.Wait()
	t0 := time.Now()
	close(startLine)
	wg.Wait()
	took := time.Since(t0)

	_, showKey, err := nodeid.Decode(show.ID) // the API's id names the showtime row
	if err != nil {
		return err
	}
	var sold int
	if err := s.SQL.QueryRowContext(context.WithoutCancel(ctx), "SELECT COUNT(*) FROM seat_occupancies WHERE showtime_id = ?", showKey[0]).Scan(&sold); err != nil {
		return err
	}
	violations, err := reconcile.Verify(context.WithoutCancel(ctx), s.DB, s.Seats)
	if err != nil {
		return err
	}
	finished := holders.Load() + soldOut.Load()
	progress("bench:   %d buyers, %d seats: sold %d, holders %d, sold out %d, failed %d, attempts %d, in %s; verify: %d violations",
		b.Opt.Buyers, sellable, sold, holders.Load(), soldOut.Load(), failed.Load(), attempts.Load(), took.Round(time.Millisecond), len(violations))

	fmt.Fprintf(w, "\n## 5. Contention\n\n")
	fmt.Fprintf(w, "%d buyers (own token each, all at once, each its own keep-alive connection, opened before the start with a `GET /healthz`, as a browser that loaded the page has one) race for one showtime of %d sellable seats (gaps allowed, rate limit off) through the real HTTP handler. Each buyer reads the seat map, picks a random AVAILABLE seat and holds it; on SEATS_UNAVAILABLE or SEAT_GAP it reads the map again and retries, until it holds a seat or the map shows none free. Then `reconcile.Verify` checks Redis against MySQL.\n",
		b.Opt.Buyers, sellable)
	errCodes := "none"
	if len(codes) > 0 {
		var parts []string
		for k, v := range codes {
			parts = append(parts, fmt.Sprintf("%s ×%d", k, v))
		}
		errCodes = strings.Join(parts, ", ")
	}
	table(w, []string{"measure", "value", "target", "result"}, [][]string{
		{"seats sold (seat_occupancy rows)", strconv.Itoa(sold), strconv.Itoa(sellable), verdict(sold == sellable)},
		{"buyers holding a seat", strconv.FormatInt(holders.Load(), 10), strconv.Itoa(sellable), verdict(holders.Load() == int64(sellable))},
		{"buyers finished (held one or saw it sold out)", fmt.Sprintf("%d of %d", finished, b.Opt.Buyers), strconv.Itoa(b.Opt.Buyers), verdict(finished == int64(b.Opt.Buyers))},
		{"hold attempts (of which lost the race)", fmt.Sprintf("%d (%d)", attempts.Load(), retries.Load()), "", ""},
		{"other errors", errCodes, "none", verdict(len(codes) == 0)},
		{"buyer time, start to done: p50 / p99 / max", fmt.Sprintf("%s / %s / %s", ms(buyerLat.pct(50)), ms(buyerLat.pct(99)), ms(buyerLat.max())), "", ""},
		{"one holdSeats request: p50 / p99", fmt.Sprintf("%s / %s", ms(holdLat.pct(50)), ms(holdLat.pct(99))), "", ""},
		{"sold out after", took.Round(time.Millisecond).String(), "", ""},
		{"`reconcile.Verify` violations", strconv.Itoa(len(violations)), "0", verdict(len(violations) == 0)},
	})
	for i, v := range violations {
		if i == 5 {
			fmt.Fprintf(w, "- … %d more\n", len(violations)-5)
			break
		}
		fmt.Fprintf(w, "- %s\n", v)
	}
	return nil
}

// freeSeats reads the ids of the AVAILABLE seats from a seat-map answer selected as
// `seats { seat { id } status }`, scanning the bytes instead of decoding every seat with
// reflection: the buyers share the server's cores, and a browser would decode on its own.
func freeSeats(raw []byte) ([]string, bool) {
	const idKey, statusKey = `{"seat":{"id":"`, `"},"status":"`
	if !bytes.Contains(raw, []byte(`"seats":[`)) {
		return nil, false
	}
	var free []string
	for {
		i := bytes.Index(raw, []byte(idKey))
		if i < 0 {
			return free, true
		}
		raw = raw[i+len(idKey):]
		end := bytes.IndexByte(raw, '"')
		if end < 0 || !bytes.HasPrefix(raw[end:], []byte(statusKey)) {
			return nil, false
		}
		id := string(raw[:end])
		raw = raw[end+len(statusKey):]
		if bytes.HasPrefix(raw, []byte(`AVAILABLE"`)) {
			free = append(free, id)
		}
	}
}
