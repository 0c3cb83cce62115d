package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// benchClient is a GraphQL-over-HTTP client with a connection pool large enough that the
// benchmark measures the server, not connection set-up.
type benchClient struct {
	url  string
	http *http.Client
}

func newBenchClient(base string, conns int) *benchClient {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
	}
	return &benchClient{url: base + "/query", http: &http.Client{Transport: tr, Timeout: 60 * time.Second}}
}

// benchResult is a GraphQL response.
type benchResult struct {
	Data   json.RawMessage `json:"data"`
	Errors []struct {
		Message    string         `json:"message"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
}

// Code is the first error's extensions.code, "" without errors.
func (r *benchResult) Code() string {
	if len(r.Errors) == 0 {
		return ""
	}
	c, _ := r.Errors[0].Extensions["code"].(string)
	if c == "" {
		return "ERROR"
	}
	return c
}

func (r *benchResult) Err() error {
	if len(r.Errors) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %s", r.Code(), r.Errors[0].Message)
}

// gqlBody encodes a request body once, so timed loops do not pay for it.
func gqlBody(query string, vars map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	return b
}

// post sends a request body and returns the raw response.
func (c *benchClient) post(ctx context.Context, token string, body []byte) ([]byte, error) {
	var buf bytes.Buffer
	if err := c.postInto(ctx, token, body, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// postInto sends a request body and reads the whole response into buf, reset first: a
// timed loop reuses its buffer, as load tools do, so a large answer costs the cores the
// client shares with the server one copy, not a growing allocation per read.
func (c *benchClient) postInto(ctx context.Context, token string, body []byte, buf *bytes.Buffer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	buf.Reset()
	if resp.ContentLength > 0 {
		buf.Grow(int(resp.ContentLength))
	}
	_, err = buf.ReadFrom(resp.Body)
	return err
}

// get fetches path of the server and reads the whole answer, which must be 200.
func (c *benchClient) get(ctx context.Context, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(c.url, "/query")+path, nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return nil
}

// do runs one operation and decodes the response.
func (c *benchClient) do(ctx context.Context, token, query string, vars map[string]any) (*benchResult, error) {
	raw, err := c.post(ctx, token, gqlBody(query, vars))
	if err != nil {
		return nil, err
	}
	var r benchResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("response is not JSON: %.200s", raw)
	}
	return &r, nil
}

// must runs an operation that must succeed and decodes its data into dst.
func (c *benchClient) must(ctx context.Context, token, query string, vars map[string]any, dst any) error {
	r, err := c.do(ctx, token, query, vars)
	if err != nil {
		return err
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("%w (query %.80s)", err, strings.Join(strings.Fields(query), " "))
	}
	if dst != nil {
		return json.Unmarshal(r.Data, dst)
	}
	return nil
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
	if err := c.must(ctx, admin, `mutation($in: MovieInput!) { createMovie(input: $in) { id } }`,
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
	if err := c.must(ctx, admin, `mutation($in: HallInput!) { createHall(input: $in) { id seats { id } } }`,
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
		if err := c.must(ctx, admin, `mutation($in: ShowtimeInput!) { createShowtime(input: $in) { id } }`,
			map[string]any{"in": map[string]any{"movieId": movie.CreateMovie.ID, "hallId": hall.CreateHall.ID,
				"startsAt": start.Add(time.Duration(i) * 6 * time.Hour).Format(time.RFC3339), "prices": prices,
				"purchaseLimit": limit, "allowSeatGaps": allowGaps}}, &show); err != nil {
			return nil, err
		}
		if open {
			if err := c.must(ctx, admin, `mutation($id: ID!) { openSales(showtimeId: $id) { status } }`,
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
