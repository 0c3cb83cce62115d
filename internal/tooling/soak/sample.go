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
	// PIDs and Addrs are the instances' process ids and HTTP addresses, by instance.
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
	began  time.Time
	mu     sync.Mutex
	series map[string]*Series
	errs   []string
}

// NewSampler prepares a sampler; the times of its samples count from began.
func NewSampler(src Sources, began time.Time) *Sampler {
	return &Sampler{src: src, began: began, client: &http.Client{Timeout: 5 * time.Second}, series: map[string]*Series{}}
}

// Run samples every interval until ctx ends.
func (s *Sampler) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		s.Sample(ctx)
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
	at := time.Since(s.began)
	for i, pid := range s.src.PIDs {
		if pid == 0 {
			continue
		}
		if p, err := procfs.NewProc(pid); err != nil {
			s.fail("instance %d: /proc/%d: %v", i+1, pid, err)
		} else {
			if st, err := p.Stat(); err == nil {
				s.add("rss", i+1, at, float64(st.ResidentMemory())/(1<<20))
			} else {
				s.fail("instance %d: /proc/%d/stat: %v", i+1, pid, err)
			}
			if n, err := p.FileDescriptorsLen(); err == nil {
				s.add("fds", i+1, at, float64(n))
			} else {
				s.fail("instance %d: /proc/%d/fd: %v", i+1, pid, err)
			}
		}
		if n, err := s.goroutines(ctx, s.src.Addrs[i]); err == nil {
			s.add("goroutines", i+1, at, n)
		} else {
			s.fail("instance %d: goroutines: %v", i+1, err)
		}
	}
	var conns int
	err := s.src.SQL.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = ?", s.src.Database).Scan(&conns)
	if err == nil {
		s.add("mysql", 0, at, float64(conns-s.src.Own()))
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

func (s *Sampler) add(metric string, instance int, at time.Duration, v float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := fmt.Sprintf("%s/%d", metric, instance)
	ser := s.series[key]
	if ser == nil {
		for _, m := range Metrics {
			if m.Name == metric {
				ser = &Series{Metric: m, Instance: instance}
			}
		}
		s.series[key] = ser
	}
	ser.At, ser.Values = append(ser.At, at), append(ser.Values, v)
}

func (s *Sampler) fail(format string, a ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.errs) < 20 {
		s.errs = append(s.errs, fmt.Sprintf(format, a...))
	}
}

// Series returns the curves, in the order of Metrics and then of instances.
func (s *Sampler) Series() []*Series {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Series
	for _, m := range Metrics {
		for i := 0; i <= len(s.src.PIDs); i++ {
			if ser := s.series[fmt.Sprintf("%s/%d", m.Name, i)]; ser != nil {
				c := *ser
				c.At, c.Values = append([]time.Duration(nil), ser.At...), append([]float64(nil), ser.Values...)
				out = append(out, &c)
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
