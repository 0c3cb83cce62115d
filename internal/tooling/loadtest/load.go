// Package loadtest is the premiere-night load test (`seatflow-bench load`, `make load`): a
// vegeta attack with a mix of catalog browsing, holds and pays/cancels against several
// instances, websocket watchers of the hot showtimes, optional chaos (kill -9 of one
// instance, restart of Redis), and at the end the reconciler and Verify. By default it
// starts everything it needs itself: a private redis-server on a loopback port (never the
// shared one on 6379), a fresh MySQL database and three instances of the server binary
// (the one cmd/seatflow-bench builds from ./server, or names with -server) as children.
package loadtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"seatflow/internal/app"
	"seatflow/internal/cli"
	"seatflow/internal/database"
)

// Run is the premiere-night load test (`seatflow-bench load`): it parses args, runs the
// test and prints its report to stdout. serverBin is the server binary the instances run
// unless -bin names another.
func Run(ctx context.Context, args []string, stdout io.Writer, serverBin string) error {
	o, err := parseLoadOptions(args, os.Stderr)
	if err != nil {
		return err
	}
	s, err := Open(ctx, o, serverBin)
	if err != nil {
		return err
	}
	defer s.Close()
	if o.Capacity {
		steps, rep, err := s.run.capacity(ctx)
		if err != nil {
			return err
		}
		printCapacity(stdout, o, steps, rep)
		if fails := rep.Failures(); len(fails) > 0 {
			return fmt.Errorf("capacity run left the stores inconsistent: %s", strings.Join(fails, "; "))
		}
		return nil
	}
	rep, err := s.Execute(ctx, o.Rate, o.Duration, nil)
	if err != nil {
		return err
	}
	rep.Print(stdout, o)
	if fails := rep.Failures(); len(fails) > 0 {
		return fmt.Errorf("load test failed: %s", strings.Join(fails, "; "))
	}
	fmt.Fprintln(stdout, "load: PASS")
	return nil
}

// Session is a premiere night ready to be attacked: by default a private redis-server, a
// fresh load database and the instances, started by Open and stopped by Close, and the
// catalog of the night, created through the API.
type Session struct {
	o    *Options
	c    *cluster
	inst *app.App
	run  *loadRun
	// Logf writes progress to stderr.
	Logf func(format string, a ...any)
}

// Open starts what o asks for (serverBin is the instances' binary unless o.Bin names one)
// and sets up the catalog.
func Open(ctx context.Context, o *Options, serverBin string) (s *Session, err error) {
	if o.Bin == "" {
		o.Bin = serverBin
	}
	s = &Session{o: o, c: newCluster(o, os.Stderr), Logf: func(format string, a ...any) { // the report goes to stdout
		fmt.Fprintf(os.Stderr, "load %s: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
	}}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	if o.Start {
		if s.c.redisUp(ctx) {
			return nil, fmt.Errorf("something already answers on 127.0.0.1:%d; stop it (redis-cli -p %d shutdown nosave) or pick -redis-port", o.RedisPort, o.RedisPort)
		}
		s.Logf("starting private redis-server on 127.0.0.1:%d (no persistence)", o.RedisPort)
		if err := s.c.startRedis(ctx); err != nil {
			return nil, err
		}
		if err := s.c.prepareDatabase(ctx, o.Fresh); err != nil {
			return nil, err
		}
	} else if !s.c.redisUp(ctx) {
		return nil, fmt.Errorf("no redis answers on 127.0.0.1:%d (-start=false expects `make cluster-up`)", o.RedisPort)
	}
	// One in-process App (not started: no background work) migrates the schema before
	// the instances start, and later runs Verify over the same stores.
	cfg, err := o.appConfig()
	if err != nil {
		return nil, err
	}
	if s.inst, err = app.Open(ctx, cfg, cli.Logger("error")); err != nil {
		return nil, fmt.Errorf("open the load database and redis: %w", err)
	}
	s.inst.SQL.SetMaxOpenConns(4) // leave MySQL's connections to the instances
	s.inst.SQL.SetMaxIdleConns(4)
	var maxConns int
	if err := s.inst.SQL.QueryRowContext(ctx, "SELECT @@max_connections").Scan(&maxConns); err == nil && maxConns < database.DefaultMaxConns*len(o.Instances)+20 {
		s.Logf("WARNING: MySQL max_connections=%d but each instance may open %d connections (%d instances): expect SERVICE_UNAVAILABLE under load", maxConns, database.DefaultMaxConns, len(o.Instances))
	}
	if o.Start {
		s.Logf("starting %d instances of %s (logs in %s)", len(o.Instances), o.Bin, o.Dir)
		var wg sync.WaitGroup
		errs := make([]error, len(o.Instances))
		for i := range o.Instances {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = s.c.startInstance(ctx, i) }()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
	} else {
		for _, a := range o.Instances {
			if err := waitReady(ctx, a, nil, 5*time.Second); err != nil {
				return nil, err
			}
		}
	}
	if s.run, err = newLoadRun(o, s.inst, s.Logf); err != nil {
		return nil, err
	}
	if err := s.run.setupCatalog(ctx); err != nil {
		return nil, fmt.Errorf("catalog setup: %w", err)
	}
	if o.Chaos {
		s.run.chaos = s.chaosPlan(ctx)
	}
	return s, nil
}

// chaosPlan kills and restarts what the session started (or `make cluster-up`'s).
func (s *Session) chaosPlan(ctx context.Context) *chaosPlan {
	o, c := s.o, s.c
	return &chaosPlan{
		kill: func(i int) error {
			if o.Start {
				return c.killInstance(i)
			}
			return externalKill(i)
		},
		restart: func(i int) error {
			if o.Start {
				return c.startInstance(ctx, i)
			}
			if err := externalRestart(ctx); err != nil {
				return err
			}
			return waitReady(ctx, o.Instances[i], nil, 60*time.Second)
		},
		stopRedis:  func() error { return c.stopRedis(ctx) },
		startRedis: func() error { return c.startRedis(ctx) },
	}
}

// Close stops what Open started.
func (s *Session) Close() {
	if s.run != nil {
		s.run.client.CloseIdleConnections()
	}
	if s.inst != nil {
		s.inst.Close()
	}
	s.c.stopAll()
}

// App is the in-process App on the session's stores (not started: no background work).
func (s *Session) App() *app.App { return s.inst }

// Instances are the instances' addresses.
func (s *Session) Instances() []string { return s.o.Instances }

// MetricsAddrs are where the instances serve /metrics, by instance ("" for none).
func (s *Session) MetricsAddrs() []string {
	addrs := make([]string, len(s.o.Instances))
	for i := range addrs {
		addrs[i] = s.o.MetricsAddr(i)
	}
	return addrs
}

// PIDs are the process ids of the instances the session started, by instance (0 for one
// it did not start, or that is not running).
func (s *Session) PIDs() []int {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	pids := make([]int, len(s.o.Instances))
	for i, cmd := range s.c.procs {
		pids[i] = cmd.Process.Pid
	}
	return pids
}

// Capacity runs the capacity steps (-rate, -step, -step-factor), prints their table to w
// and returns the highest rate held (0 when none was).
func (s *Session) Capacity(ctx context.Context, w io.Writer) (int, error) {
	steps, rep, err := s.run.capacity(ctx)
	if err != nil {
		return 0, err
	}
	printCapacity(w, s.o, steps, rep)
	if fails := rep.Failures(); len(fails) > 0 {
		return 0, fmt.Errorf("capacity run left the stores inconsistent: %s", strings.Join(fails, "; "))
	}
	best := 0
	for _, st := range steps {
		if st.held {
			best = st.rate
		}
	}
	return best, nil
}

// Execute connects the watchers, attacks with the mix at rate for d, then converges and
// verifies; attacking (when not nil) is told when the attack begins.
func (s *Session) Execute(ctx context.Context, rate int, d time.Duration, attacking func(time.Time)) (*Report, error) {
	s.o.Rate, s.o.Duration = rate, d
	s.run.attacking = attacking
	defer func() { s.run.attacking = nil }()
	return s.run.execute(ctx)
}

// gqlURL is the GraphQL endpoint of an instance, tagged with a request number so a
// vegeta result can be matched with what was sent (gqlgen ignores the query string of a POST).
func gqlURL(addr string, seq uint64) string {
	return "http://" + addr + "/query?lt=" + strconv.FormatUint(seq, 10)
}

func seqOfURL(raw string) (uint64, bool) {
	u, err := url.Parse(raw)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(u.Query().Get("lt"), 10, 64)
	return n, err == nil
}
