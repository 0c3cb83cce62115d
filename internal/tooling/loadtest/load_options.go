package loadtest

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"seatflow/internal/app"
	"seatflow/internal/cli"
)

// Options are the load test's flags.
type Options struct {
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
	// Capacity mode: raise the rate from Rate by StepFactor every Step until a step fails.
	Capacity bool
	// DebugPort, when set, gives instance i a profiler on 127.0.0.1:DebugPort+i.
	DebugPort int
	// MetricsPort, when set, serves instance i's /metrics on 127.0.0.1:MetricsPort+i
	// (SEATFLOW_METRICS_ADDR: the API port has none).
	MetricsPort int
	Step        time.Duration
	StepFactor  float64
}

// envOr is the environment variable key, or def when it is not set.
func envOr(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}

const defaultLoadSecret = "seatflow-load-test-shared-secret"

func parseLoadOptions(args []string, stderr io.Writer) (*Options, error) {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	check := Flags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, cli.UsageError{Msg: err.Error()}
	}
	return check()
}

// Flags registers the load test's flags on fs; the function it returns reads and checks
// them once fs is parsed (the soak adds its own flags beside them).
func Flags(fs *flag.FlagSet) func() (*Options, error) {
	o := &Options{}
	var instances string
	var workers uint
	fs.DurationVar(&o.Duration, "duration", 60*time.Second, "how long the attack runs (the issue's done-when is 5m)")
	fs.IntVar(&o.Rate, "rate", 300, "requests per second over all instances")
	fs.IntVar(&o.Watchers, "watchers", 2000, "websocket watchers of the hot showtimes")
	fs.StringVar(&instances, "instances", "127.0.0.1:8081,127.0.0.1:8082,127.0.0.1:8083", "instance addresses (loopback only)")
	fs.BoolVar(&o.Start, "start", true, "start the instances and a private redis-server as children (false: use running ones, e.g. make cluster-up)")
	fs.BoolVar(&o.Chaos, "chaos", false, "kill -9 one instance at 1/3 of the run and restart Redis at 2/3")
	fs.IntVar(&o.DebugPort, "debug-port", 0, "give instance i the Go profiler (/debug/pprof/) on 127.0.0.1:PORT+i (0 = none)")
	fs.IntVar(&o.MetricsPort, "metrics-port", 9181, "instance i serves /metrics on 127.0.0.1:PORT+i (0 = none); the soak samples goroutines there")
	fs.BoolVar(&o.Capacity, "capacity", false, "capacity mode: start at -rate and raise it by -step-factor every -step until an operation's p99 passes 250ms or a request fails; report the highest rate held")
	fs.DurationVar(&o.Step, "step", 10*time.Second, "with -capacity: how long each rate is held")
	fs.Float64Var(&o.StepFactor, "step-factor", 1.25, "with -capacity: how much the rate grows from one step to the next")
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
	return func() (*Options, error) {
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
		case o.Capacity && (o.Chaos || o.Step <= 0 || o.StepFactor <= 1):
			return nil, cli.UsageError{Msg: "-capacity needs -step > 0, -step-factor > 1 and no -chaos"}
		case len(o.Instances) == 0:
			return nil, cli.UsageError{Msg: "-instances is empty"}
		case o.RedisPort <= 0 || o.RedisPort > 65535 || o.RedisPort == 6379:
			return nil, cli.UsageError{Msg: "-redis-port must be a free loopback port other than 6379 (the shared Redis)"}
		case o.MetricsPort < 0 || o.MetricsPort > 65000:
			return nil, cli.UsageError{Msg: "-metrics-port must be in [0, 65000]"}
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

func (o *Options) redisURL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", o.RedisPort) }

// serverEnv is the environment of an instance (and of the in-process verifier).
func (o *Options) serverEnv(i int, addr string) []string {
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
		"SEATFLOW_TICKET_KEY_SECRET="+o.ticketSecret(),
		"SEATFLOW_HOLD_TTL="+o.HoldTTL.String(),
		"SEATFLOW_LOG_LEVEL=warn",
		"SEATFLOW_PAYMENT_PROVIDER=test", // the buyers pay with payOrder
		// Every simulated client comes from one address: per-address limits off.
		"SEATFLOW_COST_RESTORE=1000000000", "SEATFLOW_WS_MAX_CONNS_PER_CLIENT=0", "SEATFLOW_WS_MAX_CONNS_PER_SESSION=0",
		"SEATFLOW_DEBUG_ADDR="+map[bool]string{true: fmt.Sprintf("127.0.0.1:%d", o.DebugPort+i), false: ""}[o.DebugPort > 0],
		"SEATFLOW_METRICS_ADDR="+o.MetricsAddr(i),
	)
}

// MetricsAddr is where instance i serves /metrics ("" when -metrics-port is 0).
func (o *Options) MetricsAddr(i int) string {
	if o.MetricsPort <= 0 {
		return ""
	}
	return fmt.Sprintf("127.0.0.1:%d", o.MetricsPort+i)
}

// appConfig is the configuration of the in-process App used for setup checks and Verify.
func (o *Options) appConfig() (*app.Config, error) {
	cfg, _, err := app.ParseConfig("load", []string{
		"-mysql-dsn", o.MySQLDSN, "-redis-url", o.redisURL(), "-redis-prefix", o.Prefix,
		"-jwt-secret", o.Secret, "-ticket-key-secret", o.ticketSecret(), "-hold-ttl", o.HoldTTL.String(), "-redis-cluster", "", "-payment-provider", "test",
	})
	return cfg, err
}

// ticketSecret is the ticket-key secret every instance of the run shares (from the JWT one).
func (o *Options) ticketSecret() string {
	return "tickets-" + o.Secret + "-0123456789abcdef0123456789"
}
