package cli_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"seatflow/internal/cli"
)

// program is a binary of two commands, serve (the default) and token; each run records
// the command and arguments it got.
func program(ran *[]string) *cli.Program {
	cmd := func(name string) func(context.Context, []string, io.Writer, io.Writer) error {
		return func(_ context.Context, args []string, out, _ io.Writer) error {
			fs := flag.NewFlagSet(name, flag.ContinueOnError)
			ttl := fs.Duration("ttl", time.Hour, "how long the token lasts")
			rest, err := cli.Parse(fs, args)
			if err != nil {
				return err
			}
			*ran = append(*ran, name+" "+ttl.String()+" "+strings.Join(rest, ","))
			return nil
		}
	}
	return &cli.Program{Name: "seatflow", About: "SeatFlow, a cinema ticketing server", Default: "serve",
		Footer: "Settings come from flags and SEATFLOW_* variables.",
		Commands: []cli.Command{
			{Name: "serve", Usage: "[flags]", Summary: "serve the API", Run: cmd("serve")},
			{Name: "token", Usage: "--sub USER", Summary: "print a token", Doc: "The token is signed with the secret.", Run: cmd("token")},
		}}
}

// TestRunDispatches: the first argument names the command (none, or a flag, runs the
// default), the rest are its arguments; help of the program or of a command goes to out
// with exit status 0; an unknown command and a bad flag are usage errors (exit status 2)
// naming what is wrong; a command's other errors exit 1.
func TestRunDispatches(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		args    []string
		ran     string
		out     []string // in the help printed, when not empty
		errHas  string
		exitFor int
	}{
		{args: nil, ran: "serve 1h0m0s "},
		{args: []string{"--ttl", "2m"}, ran: "serve 2m0s "},
		{args: []string{"token", "-ttl", "5s", "extra"}, ran: "token 5s extra"},
		{args: []string{"-h"}, out: []string{"usage: seatflow [command] [flags]", "serve the API (the default)", "print a token", "SEATFLOW_* variables"}},
		{args: []string{"help"}, out: []string{"commands:"}},
		{args: []string{"help", "token"}, out: []string{"usage: seatflow token --sub USER", "Print a token.", "The token is signed", "-ttl"}},
		{args: []string{"token", "--help"}, out: []string{"usage: seatflow token --sub USER", "how long the token lasts"}},
		{args: []string{"tokens"}, errHas: `unknown command "tokens"`, exitFor: 2},
		{args: []string{"token", "-ttl", "soon"}, errHas: "-ttl: not a duration", exitFor: 2},
		{args: []string{"token", "-nope"}, errHas: "nope", exitFor: 2},
	} {
		var ran []string
		var out, errOut bytes.Buffer
		err := program(&ran).Run(ctx, c.args, &out, &errOut)
		if got := cli.ExitCode(err); got != c.exitFor {
			t.Errorf("%q: exit status %d (%v), want %d", c.args, got, err, c.exitFor)
		}
		if c.errHas != "" && (err == nil || !strings.Contains(err.Error(), c.errHas)) {
			t.Errorf("%q: error %v, want one naming %q", c.args, err, c.errHas)
		}
		if got := strings.Join(ran, ";"); got != c.ran {
			t.Errorf("%q ran %q, want %q", c.args, got, c.ran)
		}
		for _, want := range c.out {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%q printed %q, want it to contain %q", c.args, out.String(), want)
			}
		}
		if len(c.out) == 0 && out.Len() > 0 {
			t.Errorf("%q printed %q, want nothing", c.args, out.String())
		}
	}
	if got := cli.ExitCode(errors.New("disk full")); got != 1 {
		t.Fatalf("exit status of a command's failure = %d, want 1", got)
	}
}

// TestSetFromEnv: a variable sets its flag; a bad value is a usage error naming the
// variable.
func TestSetFromEnv(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	ttl := fs.Duration("ttl", time.Hour, "")
	if err := cli.SetFromEnv(fs.Lookup("ttl"), "SEATFLOW_TTL", "90s"); err != nil || *ttl != 90*time.Second {
		t.Fatalf("SEATFLOW_TTL=90s: %v, ttl %s", err, *ttl)
	}
	err := cli.SetFromEnv(fs.Lookup("ttl"), "SEATFLOW_TTL", "soon")
	if cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), "SEATFLOW_TTL") {
		t.Fatalf("SEATFLOW_TTL=soon: %v, want a usage error naming SEATFLOW_TTL", err)
	}
}
