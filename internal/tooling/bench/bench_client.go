package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"seatflow/internal/tooling/gqlclient"
)

// newBenchClient is a GraphQL client with a connection pool large enough that the
// benchmark measures the server, not connection set-up.
func newBenchClient(base string, conns int) *gqlclient.Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
	}
	return gqlclient.New(base, &http.Client{Transport: tr, Timeout: 60 * time.Second})
}

// benchShow is a showtime made for a benchmark.
type benchShow struct {
	ID      string
	HallID  string
	SeatIDs []string
}

var benchShowSeq atomic.Int64

// createShows makes a movie, a hall of rows×perRow seats (row B premium) and n showtimes in
// it two days ahead, six hours apart, optionally opening their sale.
func (s *benchServer) createShows(ctx context.Context, n, rows, perRow int, allowGaps bool, limit int, open bool) ([]benchShow, error) {
	c, admin := s.client, s.admin
	seq := benchShowSeq.Add(1)
	var movie struct{ CreateMovie struct{ ID string } }
	if err := c.Do(ctx, admin, `mutation($in: MovieInput!) { createMovie(input: $in) { id } }`,
		map[string]any{"in": map[string]any{"title": fmt.Sprintf("Bench %d", seq), "durationMinutes": 120,
			"synopsis": "A film made for measuring.", "rating": "PG-13", "genres": []string{"Drama", "Thriller"}}}, &movie); err != nil {
		return nil, err
	}
	var rowsIn []map[string]any
	for i := 0; i < rows; i++ {
		row := map[string]any{"label": rowLabel(i), "seats": perRow}
		if i == 1 {
			row["kind"] = "PREMIUM"
		}
		rowsIn = append(rowsIn, row)
	}
	var hall struct {
		CreateHall struct {
			ID    string
			Seats []struct{ ID string }
		}
	}
	if err := c.Do(ctx, admin, `mutation($in: HallInput!) { createHall(input: $in) { id seats { id } } }`,
		map[string]any{"in": map[string]any{"name": fmt.Sprintf("Bench hall %d", seq), "rows": rowsIn}}, &hall); err != nil {
		return nil, err
	}
	var seatIDs []string
	for _, st := range hall.CreateHall.Seats {
		seatIDs = append(seatIDs, st.ID)
	}
	prices := []map[string]any{{"kind": "STANDARD", "amountCents": 1000}, {"kind": "PREMIUM", "amountCents": 1500},
		{"kind": "ACCESSIBLE", "amountCents": 800}}
	start := time.Now().Add(48 * time.Hour).Truncate(time.Hour)
	var out []benchShow
	for i := 0; i < n; i++ {
		var show struct{ CreateShowtime struct{ ID string } }
		if err := c.Do(ctx, admin, `mutation($in: ShowtimeInput!) { createShowtime(input: $in) { id } }`,
			map[string]any{"in": map[string]any{"movieId": movie.CreateMovie.ID, "hallId": hall.CreateHall.ID,
				"startsAt": start.Add(time.Duration(i) * 6 * time.Hour).Format(time.RFC3339), "prices": prices,
				"purchaseLimit": limit, "allowSeatGaps": allowGaps}}, &show); err != nil {
			return nil, err
		}
		if open {
			if err := c.Do(ctx, admin, `mutation($id: ID!) { openSales(showtimeId: $id) { status } }`,
				map[string]any{"id": show.CreateShowtime.ID}, nil); err != nil {
				return nil, err
			}
		}
		out = append(out, benchShow{ID: show.CreateShowtime.ID, HallID: hall.CreateHall.ID, SeatIDs: seatIDs})
	}
	return out, nil
}

func rowLabel(i int) string {
	if i < 26 {
		return string(rune('A' + i))
	}
	return string(rune('A'+i/26-1)) + string(rune('A'+i%26))
}

// errBenchStop, returned by a runFor call, ends that worker without counting the call.
var errBenchStop = errors.New("nothing left to do")

// runFor runs fn in workers goroutines, starting calls until d has passed (or ctx ends;
// calls in flight finish, so none is cut off half-way), and returns how many calls
// succeeded, each call's latency, the errors by message and the time taken.
func runFor(ctx context.Context, workers int, d time.Duration, fn func(ctx context.Context, worker, i int) error) (int, latencies, map[string]int, time.Duration) {
	var mu sync.Mutex
	var all latencies
	errs := map[string]int{}
	ok := 0
	var wg sync.WaitGroup
	start := time.Now()
	stop := start.Add(d)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var lat latencies
			local := map[string]int{}
			n := 0
			for i := 0; ctx.Err() == nil && time.Now().Before(stop); i++ {
				t0 := time.Now()
				err := fn(ctx, w, i)
				if errors.Is(err, errBenchStop) {
					break
				}
				lat = append(lat, time.Since(t0))
				if err != nil {
					local[err.Error()]++
				} else {
					n++
				}
			}
			mu.Lock()
			all = append(all, lat...)
			ok += n
			for k, v := range local {
				errs[k] += v
			}
			mu.Unlock()
		}(w)
	}
	wg.Wait()
	return ok, all, errs, time.Since(start)
}

// firstError is one error message of a run, for the report.
func firstError(errs map[string]int) string {
	for k, v := range errs {
		return fmt.Sprintf("%d× %.120s", v, k)
	}
	return ""
}

func sumErrors(errs map[string]int) int {
	n := 0
	for _, v := range errs {
		n += v
	}
	return n
}
