// Command seatflow-bench runs SeatFlow's benchmarks (`seatflow-bench`, which prints
// docs/BENCHMARKS.md), its premiere-night load test (`seatflow-bench load`) and its soak
// test (`seatflow-bench soak`, which writes docs/soak.png and the soak section of
// docs/RELIABILITY.md). It is a
// binary of its own so that the server binary links neither the test helpers nor vegeta.
// Child servers run the server binary named by -server, or one it builds from ./server.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	"seatflow/internal/cli"
	"seatflow/internal/tooling/bench"
	"seatflow/internal/tooling/loadtest"
	"seatflow/internal/tooling/soak"
)

const usage = `usage: seatflow-bench [-server BIN] [load|soak] [flags]

  seatflow-bench [flags]        run the benchmarks, print docs/BENCHMARKS.md (seatflow-bench -h)
  seatflow-bench load [flags]   run the premiere-night load test (seatflow-bench load -h)
  seatflow-bench soak [flags]   run the soak test, write its curves (seatflow-bench soak -h)

-server BIN is the server binary child servers run (default: built from ./server).`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "seatflow-bench:", err)
		os.Exit(cli.ExitCode(err))
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("seatflow-bench", flag.ContinueOnError)
	server := fs.String("server", "", "server binary child servers run (default: built from ./server)")
	fs.Usage = func() { fmt.Fprintln(os.Stderr, usage) }
	// Only the leading -server flag is ours; the rest belongs to the bench or the load test.
	if len(args) >= 2 && (args[0] == "-server" || args[0] == "--server") {
		if err := fs.Parse(args[:2]); err != nil {
			return cli.UsageError{Msg: err.Error()}
		}
		args = args[2:]
	}
	if len(args) > 0 && (args[0] == "help" || args[0] == "-h" || args[0] == "--help") && len(args) == 1 {
		fmt.Fprintln(stdout, usage)
		return nil
	}
	bin := *server
	if bin == "" {
		dir, err := os.MkdirTemp("", "seatflow-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, "seatflow")
		fmt.Fprintln(os.Stderr, "seatflow-bench: building the server binary …")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./server")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build the server (run from the repository root, or pass -server): %w", err)
		}
	}
	if len(args) > 0 && args[0] == "load" {
		return loadtest.Run(ctx, args[1:], stdout, bin)
	}
	if len(args) > 0 && args[0] == "soak" {
		return soak.Run(ctx, args[1:], stdout, bin)
	}
	return bench.Run(ctx, args, stdout, bin)
}
