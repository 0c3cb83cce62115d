package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	_ "net/http/pprof"
	"strings"
	"time"

	"seatflow/internal/app"
	"seatflow/internal/cli"
	"seatflow/internal/reconcile"
)

const usage = `usage: seatflow [command] [flags]

commands:
  serve       run the API server (default)
  migrate     create or update the database schema, then exit
  seed-demo   add the demo catalog if the database has no movies
  token       print a bearer token: token --sub alice --role customer|admin [--ttl 24h]
  reconcile   run the reconciler: reconcile --once (one run, report printed)
  verify      check that Redis and MySQL agree; prints every violation, exit status 1 if any

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
		return withApp(ctx, "migrate", args, func(a *app.App) error {
			fmt.Fprintln(stdout, "schema is up to date")
			return nil
		})
	case "seed-demo":
		return withApp(ctx, "seed-demo", args, func(a *app.App) error {
			seeded, err := a.Seeder().Seed(ctx)
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
		return withApp(ctx, "verify", args, func(a *app.App) error {
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
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return cli.UsageError{Msg: fmt.Sprintf("unknown command %q\n%s", cmd, usage)}
}

// withApp opens the app (which migrates), runs fn and closes it.
func withApp(ctx context.Context, name string, args []string, fn func(*app.App) error) error {
	cfg, _, err := app.ParseConfig(name, args)
	if err != nil {
		return err
	}
	a, err := app.Open(ctx, cfg, cli.Logger(cfg.LogLevel))
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
		return cli.UsageError{Msg: "usage: seatflow reconcile --once (the server runs it on a schedule)"}
	}
	return withApp(ctx, "reconcile", rest, func(a *app.App) error {
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
				return cli.UsageError{Msg: args[i] + " needs a value"}
			}
			switch strings.TrimLeft(args[i], "-") {
			case "sub":
				sub = args[i+1]
			case "role":
				role = args[i+1]
			case "ttl":
				d, err := time.ParseDuration(args[i+1])
				if err != nil {
					return cli.UsageError{Msg: "--ttl: " + err.Error()}
				}
				ttl = d
			}
			i++
		default:
			rest = append(rest, args[i])
		}
	}
	cfg, _, err := app.ParseConfig("token", rest)
	if err != nil {
		return err
	}
	if sub == "" || role == "" {
		return cli.UsageError{Msg: "usage: seatflow token --sub USER --role customer|admin [--ttl 24h]"}
	}
	a := app.NewAuthenticator(cfg)
	tok, err := a.Issue(sub, role, ttl)
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	fmt.Fprintln(stdout, tok)
	return nil
}

func runServe(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, _, err := app.ParseConfig("serve", args)
	if err != nil {
		return err
	}
	log := cli.Logger(cfg.LogLevel)
	a, err := app.Open(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
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
	if cfg.DebugAddr != "" {
		// net/http/pprof registered its handlers on the default mux, which nothing else uses.
		go func() { log.Error("debug listener", "err", http.ListenAndServe(cfg.DebugAddr, http.DefaultServeMux)) }()
	}
	a.PrintWelcome(stdout, ln.Addr())
	return a.Serve(ctx, ln)
}
