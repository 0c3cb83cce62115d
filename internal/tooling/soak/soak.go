// Package soak is the soak test (`seatflow-bench soak`, `make soak`): the load test's
// premiere-night mix on its instances at half their measured capacity for a long run,
// with the instances' resources sampled throughout and judged flat or not, the report
// and the plot written into docs/RELIABILITY.md and docs/soak.png. It starts, drives and
// observes the instances from the outside, through internal/tooling/loadtest; it changes
// nothing in them.
package soak

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"seatflow/internal/cli"
	"seatflow/internal/tooling/loadtest"
)

// Run is `seatflow-bench soak`: it parses args (the load test's flags and the soak's),
// runs the soak and prints its report to stdout; serverBin is the instances' binary.
func Run(ctx context.Context, args []string, stdout io.Writer, serverBin string) error {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	load := loadtest.Flags(fs)
	// The soak's own defaults for flags of the load test.
	// Capacity steps from a low rate, ×1.5 each: a dozen steps reach 4,000 req/s, and the
	// rate held is within a factor 1.5 of the capacity.
	for name, v := range map[string]string{"duration": "30m", "watchers": "1000", "step": "10s", "step-factor": "1.5"} {
		f := fs.Lookup(name)
		if err := f.Value.Set(v); err != nil {
			return err
		}
		f.DefValue = v
	}
	every := fs.Duration("sample", 10*time.Second, "how often the instances' resources are sampled")
	window := fs.Duration("window", 20*time.Minute, "the end of the run whose slopes are judged (at most its last 80%)")
	from := fs.Int("capacity-from", 50, "without -rate: the capacity steps' first rate (req/s); the soak runs at half the highest held")
	out := fs.String("out", "docs", `directory of the plot (soak.png) and of RELIABILITY.md, whose soak section is rewritten ("": neither)`)
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fmt.Fprintln(stdout, "usage: seatflow-bench soak [flags] (the load test's flags, and the soak's)")
		fs.PrintDefaults()
		return nil
	} else if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "rate" })
	o, err := load()
	if err != nil {
		return err
	}
	switch {
	case !o.Start:
		return cli.UsageError{Msg: "soak: -start=false: the soak starts its own instances (it samples their processes)"}
	case o.Chaos || o.Capacity:
		return cli.UsageError{Msg: "soak: -chaos and -capacity are the load test's modes, not the soak's"}
	case *every <= 0 || *every > o.Duration/3:
		return cli.UsageError{Msg: "soak: -sample must be positive and leave at least 3 samples in the run"}
	case *window <= 0:
		return cli.UsageError{Msg: "soak: -window must be positive"}
	case *from <= 0:
		return cli.UsageError{Msg: "soak: -capacity-from must be positive"}
	}
	dsn, err := mysql.ParseDSN(o.MySQLDSN)
	if err != nil {
		return cli.UsageError{Msg: "-mysql-dsn: " + err.Error()}
	}
	duration, rate := o.Duration, o.Rate
	s, err := loadtest.Open(ctx, o, serverBin)
	if err != nil {
		return err
	}
	defer s.Close()
	res := &Result{Duration: duration, Window: Window(duration, *window), Every: *every, Rate: rate,
		Instances: len(s.Instances()), Watchers: o.Watchers, HoldTTL: o.HoldTTL}
	if !given {
		o.Rate = *from
		s.Logf("soak: measuring capacity from %d req/s in steps of %s", o.Rate, o.Step)
		held, err := s.Capacity(ctx, stdout)
		if err != nil {
			return err
		}
		if held == 0 {
			return fmt.Errorf("soak: the instances held no rate of the capacity steps (from %d req/s): lower -capacity-from", *from)
		}
		res.Capacity, res.Rate = held, max(1, held/2)
	}
	a := s.App()
	sampler := NewSampler(Sources{PIDs: s.PIDs(), Addrs: s.MetricsAddrs(), SQL: a.SQL, Database: dsn.DBName,
		Own: func() int { return a.SQL.Stats().OpenConnections }, Redis: a.Redis})
	sctx, stop := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() { defer close(sampled); sampler.Run(sctx, *every) }()
	s.Logf("soak: %d req/s for %s, sampling every %s", res.Rate, duration, *every)
	var began time.Time // the attack's start: the watchers are connected
	rep, err := s.Execute(ctx, res.Rate, duration, func(at time.Time) { began = at })
	stop()
	<-sampled
	if err != nil {
		return err
	}
	rep.Print(stdout, o)
	res.Requests, res.Internal, res.Failures, res.SampleErrors = rep.Requests(), rep.Internal(), rep.Failures(), sampler.Errors()
	for _, ser := range sampler.Series(began) {
		res.Verdicts = append(res.Verdicts, Judge(ser, duration, res.Window))
	}
	if *out != "" {
		if err := write(*out, res); err != nil {
			return err
		}
	}
	fmt.Fprintln(stdout)
	res.Markdown(stdout, "")
	if !res.Passed() {
		return fmt.Errorf("soak failed: a curve grew or could not be sampled, an answer was INTERNAL or a promise was broken (see the report)")
	}
	fmt.Fprintln(stdout, "soak: PASS")
	return nil
}

// write draws soak.png in dir and rewrites the soak section of the RELIABILITY.md there (-out; by default docs/RELIABILITY.md).
func write(dir string, res *Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := Plot(filepath.Join(dir, "soak.png"), res.Verdicts); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	var b strings.Builder
	res.Markdown(&b, "soak.png")
	return WriteSection(filepath.Join(dir, "RELIABILITY.md"), b.String())
}
