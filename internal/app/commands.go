package app

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	_ "net/http/pprof" // the profiler of SEATFLOW_DEBUG_ADDR, on the default mux
	"os"
	"strings"
	"time"

	"seatflow"
	"seatflow/internal/auth"
	"seatflow/internal/cli"
	"seatflow/internal/reconcile"
	"seatflow/internal/telemetry"
	"seatflow/internal/tickets"
)

// The settings each operator command takes as flags; the rest come from the environment.
var (
	storeSettings   = []string{"MYSQL_DSN", "REDIS_URL", "REDIS_CLUSTER", "REDIS_PREFIX", "LOG_LEVEL"}
	seedSettings    = append([]string{"SQLITE_PATH", "TIMEZONE"}, storeSettings...)
	migrateSettings = []string{"MYSQL_DSN", "SQLITE_PATH", "LOG_LEVEL"}
	// reconcile sends the refunds left unsent: it needs the provider (its keys stay in
	// the environment, out of shell history).
	reconcileSettings = append([]string{"PAYMENT_PROVIDER"}, storeSettings...)
	// ticket-keys opens the stored keys: it needs the secret they are sealed with.
	ticketKeySettings = append([]string{"TICKET_KEY_SECRET", "SQLITE_PATH"}, storeSettings...)
	embeddedRefusal   = "in embedded mode (no SEATFLOW_MYSQL_DSN / SEATFLOW_REDIS_URL) the seat state lives " +
		"only in the Redis inside the running server's process, so a separate command would look at an empty one"
)

// ServeCommand runs the API server until ctx ends. In embedded mode it first adds the demo
// data that is missing (catalog, this week's showtimes).
func ServeCommand(ctx context.Context, args []string, out, _ io.Writer) error {
	cfg, _, err := ParseConfig("seatflow serve", args)
	if err != nil {
		return err
	}
	log := cli.Logger(cfg.LogLevel)
	shutdown, err := telemetry.Setup(ctx, log)
	if err != nil {
		return err
	}
	defer func() {
		flushCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(flushCtx); err != nil {
			log.Warn("traces not flushed", "err", err)
		}
	}()
	a, err := Open(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
	if cfg.Embedded() {
		log.Info("embedded mode: SQLite " + cfg.SQLitePath + " and an in-process Redis, which starts empty at every " +
			"start by design: the seat maps and the holds' expiry queue are built again from the database")
		if _, err := a.Booking.RequeuePending(ctx); err != nil {
			return err
		}
	}
	a.Start(ctx)
	if cfg.Embedded() {
		if _, err := a.Seeder().Seed(ctx); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	if cfg.MetricsAddr != "" {
		mln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			return fmt.Errorf("SEATFLOW_METRICS_ADDR: %w", err)
		}
		go a.ServeMetrics(ctx, mln)
	}
	if cfg.DebugAddr != "" {
		// net/http/pprof registered its handlers on the default mux, which nothing else uses.
		go func() { log.Error("debug listener", "err", http.ListenAndServe(cfg.DebugAddr, http.DefaultServeMux)) }()
	}
	a.PrintWelcome(out, ln.Addr())
	return a.Serve(ctx, ln)
}

// MigrateCommand creates or updates the database schema.
func MigrateCommand(ctx context.Context, args []string, out, _ io.Writer) error {
	cfg, _, err := ParseConfigFor("seatflow migrate", migrateSettings, nil, args)
	if err != nil {
		return err
	}
	return withApp(ctx, cfg, func(a *App) error {
		fmt.Fprintln(out, "schema is up to date")
		return nil
	})
}

// SeedDemoCommand adds the demo catalog to a database without movies and the demo
// showtimes to the days of the coming week that have none.
func SeedDemoCommand(ctx context.Context, args []string, out, _ io.Writer) error {
	cfg, _, err := ParseConfigFor("seatflow seed-demo", seedSettings, nil, args)
	if err != nil {
		return err
	}
	return withApp(ctx, cfg, func(a *App) error {
		rep, err := a.Seeder().Seed(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintln(out, rep)
		return nil
	})
}

// VerifyCommand prints every violation of the invariants between Redis and MySQL.
func VerifyCommand(ctx context.Context, args []string, out, _ io.Writer) error {
	cfg, _, err := ParseConfigFor("seatflow verify", storeSettings, nil, args)
	if err != nil {
		return err
	}
	if cfg.Embedded() {
		return cli.Usagef("verify needs the deployment's MySQL and Redis: set SEATFLOW_MYSQL_DSN and "+
			"SEATFLOW_REDIS_URL (or SEATFLOW_REDIS_CLUSTER) as the server has them; %s", embeddedRefusal)
	}
	return withApp(ctx, cfg, func(a *App) error {
		violations, err := reconcile.Verify(ctx, a.DB, a.Seats)
		if err != nil {
			return err
		}
		for _, v := range violations {
			fmt.Fprintln(out, v)
		}
		if len(violations) > 0 {
			return fmt.Errorf("%d violations", len(violations))
		}
		fmt.Fprintln(out, "verify: Redis and MySQL agree")
		return nil
	})
}

// ReconcileCommand runs the reconciler once and prints its report.
func ReconcileCommand(ctx context.Context, args []string, out, _ io.Writer) error {
	once := false
	onceFlag := func(fs *flag.FlagSet) {
		fs.BoolVar(&once, "once", false, "run one reconciliation and print its report (required: servers run it on their own schedule)")
	}
	cfg, _, err := ParseConfigFor("seatflow reconcile", reconcileSettings, onceFlag, args)
	switch {
	case err != nil:
		return err
	case !once:
		return cli.Usagef("usage: seatflow reconcile --once (every server also reconciles every %s)", cfg.ReconcileEvery)
	case cfg.Embedded():
		return cli.Usagef("reconcile --once needs the deployment's MySQL and Redis: set SEATFLOW_MYSQL_DSN and "+
			"SEATFLOW_REDIS_URL (or SEATFLOW_REDIS_CLUSTER) as the server has them; %s. The embedded server reconciles "+
			"itself every %s, and an admin can run it at once with mutation { runReconcile { startedAt } }",
			embeddedRefusal, cfg.ReconcileEvery)
	}
	return withApp(ctx, cfg, func(a *App) error {
		rep, err := a.Rec.RunOnce(ctx)
		if errors.Is(err, reconcile.ErrBusy) {
			fmt.Fprintln(out, "another instance is reconciling; nothing done")
			return nil
		} else if err != nil {
			return err
		}
		return json.NewEncoder(out).Encode(rep)
	})
}

// withApp opens the app (which migrates), runs fn and closes it.
func withApp(ctx context.Context, cfg *Config, fn func(*App) error) error {
	a, err := Open(ctx, cfg, cli.Logger(cfg.LogLevel))
	if err != nil {
		return err
	}
	defer a.Close()
	return fn(a)
}

// TokenUsage is the token command's usage line after its name.
var TokenUsage = "--sub USER --role " + strings.Join(auth.Roles, "|") + " [--ttl 24h]"

// TokenCommand prints a bearer token signed with SEATFLOW_JWT_SECRET, living at most
// SEATFLOW_MAX_TOKEN_LIFETIME (a longer --ttl is refused: the server would refuse the
// token). Without the secret
// it signs with the embedded demo secret only when the environment is embedded mode's
// (and says so on errOut), and refuses otherwise: a token signed with another secret
// than the server's is answered 401 "bad signature".
func TokenCommand(_ context.Context, args []string, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("seatflow token", flag.ContinueOnError)
	sub := fs.String("sub", "", "the user id (the token's subject), e.g. alice (required)")
	role := fs.String("role", "", auth.RoleList()+" (required): staff work the door (checkIn)")
	ttl := fs.Duration("ttl", 24*time.Hour, "how long the token is valid (above 0, at most SEATFLOW_MAX_TOKEN_LIFETIME, 720h by default)")
	_, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case *sub == "" || *role == "":
		return cli.Usagef("usage: seatflow token %s", TokenUsage)
	case !auth.ValidRole(*role):
		return cli.Usagef("invalid value %q for flag -role: want %s (usage: seatflow token %s)", *role, auth.RoleList(), TokenUsage)
	case *ttl <= 0:
		return cli.Usagef("invalid value %q for flag -ttl: want a duration above 0, e.g. 24h", ttl.String())
	}
	if err := seatflow.CheckUserID(*sub); err != nil {
		return cli.Usagef("invalid value %q for flag -sub: %v", *sub, err)
	}
	mode := Config{MySQLDSN: os.Getenv("SEATFLOW_MYSQL_DSN"), RedisURL: os.Getenv("SEATFLOW_REDIS_URL"),
		RedisCluster: os.Getenv("SEATFLOW_REDIS_CLUSTER")}
	secret := os.Getenv("SEATFLOW_JWT_SECRET")
	switch {
	case secret == "" && !mode.Embedded():
		return cli.Usagef("SEATFLOW_JWT_SECRET is not set. A server accepts only tokens signed with its own secret: " +
			"run this command with the server's SEATFLOW_JWT_SECRET in the environment (with docker compose: " +
			"docker compose exec app /seatflow token ..., whose environment has it from .env)")
	case secret == "":
		secret = embeddedSecret
		fmt.Fprintln(errOut, "seatflow token: SEATFLOW_JWT_SECRET is not set: signed with the embedded demo secret, "+
			"which only a server in embedded mode (make run) accepts")
	case len(secret) < 16:
		return cli.Usagef("SEATFLOW_JWT_SECRET must be at least 16 bytes")
	}
	maxLifetime := auth.DefaultMaxLifetime
	if v := os.Getenv("SEATFLOW_MAX_TOKEN_LIFETIME"); v != "" {
		if maxLifetime, err = time.ParseDuration(v); err != nil {
			return cli.Usagef("invalid value %q for SEATFLOW_MAX_TOKEN_LIFETIME: not a duration such as 720h", v)
		}
	}
	tok, err := NewAuthenticator(&Config{JWTSecret: secret, MaxTokenLifetime: maxLifetime}).Issue(*sub, *role, *ttl)
	if err != nil {
		return cli.UsageError{Msg: seatflow.ErrorMessage(err)}
	}
	fmt.Fprintln(out, tok)
	return nil
}

// TicketKeysCommand manages the keys that sign ticket codes. rotate adds a key that signs
// every ticket made from then on, on every instance within tickets.KeyCacheFor; the older
// keys keep verifying their tickets and stay published until the last of those has
// expired. list prints the published keys.
func TicketKeysCommand(ctx context.Context, args []string, out, _ io.Writer) error {
	if len(args) == 0 || (args[0] != "rotate" && args[0] != "list") {
		return cli.Usagef("usage: seatflow ticket-keys rotate|list [flags]")
	}
	cfg, _, err := ParseConfigFor("seatflow ticket-keys "+args[0], ticketKeySettings, nil, args[1:])
	if err != nil {
		return err
	}
	return withApp(ctx, cfg, func(a *App) error {
		if args[0] == "rotate" {
			k, err := a.Tickets.Keys.Rotate(ctx)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "ticket-keys: added key %s; new tickets get it on every instance within %s, "+
				"and the older keys stay published while their tickets are valid\n", k.Kid, tickets.KeyCacheFor)
			return nil
		}
		keys, err := a.Tickets.Keys.Published(ctx)
		if err != nil {
			return err
		}
		for _, k := range keys {
			role := "verifies"
			if k.Signing {
				role = "signs new tickets"
			}
			fmt.Fprintf(out, "%s  added %s  %s\n", k.Kid, k.CreatedAt.UTC().Format(time.RFC3339), role)
		}
		return nil
	})
}
