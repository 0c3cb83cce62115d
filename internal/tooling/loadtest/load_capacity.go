package loadtest

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// capacityP99 is the latency every operation's p99 must stay under for a rate to hold.
const capacityP99 = 250 * time.Millisecond

// capacityWarmUp is how long the first rate runs, unjudged, before the steps.
const capacityWarmUp = 5 * time.Second

// capacityTarget is the rate the premiere night asks of three instances on one machine.
const capacityTarget = 3000

// capacityStep is one rate of a capacity run and what it measured.
type capacityStep struct {
	rate      int
	achieved  float64 // responses per second over the step
	worstOp   string  // the operation with the highest p99
	worstP99  time.Duration
	p99       map[string]time.Duration
	failed    map[string]int
	held      bool
	why       string
	samples   []string
	responses int
}

// capacity raises the attack's rate from -rate by -step-factor every -step, with the
// watchers connected throughout, until a step fails: an operation's p99 passes
// capacityP99, a request fails (transport error or unexpected code), or the instances
// answer less than 95% of the rate. Then it converges and verifies the stores as a
// normal run does.
func (l *loadRun) capacity(ctx context.Context) ([]capacityStep, *Report, error) {
	o := l.o
	rep := &Report{rate: o.Rate, instances: len(o.Instances), watchersWanted: o.Watchers, watch: &l.watch}
	stop := l.startWatchers(ctx)
	defer stop()
	rep.watchersAtStart = l.watch.connected.Load()
	// A warm-up at the first rate fills the caches and connection pools; it is not judged.
	l.logf("capacity: warming up at %d req/s for %s", o.Rate, capacityWarmUp)
	l.attack(ctx, o.Rate, capacityWarmUp)
	var steps []capacityStep
	for rate := o.Rate; rate <= 20000; rate = int(math.Ceil(float64(rate) * o.StepFactor)) {
		l.resetCounts()
		l.logf("capacity: %d req/s for %s", rate, o.Step)
		began := time.Now()
		l.attack(ctx, rate, o.Step)
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		step := l.judge(rate, time.Since(began))
		l.logf("capacity: %d req/s: %.0f answered per second, worst p99 %s (%s), %d failures: %s",
			rate, step.achieved, ms(step.worstP99), step.worstOp, sum(step.failed), map[bool]string{true: "held", false: "NOT HELD: " + step.why}[step.held])
		steps = append(steps, step)
		if !step.held {
			break
		}
	}
	stop()
	rep.stats, rep.expected, rep.failed = l.stats, l.expected, map[string]int{}
	rep.oversoldClient, rep.paidOrders = l.oversoldC, len(l.paid)
	l.converge(ctx, rep)
	l.verify(ctx, rep)
	return steps, rep, nil
}

// resetCounts starts a step's counts afresh; what the run remembers across steps (pending
// and paid orders, what clients saw sold) stays.
func (l *loadRun) resetCounts() {
	for _, op := range loadOps {
		l.stats[op] = &opStats{codes: map[string]int{}}
	}
	l.expected, l.chaosExp, l.failed = map[string]int{}, map[string]int{}, map[string]int{}
	l.samples, l.sampled = nil, map[string]int{}
}

// judge decides whether the step at rate held.
func (l *loadRun) judge(rate int, took time.Duration) capacityStep {
	s := capacityStep{rate: rate, p99: map[string]time.Duration{}, failed: l.failed, samples: l.samples, held: true}
	for _, op := range loadOps {
		st := l.stats[op]
		if st == nil || st.metrics.Requests == 0 {
			continue
		}
		s.responses += int(st.metrics.Requests)
		p99 := st.metrics.Latencies.P99
		s.p99[op] = p99
		if p99 > s.worstP99 {
			s.worstOp, s.worstP99 = op, p99
		}
	}
	s.achieved = float64(s.responses) / took.Seconds()
	var why []string
	if s.worstP99 > capacityP99 {
		why = append(why, fmt.Sprintf("%s p99 %s ms > %s ms", s.worstOp, ms(s.worstP99), ms(capacityP99)))
	}
	if n := sum(l.failed); n > 0 {
		why = append(why, fmt.Sprintf("%d failed requests (%s)", n, fmtCounts(l.failed)))
	}
	if s.achieved < 0.95*float64(rate) {
		why = append(why, fmt.Sprintf("only %.0f responses per second", s.achieved))
	}
	s.held, s.why = len(why) == 0, strings.Join(why, "; ")
	return s
}

// printCapacity writes the capacity run's report.
func printCapacity(w io.Writer, o *Options, steps []capacityStep, rep *Report) {
	fmt.Fprintf(w, "\n## Premiere-night capacity (%d instances)\n\n", rep.instances)
	fmt.Fprintf(w, "flags: -capacity -rate %d -step %s -step-factor %.2f -watchers %d -hold-ttl %s -customers %d\n\n",
		o.Rate, o.Step, o.StepFactor, o.Watchers, o.HoldTTL, o.Customers)
	fmt.Fprintf(w, "The default mix (90%% browsing, 8%% holds, 2%% pays or cancels) with %d websocket watchers subscribed throughout; each rate is held for %s, then raised by ×%.2f, until an operation's p99 passes %s ms, a request fails, or fewer than 95%% of the requests are answered per second. The load generator runs on the same machine as the instances, MySQL and Redis.\n\n",
		rep.watchersAtStart, o.Step, o.StepFactor, ms(capacityP99))
	fmt.Fprintf(w, "| rate asked (req/s) | answered per second | p99 ms by operation | worst | failures | held |\n|---|---|---|---|---|---|\n")
	best := 0
	for _, s := range steps {
		var p99s []string
		for _, op := range loadOps {
			if p, ok := s.p99[op]; ok {
				p99s = append(p99s, fmt.Sprintf("%s %s", op, ms(p)))
			}
		}
		held := "yes"
		if !s.held {
			held = "no: " + s.why
		} else {
			best = s.rate
		}
		fmt.Fprintf(w, "| %d | %.0f | %s | %s %s | %s | %s |\n", s.rate, s.achieved, strings.Join(p99s, ", "), s.worstOp,
			ms(s.worstP99), fmtCounts(s.failed), held)
	}
	verdict := "PASS"
	if best < capacityTarget {
		verdict = "MISS"
	}
	fmt.Fprintf(w, "\n**Highest rate held: %d req/s** (target ≥ %d req/s: %s).\n", best, capacityTarget, verdict)
	if last := steps[len(steps)-1]; !last.held {
		for _, smp := range last.samples {
			fmt.Fprintf(w, "  e.g. %s\n", smp)
		}
	}
	fmt.Fprintf(w, "\nwatchers: %d subscribed at start, %d deltas delivered, %d version gaps; reconcile converged=%v; oversold seats %d (client view) / %d (MySQL); verify violations %d\n",
		rep.watchersAtStart, rep.watch.deltas.Load(), rep.watch.gaps.Load(), rep.converged, rep.oversoldClient, rep.oversoldDB, len(rep.verifyFinal))
}
