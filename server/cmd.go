package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"seatflow/internal/reconcile"
)

// usageError is a mistake in the command line (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func exitCode(err error) int {
	var u usageError
	if errors.As(err, &u) {
		return 2
	}
	return 1
}

const usage = `usage: seatflow [command] [flags]

commands:
  serve       run the API server (default)
  migrate     create or update the database schema, then exit
  seed-demo   add the demo catalog if the database has no movies
  token       print a bearer token: token --sub alice --role customer|admin [--ttl 24h]
  reconcile   run the reconciler: reconcile --once (one run, report printed)
  verify      check that Redis and MySQL agree; prints every violation, exit status 1 if any
  bench       run the benchmarks on a scratch database and print docs/BENCHMARKS.md (bench -h)

Flags and SEATFLOW_* variables: seatflow serve -h`

// Run runs the command in args.
func Run(ctx context.Context, args []string, stdout io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return runServe(ctx, args, stdout)
	case "migrate":
		return withApp(ctx, "migrate", args, func(a *App) error {
			fmt.Fprintln(stdout, "schema is up to date")
			return nil
		})
	case "seed-demo":
		return withApp(ctx, "seed-demo", args, func(a *App) error {
			seeded, err := a.SeedDemo(ctx)
			if err == nil && !seeded {
				fmt.Fprintln(stdout, "the catalog already has movies; nothing seeded")
			} else if err == nil {
				fmt.Fprintln(stdout, "demo catalog seeded")
			}
			return err
		})
	case "token":
		return runToken(args, stdout)
	case "reconcile":
		return runReconcile(ctx, args, stdout)
	case "verify":
		return withApp(ctx, "verify", args, func(a *App) error {
			violations, err := reconcile.Verify(ctx, a.DB, a.Seats)
			if err != nil {
				return err
			}
			for _, v := range violations {
				fmt.Fprintln(stdout, v)
			}
			if len(violations) > 0 {
				return fmt.Errorf("%d violations", len(violations))
			}
			fmt.Fprintln(stdout, "verify: Redis and MySQL agree")
			return nil
		})
	case "bench":
		return runBench(ctx, args, stdout)
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return usageError{fmt.Sprintf("unknown command %q\n%s", cmd, usage)}
}

func newLogger(level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}

// withApp opens the app (which migrates), runs fn and closes it.
func withApp(ctx context.Context, name string, args []string, fn func(*App) error) error {
	cfg, _, err := ParseConfig(name, args)
	if err != nil {
		return err
	}
	a, err := Open(ctx, cfg, newLogger(cfg.LogLevel))
	if err != nil {
		return err
	}
	defer a.Close()
	return fn(a)
}

func runReconcile(ctx context.Context, args []string, stdout io.Writer) error {
	once := false
	rest := args[:0:0]
	for _, arg := range args {
		if arg == "--once" || arg == "-once" {
			once = true
		} else {
			rest = append(rest, arg)
		}
	}
	if !once {
		return usageError{"usage: seatflow reconcile --once (the server runs it on a schedule)"}
	}
	return withApp(ctx, "reconcile", rest, func(a *App) error {
		rep, err := a.Rec.RunOnce(ctx)
		if errors.Is(err, reconcile.ErrBusy) {
			fmt.Fprintln(stdout, "another instance is reconciling; nothing done")
			return nil
		} else if err != nil {
			return err
		}
		return json.NewEncoder(stdout).Encode(rep)
	})
}

func runToken(args []string, stdout io.Writer) error {
	var sub, role string
	ttl := 24 * time.Hour
	rest := args[:0:0]
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--sub", "-sub", "--role", "-role", "--ttl", "-ttl":
			if i+1 >= len(args) {
				return usageError{args[i] + " needs a value"}
			}
			switch strings.TrimLeft(args[i], "-") {
			case "sub":
				sub = args[i+1]
			case "role":
				role = args[i+1]
			case "ttl":
				d, err := time.ParseDuration(args[i+1])
				if err != nil {
					return usageError{"--ttl: " + err.Error()}
				}
				ttl = d
			}
			i++
		default:
			rest = append(rest, args[i])
		}
	}
	cfg, _, err := ParseConfig("token", rest)
	if err != nil {
		return err
	}
	if sub == "" || role == "" {
		return usageError{"usage: seatflow token --sub USER --role customer|admin [--ttl 24h]"}
	}
	a := newAuthenticator(cfg)
	tok, err := a.Issue(sub, role, ttl)
	if err != nil {
		return usageError{err.Error()}
	}
	fmt.Fprintln(stdout, tok)
	return nil
}

func runServe(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, _, err := ParseConfig("serve", args)
	if err != nil {
		return err
	}
	log := newLogger(cfg.LogLevel)
	a, err := Open(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
	a.Start(ctx)
	if cfg.Embedded() {
		if _, err := a.SeedDemo(ctx); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	if cfg.DebugAddr != "" {
		// net/http/pprof registered its handlers on the default mux, which nothing else uses.
		go func() { log.Error("debug listener", "err", http.ListenAndServe(cfg.DebugAddr, http.DefaultServeMux)) }()
	}
	srv := &http.Server{
		Handler:           a.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	a.PrintWelcome(stdout, ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	closeAllWebsockets(websocket.CloseGoingAway, "server shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return srv.Shutdown(shutdownCtx)
}

// PrintWelcome prints where the server listens and, in embedded mode, demo tokens.
func (a *App) PrintWelcome(w io.Writer, addr net.Addr) {
	host := addr.String()
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
		host = fmt.Sprintf("localhost:%d", tcp.Port)
	}
	mode := "MySQL + Redis"
	if a.Config.Embedded() {
		mode = "embedded (SQLite " + a.Config.SQLitePath + " + in-process Redis)"
	}
	fmt.Fprintf(w, "SeatFlow is listening (%s)\n  playground: http://%s/\n  GraphQL:    http://%s/query\n", mode, host, host)
	fmt.Fprintf(w, "  demo:       http://%s/demo\n", host)
	if a.Config.Embedded() {
		customer, _ := a.Auth.Issue("demo-customer", "customer", 7*24*time.Hour)
		admin, _ := a.Auth.Issue("demo-admin", "admin", 7*24*time.Hour)
		fmt.Fprintf(w, "  customer token: %s\n  admin token:    %s\n  (send as header  Authorization: Bearer <token>)\n", customer, admin)
	}
}
