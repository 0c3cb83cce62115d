package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"seatflow/internal/tooling/gqlclient"
)

// Targets of the hostile-document run.
const (
	abuseWorkers     = 32
	abuseRSSTarget   = 200 << 20 // peak RSS growth under abuseWorkers worst-case documents
	abuseAnswerLimit = 4 << 20   // SEATFLOW_MAX_RESPONSE_BYTES as shipped
)

// hostileDoc is one request body of the run and what the server made of it.
type hostileDoc struct {
	name string
	body []byte

	mu      sync.Mutex
	answers map[string]int // code, or "data"
	largest int
	took    latencies
}

// hostileDocs are the worst documents of the API's probe: each finding's attack, the
// largest answer the limits allow, and bodies at the size limits.
func hostileDocs(show benchShow) []*hostileDoc {
	repeat := func(open string, n int, f func(i int) string, close string) string {
		var b strings.Builder
		b.WriteString(open)
		for i := range n {
			b.WriteString(f(i))
		}
		b.WriteString(close)
		return b.String()
	}
	vars := map[string]any{"id": show.ID}
	docs := []struct {
		name string
		body []byte
	}{
		{"449 aliases of movie (10 KB)", gqlclient.Body(repeat("{", 449, func(i int) string { return fmt.Sprintf(` m: movie(id:"%d"){id}`, i) }, "}"), nil)},
		{"90 conflicting aliases (validation errors)", gqlclient.Body(repeat("{", 90, func(i int) string { return fmt.Sprintf(` m: movie(id:"%d"){id}`, i) }, "}"), nil)},
		{"{ __typename ×4990 } (55 KB)", gqlclient.Body(repeat("{", 4990, func(int) string { return " __typename" }, "}"), nil)},
		{"45 × (showtime's 300 seats + seat map)", gqlclient.Body(repeat("query($id: ID!) {", 45, func(i int) string {
			return fmt.Sprintf(` s%d: showtime(id: $id) { hall { seats { id row number } } } m%d: seatMap(showtimeId: $id) { seats { status } }`, i, i)
		}, "}"), vars)},
		{"movie→showtimes→movie→… nested", gqlclient.Body(`{ movies(first: 100) { edges { node { showtimes { movie { showtimes { movie { showtimes { id } } } } } } } } }`, nil)},
		{"largest allowed: 60 × a showtime's 300 seats", gqlclient.Body(repeat("query($id: ID!) {", 60, func(i int) string {
			return fmt.Sprintf(` s%d: showtime(id: $id) { hall { seats { id row number kind x y sellable } } }`, i)
		}, "}"), vars)},
		{"full introspection", gqlclient.Body(introspectionQuery, nil)},
		{"250 KB of unused variables", gqlclient.Body(`{ __typename }`, map[string]any{"pad": strings.Repeat("x", 250<<10)})},
		{"invalid document registered as a persisted query", persistedBody("{ nope }")},
	}
	out := make([]*hostileDoc, len(docs))
	for i, d := range docs {
		out[i] = &hostileDoc{name: d.name, body: d.body, answers: map[string]int{}}
	}
	return out
}

// persistedBody registers query as an automatic persisted query.
func persistedBody(query string) []byte {
	sum := sha256.Sum256([]byte(query))
	b, _ := json.Marshal(map[string]any{"query": query, "extensions": map[string]any{
		"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}})
	return b
}

// introspectionQuery is the query GraphiQL sends for its docs (depth 12 through ofType).
const introspectionQuery = `query IntrospectionQuery { __schema { queryType { name } mutationType { name } subscriptionType { name }
  types { ...FullType } directives { name description locations args { ...InputValue } } } }
fragment FullType on __Type { kind name description fields(includeDeprecated: true) { name description args { ...InputValue }
  type { ...TypeRef } isDeprecated deprecationReason } inputFields { ...InputValue } interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason } possibleTypes { ...TypeRef } }
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue }
fragment TypeRef on __Type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name
  ofType { kind name ofType { kind name ofType { kind name } } } } } } } }`

// send posts d once and records the answer.
func (d *hostileDoc) send(ctx context.Context, client *gqlclient.Client) error {
	start := time.Now()
	var buf bytes.Buffer
	status, err := client.Post(ctx, "", d.body, &buf)
	if err != nil {
		return err
	}
	answer := "data"
	if r, err := gqlclient.Decode(buf.Bytes()); err != nil {
		answer = fmt.Sprintf("HTTP %d, not JSON", status)
	} else if r.Code() != "" {
		answer = r.Code()
	}
	d.mu.Lock()
	d.answers[answer]++
	d.largest = max(d.largest, buf.Len())
	d.took = append(d.took, time.Since(start))
	d.mu.Unlock()
	return nil
}

// benchAbuse sends the hostile documents from abuseWorkers clients at once to a server in
// a process of its own and reports its peak RSS and the largest answer.
func benchAbuse(ctx context.Context, b *benchEnv, w io.Writer) error {
	fixtures, err := b.openBenchApp(ctx)
	if err != nil {
		return err
	}
	shows, err := fixtures.createShows(ctx, 1, 15, 20, true, 10, true) // 300 seats
	fixtures.Close()
	if err != nil {
		return err
	}
	child, err := b.startChildServer(ctx)
	if err != nil {
		return err
	}
	defer child.Stop()
	docs := hostileDocs(shows[0])
	client := newBenchClient(child.URL, abuseWorkers)
	for _, d := range docs { // warm-up: caches, parsed-query cache, pools
		if err := d.send(ctx, client); err != nil {
			return fmt.Errorf("%s: %w", d.name, err)
		}
		d.answers, d.largest, d.took = map[string]int{}, 0, nil
	}
	time.Sleep(time.Second)
	base := child.rssBytes()
	var peak atomic.Int64
	peak.Store(base)
	sampleCtx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for sampleCtx.Err() == nil {
			if r := child.rssBytes(); r > peak.Load() {
				peak.Store(r)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	duration := max(b.Opt.Duration*2, 10*time.Second)
	var next atomic.Int64
	n, _, errs, elapsed := runFor(ctx, abuseWorkers, duration, func(ctx context.Context, _, _ int) error {
		return docs[int(next.Add(1))%len(docs)].send(ctx, client)
	})
	stopSampling()
	<-sampled
	growth := peak.Load() - base

	largest := 0
	var rows [][]string
	for _, d := range docs {
		largest = max(largest, d.largest)
		rows = append(rows, []string{d.name, fmt.Sprintf("%.1f KB", float64(len(d.body))/1000), answersCell(d.answers),
			fmt.Sprintf("%.1f KB", float64(d.largest)/1000), ms(d.took.pct(50)), ms(d.took.pct(99))})
	}
	fmt.Fprintf(w, "\n## 9. Hostile documents\n\n")
	fmt.Fprintf(w, "The worst documents of the API's abuse probe, sent over and over for %s by %d concurrent clients (round robin, %d requests, %.0f req/s) to a server as shipped (every limit at its default; only the cost budget refills fast enough for one address) in a process of its own; the seat-bearing documents read a showtime of a 300-seat hall. Peak RSS is sampled from `/proc/<pid>/status` every 20 ms, its growth measured from the server after one warm-up pass of every document.\n\n",
		duration, abuseWorkers, n, float64(n)/elapsed.Seconds())
	table(w, []string{"document", "request", "answers", "largest answer", "p50", "p99"}, rows)
	fmt.Fprintf(w, "\n")
	table(w, []string{"measure", "value", "target", "result"}, [][]string{
		{"peak RSS growth", fmt.Sprintf("%.0f MB (%.0f → %.0f MB)", float64(growth)/1e6, float64(base)/1e6, float64(peak.Load())/1e6),
			fmt.Sprintf("< %d MB", abuseRSSTarget>>20), verdict(growth < abuseRSSTarget)},
		{"largest answer", fmt.Sprintf("%.2f MB", float64(largest)/1e6), fmt.Sprintf("≤ %d MiB + its error envelope", abuseAnswerLimit>>20),
			verdict(largest <= abuseAnswerLimit+4<<10)},
		{"transport errors", fmt.Sprint(sumErrors(errs)), "0", verdict(sumErrors(errs) == 0)},
	})
	return nil
}

// answersCell lists the answers of a document by count: "FIELD_LIMIT_EXCEEDED ×320".
func answersCell(answers map[string]int) string {
	var keys []string
	for k := range answers {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return answers[keys[i]] > answers[keys[j]] })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, answers[k]))
	}
	return strings.Join(parts, ", ")
}
