package wscompare

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// serveEnv names the server a run of the test binary serves (Serve) instead of testing.
const serveEnv = "WSCOMPARE_SERVE"

func TestMain(m *testing.M) {
	if kind := os.Getenv(serveEnv); kind != "" {
		if err := Serve(kind, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestCompare runs the comparison small: every server takes its watchers, delivers every
// round to each of them, and is measured.
func TestCompare(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const watchers, rounds = 50, 3
	results, err := Run(ctx, Options{Watchers: watchers, Rounds: rounds, Settle: time.Millisecond,
		Command: func(server string) *exec.Cmd {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), serveEnv+"="+server)
			return cmd
		}})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != len(Servers) {
		t.Fatalf("%d results, want %d", len(results), len(Servers))
	}
	for _, r := range results {
		if r.Delivered != watchers*rounds || r.Dropped != 0 || len(r.Passes) != rounds {
			t.Errorf("%s: %d messages delivered (%d not queued) in %d passes, want %d in %d", r.Server, r.Delivered, r.Dropped, len(r.Passes), watchers*rounds, rounds)
		}
		if r.MessageBytes != results[0].MessageBytes {
			t.Errorf("%s: messages of %d bytes, want the seatflow server's %d", r.Server, r.MessageBytes, results[0].MessageBytes)
		}
		if r.BaseKiB <= 0 || r.ConnectedKiB <= 0 || r.CPU <= 0 {
			t.Errorf("%s: not measured: %+v", r.Server, r)
		}
	}
	if got := results[0].MessageBytes; got < DefaultSize*9/10 || got > DefaultSize*11/10 {
		t.Errorf("the seat map's message is %d bytes, want about %d", got, DefaultSize)
	}
	var table strings.Builder
	Table(&table, results)
	t.Log("\n" + table.String())
}
