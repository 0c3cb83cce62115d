package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Probes take turns: every load of a comparison runs for a short turn, then the next, round
// after round, so that a host that speeds up or slows down during a section weighs on each
// load alike.

// probe is one query of the read-path table, timed in turns with the others.
type probe struct {
	label string
	do    func(ctx context.Context, worker, i int) error
	// workers is how many clients run do at once; the bench's -clients when 0.
	workers int
	// turn, when set, runs before each of the probe's turns; the function it returns runs
	// after it (counters read around the probe's own requests).
	turn func() (done func())
}

// catalogRun is one timed run of a query against one server.
type catalogRun struct {
	label    string
	rps      float64
	lat      latencies
	errors   int
	firstErr string
	// turns is the throughput of each of its turns, round by round.
	turns []float64
}

// medianRatio is the median over the rounds of r's throughput in a round to base's in the
// same round: a ratio of two loads that took turns, which one slow turn (the host busy
// elsewhere for a second) moves less than it moves the ratio of their totals.
func medianRatio(r, base catalogRun) float64 {
	var ratios []float64
	for i := range min(len(r.turns), len(base.turns)) {
		if base.turns[i] > 0 {
			ratios = append(ratios, r.turns[i]/base.turns[i])
		}
	}
	if len(ratios) == 0 {
		return 0
	}
	slices.Sort(ratios)
	if n := len(ratios); n%2 == 0 {
		return (ratios[n/2-1] + ratios[n/2]) / 2
	}
	return ratios[len(ratios)/2]
}

// interleave times the probes in catalogRounds turns each, and returns their runs in the
// probes' order.
func interleave(ctx context.Context, b *benchEnv, probes ...*probe) ([]catalogRun, error) {
	return interleaveRounds(ctx, b.Opt.Clients, catalogRounds, b.Opt.Duration/catalogRounds, probes...)
}

// interleaveRounds times the probes in rounds: each round runs every probe for turn, one
// after another (with clients workers unless the probe names its own), each round in an
// order of its own (a permutation drawn from the round's number, the same in every run).
// In a fixed order a probe always ran after the same one, in the wake of what that one
// left the host and the stores (InnoDB's flushing after holds, say), and at the same place
// in the round: the tracing section's three servers came out in the order they ran, on
// both loads.
func interleaveRounds(ctx context.Context, clients, rounds int, turn time.Duration, probes ...*probe) ([]catalogRun, error) {
	type total struct {
		n     int
		lat   latencies
		errs  map[string]int
		took  time.Duration
		turns []float64
	}
	totals := make([]total, len(probes))
	for r := range rounds {
		for _, i := range rand.New(rand.NewPCG(uint64(r), 0)).Perm(len(probes)) {
			p := probes[i]
			done := func() {}
			if p.turn != nil {
				done = p.turn()
			}
			workers := p.workers
			if workers == 0 {
				workers = clients
			}
			n, lat, errs, took := runFor(ctx, workers, turn, p.do)
			done()
			t := &totals[i]
			t.n, t.lat, t.took = t.n+n, append(t.lat, lat...), t.took+took
			rate := 0.0 // a turn that ended before it began (the probe out of work) still takes its round's place
			if took > 0 {
				rate = float64(n) / took.Seconds()
			}
			t.turns = append(t.turns, rate)
			if t.errs == nil {
				t.errs = map[string]int{}
			}
			for k, v := range errs {
				t.errs[k] += v
			}
		}
	}
	runs := make([]catalogRun, len(probes))
	for i, p := range probes {
		t := totals[i]
		r := catalogRun{label: p.label, rps: float64(t.n) / t.took.Seconds(), lat: t.lat, errors: sumErrors(t.errs), firstErr: firstError(t.errs), turns: t.turns}
		progress("bench:   %-58s %8.0f req/s  p50 %s  p99 %s  errors %d", p.label, r.rps, ms(r.lat.pct(50)), ms(r.lat.pct(99)), r.errors)
		if t.n == 0 {
			return nil, fmt.Errorf("%s: no successful request (%s)", p.label, r.firstErr)
		}
		runs[i] = r
	}
	return runs, nil
}
