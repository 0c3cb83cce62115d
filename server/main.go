// Command server is SeatFlow's one binary: the API server and its operator subcommands
// (serve, migrate, seed-demo, token, ticket-keys, reconcile, verify: the table in cmd.go).
// main only hands off to Run, and server/ holds nothing but the command table: the
// commands live in internal/app.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"seatflow/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "seatflow:", err)
		os.Exit(cli.ExitCode(err))
	}
}
