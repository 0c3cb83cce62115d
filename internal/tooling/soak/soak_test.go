package soak

import (
	"context"
	"database/sql"
	"image/png"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"seatflow/internal/tooling/testenv"
)

// series is a metric sampled every 10 s for run, valued f(minutes).
func series(m Metric, run time.Duration, f func(min float64) float64) *Series {
	s := &Series{Metric: m, Instance: 1}
	for at := time.Duration(0); at <= run; at += 10 * time.Second {
		s.At, s.Values = append(s.At, at), append(s.Values, f(at.Minutes()))
	}
	return s
}

func TestJudge(t *testing.T) {
	goroutines, rss := Metrics[1], Metrics[0]
	long, short := 30*time.Minute, 2*time.Minute
	wobble := func(min float64) float64 { return 20 * math.Sin(min*7) } // GC-like noise, no trend
	cases := []struct {
		name string
		s    *Series
		run  time.Duration
		flat bool
	}{
		{"FlatWithNoise", series(goroutines, long, func(m float64) float64 { return 900 + wobble(m) }), long, true},
		{"LeakOfTwoAMinute", series(goroutines, long, func(m float64) float64 { return 900 + 2*m + wobble(m)/10 }), long, false},
		// A level of 10,000 goroutines allows 0.1 % of it: 10 a minute.
		{"RelativeBound", series(goroutines, long, func(m float64) float64 { return 10000 + 8*m }), long, true},
		// Warm-up growth before the window does not count.
		{"GrowthBeforeTheWindow", series(rss, long, func(m float64) float64 { return 40 + 30*min(m, 9) }), long, true},
		{"ShrinkingIsNoLeak", series(rss, long, func(m float64) float64 { return 300 - 3*m }), long, true},
		// The 2-minute version's window is 96 s and its bounds wider: a heap step of 10 MiB passes…
		{"ShortRunHeapStep", series(rss, short, func(m float64) float64 { return 90 + 10*float64(int(min(m, 1.5))) }), short, true},
		// … a leak of 30 MiB a minute does not.
		{"ShortRunLeak", series(rss, short, func(m float64) float64 { return 40 + 30*m }), short, false},
		{"ShortRunGoroutineLeak", series(goroutines, short, func(m float64) float64 { return 400 + 15*m }), short, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Judge(c.s, c.run, Window(c.run, 20*time.Minute))
			if v.Flat != c.flat {
				t.Errorf("flat = %v (slope %.2f/min, bound %.2f, %d samples from %s), want %v", v.Flat, v.Slope, v.Bound, v.N, v.From, c.flat)
			}
		})
	}
	if v := Judge(&Series{Metric: rss, At: []time.Duration{25 * time.Minute}, Values: []float64{1}}, long, 20*time.Minute); v.Flat || v.N != 1 {
		t.Errorf("one sample judged flat: %+v", v)
	}
	if got := Window(short, 20*time.Minute); got != 96*time.Second {
		t.Errorf("window of a 2-minute run = %s, want 96s", got)
	}
}

func TestSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "RELIABILITY.md")
	faults := "# Reliability\n\nthe fault suite's part\n"
	if err := os.WriteFile(path, []byte(faults), 0o644); err != nil {
		t.Fatal(err)
	}
	res := &Result{Duration: 2 * time.Minute, Window: 96 * time.Second, Every: 10 * time.Second, Rate: 150, Capacity: 300,
		Instances: 3, Watchers: 1000, HoldTTL: time.Minute, Requests: 18000,
		Verdicts: []Verdict{Judge(series(Metrics[0], 2*time.Minute, func(float64) float64 { return 50 }), 2*time.Minute, 96*time.Second)}}
	for range 2 { // written twice: the second replaces the first
		var b strings.Builder
		res.Markdown(&b, "soak.png")
		if err := WriteSection(path, b.String()); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := os.ReadFile(path)
	doc := string(got)
	if !strings.HasPrefix(doc, faults) || strings.Count(doc, sectionBegin) != 1 || strings.Count(doc, "## Soak") != 1 {
		t.Fatalf("doc after two writes:\n%s", doc)
	}
	for _, want := range []string{"a 2-minute run", "150 req/s, half of the 300 req/s", "![", "| resident memory, instance 1 | 10 |", "1-minute holds", "Every 10 s", "Verdict: passed"} {
		if !strings.Contains(doc, want) {
			t.Errorf("section lacks %q:\n%s", want, doc)
		}
	}
	if kept := KeptSection(doc); !strings.HasPrefix(kept, sectionBegin) || !strings.HasSuffix(kept, sectionEnd+"\n") {
		t.Errorf("KeptSection = %q", kept)
	}
	if KeptSection(faults) != "" {
		t.Error("a doc without the section has one")
	}
	if !res.Passed() {
		t.Error("a run with flat curves and nothing failed did not pass")
	}
	res.SampleErrors = []string{"instance 1: goroutines: /metrics answered 404 Not Found"}
	if res.Passed() {
		t.Error("a run whose goroutines could not be sampled passed")
	}
}

func TestPlot(t *testing.T) {
	var vs []Verdict
	for _, m := range Metrics {
		for i := 1; i <= 3; i++ {
			s := series(m, 5*time.Minute, func(min float64) float64 { return float64(10*i) + min })
			s.Instance = i
			vs = append(vs, Judge(s, 5*time.Minute, Window(5*time.Minute, 20*time.Minute)))
		}
	}
	path := filepath.Join(t.TempDir(), "soak.png")
	if err := Plot(path, vs); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 5*150 {
		t.Errorf("plot is %v, want a panel per metric", b)
	}
}

// TestSamplerReadsRealSources samples this test's own process, a /metrics endpoint, a
// database on the test MySQL with three connections held open and the test Redis.
func TestSamplerReadsRealSources(t *testing.T) {
	ctx := context.Background()
	db := testenv.MySQL(t)
	other, err := sql.Open("mysql", db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for range 3 {
		c, err := other.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.PingContext(ctx); err != nil {
			t.Fatal(err)
		}
	}
	metrics := httptest.NewServer(promhttp.Handler())
	defer metrics.Close()
	name := db.DSN[strings.LastIndex(db.DSN, "/")+1:]
	if i := strings.Index(name, "?"); i >= 0 {
		name = name[:i]
	}
	s := NewSampler(Sources{PIDs: []int{os.Getpid()}, Addrs: []string{strings.TrimPrefix(metrics.URL, "http://")},
		SQL: db.SQL, Database: name, Own: func() int { return db.SQL.Stats().OpenConnections }, Redis: testenv.NewRedisClient(t)})
	s.Sample(ctx)
	s.Sample(ctx)
	if errs := s.Errors(); len(errs) > 0 {
		t.Fatalf("sampling errors: %v", errs)
	}
	got := map[string]float64{}
	for _, ser := range s.Series(time.Now()) {
		if len(ser.Values) != 2 {
			t.Errorf("%s: %d samples, want 2", ser.Label(), len(ser.Values))
		}
		got[ser.Metric.Name] = ser.Values[1]
	}
	for _, m := range []string{"rss", "goroutines", "fds", "redis"} {
		if got[m] <= 0 {
			t.Errorf("%s = %v, want > 0", m, got[m])
		}
	}
	if got["mysql"] != 3 {
		t.Errorf("MySQL connections of the database, less the sampler's own = %v, want the 3 held open", got["mysql"])
	}
}
