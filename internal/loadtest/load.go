package loadtest

// The premiere-night load test (`seatflow load`, `make load`): a vegeta attack with a
// mix of catalog browsing, holds and pays/cancels against several instances, websocket
// watchers of the hot showtimes, optional chaos (kill -9 of one instance, restart of
// Redis), and at the end the reconciler and Verify. By default it starts everything it
// needs itself: a private redis-server on a loopback port (never the shared one on
// 6379), a fresh MySQL database and three instances of this very binary as children.

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"seatflow/internal/app"
	"seatflow/internal/cli"
	"seatflow/internal/database"
)

// loadOptions are the load test's flags.
type loadOptions struct {
	Duration   time.Duration
	Rate       int
	Watchers   int
	Instances  []string
	Start      bool
	Chaos      bool
	MySQLDSN   string
	Fresh      bool
	RedisPort  int
	Prefix     string
	Secret     string
	Customers  int
	HoldTTL    time.Duration
	Dir        string
	Bin        string
	MaxWorkers uint64
	Seed       int64
}

// envOr is the environment variable key, or def when it is not set.
func envOr(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}

const defaultLoadSecret = "seatflow-load-test-shared-secret"

func parseLoadOptions(args []string, stderr io.Writer) (*loadOptions, error) {
	o := &loadOptions{}
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var instances string
	var workers uint
	fs.DurationVar(&o.Duration, "duration", 60*time.Second, "how long the attack runs (the issue's done-when is 5m)")
	fs.IntVar(&o.Rate, "rate", 300, "requests per second over all instances")
	fs.IntVar(&o.Watchers, "watchers", 2000, "websocket watchers of the hot showtimes")
	fs.StringVar(&instances, "instances", "127.0.0.1:8081,127.0.0.1:8082,127.0.0.1:8083", "instance addresses (loopback only)")
	fs.BoolVar(&o.Start, "start", true, "start the instances and a private redis-server as children (false: use running ones, e.g. make cluster-up)")
	fs.BoolVar(&o.Chaos, "chaos", false, "kill -9 one instance at 1/3 of the run and restart Redis at 2/3")
	fs.StringVar(&o.MySQLDSN, "mysql-dsn", envOr("SEATFLOW_LOAD_MYSQL_DSN", "root@tcp(127.0.0.1:3306)/seatflow_load"), "MySQL DSN of the load database (created if missing)")
	fs.BoolVar(&o.Fresh, "fresh", true, "with -start: drop and recreate the load database first")
	fs.IntVar(&o.RedisPort, "redis-port", 6391, "loopback port of the private redis-server (never 6379)")
	fs.StringVar(&o.Prefix, "redis-prefix", "sfload", "Redis key prefix of the instances")
	fs.StringVar(&o.Secret, "jwt-secret", envOr("SEATFLOW_JWT_SECRET", defaultLoadSecret), "HS256 secret shared by the instances")
	fs.IntVar(&o.Customers, "customers", 2000, "size of the customer token pool")
	fs.DurationVar(&o.HoldTTL, "hold-ttl", time.Minute, "with -start: SEATFLOW_HOLD_TTL of the instances (short, so holds expire during the run)")
	fs.StringVar(&o.Dir, "dir", "/tmp/seatflow-load", "pids and logs of what the load test starts")
	fs.StringVar(&o.Bin, "bin", "", "server binary the instances run (default: the one seatflow-bench built)")
	fs.UintVar(&workers, "max-workers", 1000, "upper bound of vegeta's workers")
	fs.Int64Var(&o.Seed, "seed", 0, "random seed (0 = time based)")
	if err := fs.Parse(args); err != nil {
		return nil, cli.UsageError{Msg: err.Error()}
	}
	o.MaxWorkers = uint64(workers)
	for _, a := range strings.Split(instances, ",") {
		if a = strings.TrimSpace(a); a != "" {
			o.Instances = append(o.Instances, a)
		}
	}
	switch {
	case o.Duration <= 0 || o.Duration > 2*time.Hour:
		return nil, cli.UsageError{Msg: "-duration must be in (0, 2h]"}
	case o.Rate <= 0 || o.Rate > 20000:
		return nil, cli.UsageError{Msg: "-rate must be in [1, 20000]"}
	case o.Watchers < 0 || o.Watchers > 20000:
		return nil, cli.UsageError{Msg: "-watchers must be in [0, 20000]"}
	case len(o.Instances) == 0:
		return nil, cli.UsageError{Msg: "-instances is empty"}
	case o.RedisPort <= 0 || o.RedisPort > 65535 || o.RedisPort == 6379:
		return nil, cli.UsageError{Msg: "-redis-port must be a free loopback port other than 6379 (the shared Redis)"}
	case o.Customers < 10:
		return nil, cli.UsageError{Msg: "-customers must be at least 10"}
	case len(o.Secret) < 16:
		return nil, cli.UsageError{Msg: "-jwt-secret must be at least 16 bytes"}
	}
	for _, a := range o.Instances {
		if err := requireLoopback(a); err != nil {
			return nil, cli.UsageError{Msg: "-instances: " + err.Error()}
		}
	}
	cfg, err := mysql.ParseDSN(o.MySQLDSN)
	if err != nil {
		return nil, cli.UsageError{Msg: "-mysql-dsn: " + err.Error()}
	}
	if err := requireLoopback(cfg.Addr); err != nil {
		return nil, cli.UsageError{Msg: "-mysql-dsn: " + err.Error()}
	}
	if cfg.DBName == "" {
		return nil, cli.UsageError{Msg: "-mysql-dsn needs a database name"}
	}
	return o, nil
}

// requireLoopback refuses any address that is not on this machine's loopback.
func requireLoopback(hostport string) error {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return err
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%s is not a loopback address", hostport)
	}
	return nil
}

func (o *loadOptions) redisURL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", o.RedisPort) }

// serverEnv is the environment of an instance (and of the in-process verifier).
func (o *loadOptions) serverEnv(addr string) []string {
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SEATFLOW_") {
			env = append(env, kv)
		}
	}
	return append(env,
		"SEATFLOW_ADDR="+addr,
		"SEATFLOW_MYSQL_DSN="+o.MySQLDSN,
		"SEATFLOW_REDIS_URL="+o.redisURL(),
		"SEATFLOW_REDIS_PREFIX="+o.Prefix,
		"SEATFLOW_JWT_SECRET="+o.Secret,
		"SEATFLOW_HOLD_TTL="+o.HoldTTL.String(),
		"SEATFLOW_LOG_LEVEL=warn",
	)
}

// appConfig is the configuration of the in-process App used for setup checks and Verify.
func (o *loadOptions) appConfig() (*app.Config, error) {
	cfg, _, err := app.ParseConfig("load", []string{
		"-mysql-dsn", o.MySQLDSN, "-redis-url", o.redisURL(), "-redis-prefix", o.Prefix,
		"-jwt-secret", o.Secret, "-hold-ttl", o.HoldTTL.String(), "-redis-cluster", "",
	})
	return cfg, err
}

// cluster is what the load test started: a private redis-server and the instances.
type cluster struct {
	opts  *loadOptions
	out   io.Writer
	mu    sync.Mutex
	procs map[int]*exec.Cmd // instance index → running child
	waits map[int]chan struct{}
	redis bool // the private redis-server was started by us
}

func newCluster(o *loadOptions, out io.Writer) *cluster {
	return &cluster{opts: o, out: out, procs: map[int]*exec.Cmd{}, waits: map[int]chan struct{}{}}
}

func (c *cluster) redisCLI(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	full := append([]string{"-h", "127.0.0.1", "-p", strconv.Itoa(c.opts.RedisPort)}, args...)
	out, err := exec.CommandContext(ctx, "redis-cli", full...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func (c *cluster) redisUp(ctx context.Context) bool {
	out, err := c.redisCLI(ctx, "ping")
	return err == nil && out == "PONG"
}

// startRedis starts the private redis-server (no persistence: a restart loses every key).
func (c *cluster) startRedis(ctx context.Context) error {
	if err := os.MkdirAll(c.opts.Dir, 0o755); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "redis-server",
		"--port", strconv.Itoa(c.opts.RedisPort), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "yes",
		"--pidfile", filepath.Join(c.opts.Dir, "redis.pid"),
		"--logfile", filepath.Join(c.opts.Dir, "redis.log"),
		"--maxclients", "10000")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("start redis-server on %d: %v: %s", c.opts.RedisPort, err, out)
	}
	c.redis = true
	for i := 0; i < 100; i++ {
		if c.redisUp(ctx) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("redis-server on %d did not answer PING", c.opts.RedisPort)
}

// stopRedis shuts the private redis-server down without saving (its data is lost).
func (c *cluster) stopRedis(ctx context.Context) error {
	if _, err := c.redisCLI(ctx, "shutdown", "nosave"); err != nil && c.redisUp(ctx) {
		return fmt.Errorf("shutdown redis on %d: %w", c.opts.RedisPort, err)
	}
	for i := 0; i < 50 && c.redisUp(ctx); i++ {
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// prepareDatabase creates the load database (dropping it first when fresh).
func (c *cluster) prepareDatabase(ctx context.Context, fresh bool) error {
	cfg, err := mysql.ParseDSN(c.opts.MySQLDSN)
	if err != nil {
		return err
	}
	name := cfg.DBName
	if strings.ContainsAny(name, "`'\" ;") {
		return fmt.Errorf("odd database name %q", name)
	}
	cfg.DBName = ""
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	if fresh {
		if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			return fmt.Errorf("drop database %s: %w", name, err)
		}
	}
	if _, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS `"+name+"`"); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

// startInstance runs instance i of the binary as a child (killed with us: Pdeathsig) and
// waits until /readyz answers.
func (c *cluster) startInstance(ctx context.Context, i int) error {
	addr := c.opts.Instances[i]
	if portOpen(addr) {
		return fmt.Errorf("%s is already in use (is `make cluster-up` running? then use -start=false)", addr)
	}
	logf, err := os.OpenFile(filepath.Join(c.opts.Dir, fmt.Sprintf("app-%d.log", i+1)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(c.opts.Bin, "serve")
	cmd.Env = c.opts.serverEnv(addr)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start instance %s: %w", addr, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	c.mu.Lock()
	c.procs[i], c.waits[i] = cmd, done
	c.mu.Unlock()
	_ = os.WriteFile(filepath.Join(c.opts.Dir, fmt.Sprintf("app-%d.pid", i+1)), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644)
	return waitReady(ctx, addr, done, 90*time.Second)
}

// killInstance sends SIGKILL to instance i (no shutdown of any kind) and waits for it.
func (c *cluster) killInstance(i int) error {
	c.mu.Lock()
	cmd, done := c.procs[i], c.waits[i]
	delete(c.procs, i)
	c.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("instance %d is not running", i)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("instance %d did not die", i)
	}
	return nil
}

// stopAll stops every instance (SIGTERM, then SIGKILL) and the private redis.
func (c *cluster) stopAll() {
	c.mu.Lock()
	procs := c.procs
	waits := c.waits
	c.procs = map[int]*exec.Cmd{}
	c.mu.Unlock()
	for i, cmd := range procs {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-waits[i]:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-waits[i]
		}
		_ = os.Remove(filepath.Join(c.opts.Dir, fmt.Sprintf("app-%d.pid", i+1)))
	}
	if c.redis {
		_ = c.stopRedis(context.Background())
		c.redis = false
	}
}

func portOpen(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// waitReady polls /readyz until it answers 200, the process exits or the time is up.
func waitReady(ctx context.Context, addr string, exited <-chan struct{}, limit time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		resp, err := client.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("instance %s exited during start (see its log)", addr)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("instance %s not ready within %s", addr, limit)
}

// externalRestart restarts a killed instance of `make cluster-up` (-start=false) by
// running the script again: it starts every instance that is not running.
func externalRestart(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", "scripts/cluster-up.sh", "--no-build").CombinedOutput()
	if err != nil {
		return fmt.Errorf("scripts/cluster-up.sh: %v: %s", err, out)
	}
	return nil
}

// externalKill kill -9s instance i of `make cluster-up` by its pid file.
func externalKill(i int) error {
	b, err := os.ReadFile(fmt.Sprintf("/tmp/seatflow-cluster-up/app-%d.pid", i+1))
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return fmt.Errorf("bad pid file of instance %d", i+1)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return err
	}
	for j := 0; j < 100; j++ {
		if syscall.Kill(pid, 0) != nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

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
