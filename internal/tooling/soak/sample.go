package soak

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/procfs"
	"github.com/redis/go-redis/v9"
)

// Sources are where the sampler reads: the instances' processes and metrics, MySQL and Redis.
type Sources struct {
	// PIDs and Addrs are the instances' process ids and /metrics addresses, by instance.
	PIDs  []int
	Addrs []string
	// SQL reaches the MySQL server; Database is the instances' database; Own reports how
	// many connections of the sampler's process to it are open (not the instances').
	SQL      *sql.DB
	Database string
	Own      func() int
	Redis    redis.UniversalClient
}

// Sampler samples the Metrics every interval into one Series each.
type Sampler struct {
	src    Sources
	client *http.Client
	mu     sync.Mutex
	series map[string]*sampled
	errs   []string
}

// sampled is one series' samples, at the moments they were taken.
type sampled struct {
	metric   Metric
	instance int
	at       []time.Time
	values   []float64
}

// floorReads and floorGap: a count of goroutines, open files or connections is the least of
// floorReads reads floorGap apart. Requests in flight come and go between the reads; what
// leaked stays, so the floor shows a leak without the noise of the traffic.
const (
	floorReads = 5
	floorGap   = 100 * time.Millisecond
)

// NewSampler prepares a sampler of src.
func NewSampler(src Sources) *Sampler {
	return &Sampler{src: src, client: &http.Client{Timeout: 5 * time.Second}, series: map[string]*sampled{}}
}

// Run samples every interval until ctx ends. A sample under way when ctx ends is
// finished, so the end of the run is not noted as a source that could not be read.
func (s *Sampler) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		s.Sample(context.WithoutCancel(ctx))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sample takes one sample of every metric. What cannot be read is noted (Errors) and left
// out of its series.
func (s *Sampler) Sample(ctx context.Context) {
	at := time.Now()
	for i, pid := range s.src.PIDs {
		if pid == 0 {
			continue
		}
		p, err := procfs.NewProc(pid)
		if err != nil {
			s.fail("instance %d: /proc/%d: %v", i+1, pid, err)
			continue
		}
		if st, err := p.Stat(); err == nil {
			s.add("rss", i+1, at, float64(st.ResidentMemory())/(1<<20))
		} else {
			s.fail("instance %d: /proc/%d/stat: %v", i+1, pid, err)
		}
		if n, err := floor(ctx, func() (float64, error) { n, err := p.FileDescriptorsLen(); return float64(n), err }); err == nil {
			s.add("fds", i+1, at, n)
		} else {
			s.fail("instance %d: /proc/%d/fd: %v", i+1, pid, err)
		}
		if i >= len(s.src.Addrs) || s.src.Addrs[i] == "" {
			continue // no /metrics to read the goroutines from
		}
		if n, err := floor(ctx, func() (float64, error) { return s.goroutines(ctx, s.src.Addrs[i]) }); err == nil {
			s.add("goroutines", i+1, at, n)
		} else {
			s.fail("instance %d: goroutines: %v", i+1, err)
		}
	}
	conns, err := floor(ctx, func() (float64, error) {
		var n int
		err := s.src.SQL.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = ?", s.src.Database).Scan(&n)
		return float64(n - s.src.Own()), err
	})
	if err == nil {
		s.add("mysql", 0, at, conns)
	} else {
		s.fail("MySQL processlist: %v", err)
	}
	used, err := s.src.Redis.InfoMap(ctx, "memory").Result()
	if err == nil {
		if b, perr := strconv.ParseFloat(used["Memory"]["used_memory"], 64); perr == nil {
			s.add("redis", 0, at, b/(1<<20))
		} else {
			s.fail("Redis INFO memory: used_memory %q", used["Memory"]["used_memory"])
		}
	} else {
		s.fail("Redis INFO memory: %v", err)
	}
}

// floor is the least of floorReads reads of read.
func floor(ctx context.Context, read func() (float64, error)) (float64, error) {
	least := 0.0
	for i := range floorReads {
		if i > 0 {
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(floorGap):
			}
		}
		v, err := read()
		if err != nil {
			return 0, err
		}
		if i == 0 || v < least {
			least = v
		}
	}
	return least, nil
}

// goroutines reads the go_goroutines gauge of an instance's /metrics.
func (s *Sampler) goroutines(ctx context.Context, addr string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("/metrics answered %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, err
	}
	f := fams["go_goroutines"]
	if f == nil || len(f.GetMetric()) == 0 {
		return 0, errors.New("no go_goroutines gauge")
	}
	return f.GetMetric()[0].GetGauge().GetValue(), nil
}

func (s *Sampler) add(metric string, instance int, at time.Time, v float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := fmt.Sprintf("%s/%d", metric, instance)
	ser := s.series[key]
	if ser == nil {
		for _, m := range Metrics {
			if m.Name == metric {
				ser = &sampled{metric: m, instance: instance}
			}
		}
		s.series[key] = ser
	}
	ser.at, ser.values = append(ser.at, at), append(ser.values, v)
}

func (s *Sampler) fail(format string, a ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.errs) < 20 {
		s.errs = append(s.errs, fmt.Sprintf(format, a...))
	}
}

// Series returns the curves, in the order of Metrics and then of instances, their times
// counted from origin (the attack's start: samples before it are negative).
func (s *Sampler) Series(origin time.Time) []*Series {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Series
	for _, m := range Metrics {
		for i := 0; i <= len(s.src.PIDs); i++ {
			if ser := s.series[fmt.Sprintf("%s/%d", m.Name, i)]; ser != nil {
				c := &Series{Metric: ser.metric, Instance: ser.instance, Values: append([]float64(nil), ser.values...)}
				for _, at := range ser.at {
					c.At = append(c.At, at.Sub(origin))
				}
				out = append(out, c)
			}
		}
	}
	return out
}

// Errors are what could not be sampled (the first 20).
func (s *Sampler) Errors() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.errs...)
}
