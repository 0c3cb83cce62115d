package app

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// seriesOf counts the series of the metric family name in the default registry.
func seriesOf(t *testing.T, name string) (int, []string) {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			var l []string
			for _, p := range m.GetLabel() {
				l = append(l, p.GetName()+"="+p.GetValue())
			}
			labels = append(labels, strings.Join(l, ","))
		}
	}
	return len(labels), labels
}

// TestOperationLabelsBounded: a client naming 1,000 operations at random adds no series
// of its choosing: each is counted under a root field's label or "other".
func TestOperationLabelsBounded(t *testing.T) {
	a := newTestApp(t)
	before, _ := seriesOf(t, "graphql_operations_total")
	beforeErr, _ := seriesOf(t, "graphql_errors_total")
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range 1000 {
		name := fmt.Sprintf("Op%x_%d", rnd.Uint64(), i)
		var q string
		switch i % 4 {
		case 0:
			q = "query " + name + " { __typename }"
		case 1:
			q = "query " + name + " { movies(first: 1) { edges { node { id } } } }"
		case 2:
			q = "mutation " + name + " { cancelOrder(id: \"bm9wZQ\") { id } }" // refused or failed: no such order
		default:
			q = "query " + name + " { " + name + " }" // a field that does not exist
		}
		a.do("", q, nil)
	}
	after, labels := seriesOf(t, "graphql_operations_total")
	afterErr, codes := seriesOf(t, "graphql_errors_total")
	if grown := after - before; grown > 8 {
		t.Errorf("1,000 random operation names added %d series of graphql_operations_total, want at most 8: %v", grown, labels)
	}
	for _, l := range labels {
		if strings.Contains(l, "Op") {
			t.Errorf("series labelled with a client's name: %s", l)
		}
	}
	if grown := afterErr - beforeErr; grown > 6 {
		t.Errorf("graphql_errors_total grew by %d series: %v", grown, codes)
	}
}

// TestMetricsOpenMetrics: /metrics answers OpenMetrics to a scraper that asks for it, with
// the new families, and the classic text format otherwise.
func TestMetricsOpenMetrics(t *testing.T) {
	srv := httptest.NewServer(MetricsHandler())
	defer srv.Close()
	get := func(accept string) (string, string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.Header.Get("Content-Type"), string(b)
	}
	ct, body := get("application/openmetrics-text; version=1.0.0")
	if !strings.HasPrefix(ct, "application/openmetrics-text") || !strings.HasSuffix(strings.TrimSpace(body), "# EOF") {
		t.Errorf("OpenMetrics asked: Content-Type %q, ends %q", ct, body[max(0, len(body)-20):])
	}
	if ct, _ := get(""); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("no Accept: Content-Type %q, want text/plain", ct)
	}
}

// exemplarRe matches a bucket line of holdSeats' duration with an exemplar's trace id.
var exemplarRe = regexp.MustCompile(`(?m)^graphql_operation_duration_seconds_bucket\{operation="holdSeats",type="mutation",le="[^"]+"\} \d+ # \{trace_id="([0-9a-f]{32})"\}`)
