package loadtest

// The premiere-night load test (`seatflow load`, `make load`): a vegeta attack with a
// mix of catalog browsing, holds and pays/cancels against several instances, websocket
// watchers of the hot showtimes, optional chaos (kill -9 of one instance, restart of
// Redis), and at the end the reconciler and Verify. By default it starts everything it
// needs itself: a private redis-server on a loopback port (never the shared one on
// 6379), a fresh MySQL database and three instances of this very binary as children.

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
	if o.Bin == "" {
		o.Bin = serverBin
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := newCluster(o, os.Stderr) // progress goes to stderr, the report to stdout
	defer c.stopAll()
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return err
	}
	logf := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "load %s: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
	}
	if o.Start {
		if c.redisUp(ctx) {
			return fmt.Errorf("something already answers on 127.0.0.1:%d; stop it (redis-cli -p %d shutdown nosave) or pick -redis-port", o.RedisPort, o.RedisPort)
		}
		logf("starting private redis-server on 127.0.0.1:%d (no persistence)", o.RedisPort)
		if err := c.startRedis(ctx); err != nil {
			return err
		}
		if err := c.prepareDatabase(ctx, o.Fresh); err != nil {
			return err
		}
	} else if !c.redisUp(ctx) {
		return fmt.Errorf("no redis answers on 127.0.0.1:%d (-start=false expects `make cluster-up`)", o.RedisPort)
	}
	// One in-process App (not started: no background work) migrates the schema before
	// the instances start, and later runs Verify over the same stores.
	cfg, err := o.appConfig()
	if err != nil {
		return err
	}
	inst, err := app.Open(ctx, cfg, cli.Logger("error"))
	if err != nil {
		return fmt.Errorf("open the load database and redis: %w", err)
	}
	defer inst.Close()
	inst.SQL.SetMaxOpenConns(4) // leave MySQL's connections to the instances
	inst.SQL.SetMaxIdleConns(4)
	l := logf
	var maxConns int
	if err := inst.SQL.QueryRowContext(ctx, "SELECT @@max_connections").Scan(&maxConns); err == nil && maxConns < database.DefaultMaxConns*len(o.Instances)+20 {
		l("WARNING: MySQL max_connections=%d but each instance may open %d connections (%d instances): expect SERVICE_UNAVAILABLE under load", maxConns, database.DefaultMaxConns, len(o.Instances))
	}
	if o.Start {
		logf("starting %d instances of %s (logs in %s)", len(o.Instances), o.Bin, o.Dir)
		var wg sync.WaitGroup
		errs := make([]error, len(o.Instances))
		for i := range o.Instances {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = c.startInstance(ctx, i) }()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
	} else {
		for _, a := range o.Instances {
			if err := waitReady(ctx, a, nil, 5*time.Second); err != nil {
				return err
			}
		}
	}
	run, err := newLoadRun(o, inst, logf)
	if err != nil {
		return err
	}
	if err := run.setupCatalog(ctx); err != nil {
		return fmt.Errorf("catalog setup: %w", err)
	}
	if o.Chaos {
		run.chaos = &chaosPlan{
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
	defer run.client.CloseIdleConnections()
	if o.Capacity {
		steps, rep, err := run.capacity(ctx)
		if err != nil {
			return err
		}
		printCapacity(stdout, o, steps, rep)
		if fails := rep.failures(); len(fails) > 0 {
			return fmt.Errorf("capacity run left the stores inconsistent: %s", strings.Join(fails, "; "))
		}
		return nil
	}
	rep, err := run.execute(ctx)
	if err != nil {
		return err
	}
	rep.print(stdout, o)
	if fails := rep.failures(); len(fails) > 0 {
		return fmt.Errorf("load test failed: %s", strings.Join(fails, "; "))
	}
	fmt.Fprintln(stdout, "load: PASS")
	return nil
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
