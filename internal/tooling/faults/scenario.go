package faults

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Scenario is one fault and what the system promised under it.
type Scenario struct {
	Order   int
	Name    string
	Fault   string // what is done, for the report
	Promise string // what the system promised, for the report
	Plan    Plan
	Opts    Options
	// Inject turns the fault on and keeps it on for d (it may change it meanwhile, e.g.
	// reset connections every few seconds); the fault must be off when it returns.
	Inject func(ctx context.Context, e *Env, d time.Duration) error
	// Prepare, when set, changes the workload before it starts.
	Prepare func(e *Env, w *Workload)
	// Settle, when set, runs once the workload is over and the fault healed, before the
	// checker: what the scenario must finish through the API for its history to be whole
	// (the waiting list's offers). It returns what it could not do, as violations.
	Settle func(ctx context.Context, e *Env, w *Workload) []string
	// Extra checks what the scenario promises beyond the common checks; it runs after the
	// checker, with the watchers still connected.
	Extra func(e *Env, w *Workload, ws []*Watcher, res *Result)
}

// Run runs a scenario: warm-up, workload before, during and after the fault, heal,
// checker. It fails the test on any violation and writes the result (SEATFLOW_FAULTS_RESULTS).
func Run(t *testing.T, s Scenario) *Result {
	t.Helper()
	e := NewEnv(t, s.Plan, s.Opts)
	return RunOn(t, e, s)
}

// RunOn is Run on an Env the caller built (and may have changed, e.g. skewed clocks).
func RunOn(t *testing.T, e *Env, s Scenario) *Result {
	t.Helper()
	res := execute(t, e, s)
	if err := res.write(); err != nil {
		t.Errorf("write the result: %v", err)
	}
	if len(res.Violations) > 0 {
		t.Errorf("%d violations (instance logs: %s/%s-*.log):\n  %s", len(res.Violations), e.logDir, e.Name,
			strings.Join(res.Violations, "\n  "))
	}
	return res
}

// execute runs the scenario and checks it, and returns what it found without failing the
// test on it (the test that injects a bug expects violations).
func execute(t *testing.T, e *Env, s Scenario) *Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res := &Result{Order: s.Order, Name: s.Name, Fault: s.Fault, Promise: s.Promise, Long: Long(), Instance: len(e.Instances)}
	w := NewWorkload(e)
	e.work = w
	if s.Prepare != nil {
		s.Prepare(e, w)
	}
	// Warm the caches: every instance reads the catalog and the seat map once.
	warm := NewWorkload(e)
	for _, in := range e.Instances {
		for _, q := range []struct{ op, q string }{{OpShowtime, qShowtime}, {OpMovies, qMovies}, {OpSeatMap, qSeatMap}} {
			if code := warm.send(ctx, in, q.op, "", q.q, map[string]any{"id": e.Show.GQLID}, nil); code != CodeOK && q.op != OpMovies {
				t.Fatalf("warm-up %s on instance %d: %s", q.op, in.Index, code)
			}
		}
	}
	ws, stopWatchers := StartWatchers(ctx, e, e.Plan.WatchersPerInstance)
	e.watchers = ws
	defer stopWatchers()
	if !allLive(ws) {
		t.Fatalf("watchers did not subscribe before the workload")
	}
	pollCtx, stopPoll := context.WithCancel(ctx)
	polled := make(chan struct{})
	go func() { defer close(polled); e.pollVersions(pollCtx) }()
	p := e.Plan
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx, p.Before+p.Fault+p.After) }()
	time.Sleep(p.Before)
	e.rec = w.Rec
	w.Rec.FaultOn() // again when the Inject says the fault is in place (Env.Applied)
	t.Logf("fault on: %s", s.Fault)
	if err := s.Inject(ctx, e, p.Fault); err != nil {
		res.violate("inject the fault: %v", err)
	}
	// The fault ends when healing begins: a request held by the fault may complete while
	// the proxies are being healed, and that is after the fault, not during it.
	w.Rec.FaultOff()
	if err := e.Heal(); err != nil {
		res.violate("heal: %v", err)
	}
	t.Logf("fault healed")
	<-done
	if s.Settle != nil {
		for _, v := range s.Settle(ctx, e, w) {
			res.violate("settle: %s", v)
		}
	}
	stopPoll()
	<-polled
	res.measure(w.Rec)
	Check(ctx, e, w, ws, res)
	if s.Extra != nil {
		s.Extra(e, w, ws, res)
	}
	t.Logf("%d requests, codes %v; during the fault %v; p99 during the fault %.0f ms (mutations %.0f ms); recovery %.1f s; repairs: %s",
		res.Requests, res.Codes, res.DuringFault, res.P99FaultMS, res.P99MutationFaultMS, res.RecoverySeconds, res.Repairs)
	if l := res.Linearizability; l != nil {
		t.Logf("history: %d calls (%d lost) as %d operations in %d partitions, checked in %.0f ms: %d not linearizable, %d undecided; "+
			"seat-map reads %d seats, %d stale (max %.0f ms), %d impossible; live frames %d, p99 %.0f ms behind, max %.0f ms, %d missed",
			sum(l.Calls), l.Lost, l.Operations, l.Partitions, l.CheckMS, len(l.Illegal), len(l.Undecided),
			l.Reads.Observations, l.Reads.Stale, l.Reads.MaxMS, l.Reads.Impossible, l.Frames.Observations, l.Frames.P99MS,
			l.Frames.MaxMS, l.Frames.Missed)
	}
	for _, n := range res.Notes {
		t.Logf("note: %s", n)
	}
	return res
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// watchersOf returns the watchers of e's run.
func watchersOf(e *Env) []*Watcher { return e.watchers }

// Applied marks the moment the fault is in place: an Inject calls it once it has changed
// every proxy or server, so that requests sent while it was being set up do not count as
// sent during the fault.
func (e *Env) Applied() {
	if e.rec != nil {
		e.rec.FaultOn()
	}
}
