package faults

import (
	"context"
	"testing"
	"time"
)

// TestMySQLLatency: every instance's MySQL answers 200 ms ± 100 ms late.
func TestMySQLLatency(t *testing.T) {
	Run(t, Scenario{Order: 1, Name: "mysql-latency", Plan: DefaultPlan(20 * time.Second),
		Fault:   "MySQL latency 200 ms ± 100 ms on every instance",
		Promise: "every request answered within its deadline, no INTERNAL, stores consistent",
		Inject: func(ctx context.Context, e *Env, d time.Duration) error {
			for _, in := range e.Instances {
				if err := in.MySQL.Latency(200, 100); err != nil {
					return err
				}
			}
			e.Applied()
			sleep(ctx, d)
			return nil
		}})
}

// TestMySQLResets: every few seconds every MySQL connection is reset (TCP RST).
func TestMySQLResets(t *testing.T) {
	Run(t, Scenario{Order: 2, Name: "mysql-resets", Plan: DefaultPlan(20 * time.Second),
		Fault:   "MySQL connections reset (TCP RST) for 0.3 s every 2 s on every instance",
		Promise: "a failed request answers SERVICE_UNAVAILABLE, nothing is left half-done",
		Inject: func(ctx context.Context, e *Env, d time.Duration) error {
			end := time.Now().Add(d)
			for time.Now().Before(end) && ctx.Err() == nil {
				for _, in := range e.Instances {
					if err := in.MySQL.Reset(); err != nil {
						return err
					}
				}
				sleep(ctx, 300*time.Millisecond)
				if err := e.Heal(); err != nil {
					return err
				}
				sleep(ctx, min(1700*time.Millisecond, time.Until(end)))
			}
			return nil
		}})
}

// TestMySQLUnreachable: MySQL refuses every instance's connections; cached catalog reads
// go on, mutations answer SERVICE_UNAVAILABLE fast.
func TestMySQLUnreachable(t *testing.T) {
	Run(t, Scenario{Order: 4, Name: "mysql-unreachable", Plan: DefaultPlan(15 * time.Second),
		Fault: "MySQL unreachable from every instance (proxy down: connections refused, open ones closed)",
		Promise: "catalog reads keep being served from the caches; mutations answer SERVICE_UNAVAILABLE fast; " +
			"no request hangs past its deadline; nothing is left half-done",
		Inject: func(ctx context.Context, e *Env, d time.Duration) error {
			for _, in := range e.Instances {
				if err := in.MySQL.Disable(); err != nil {
					return err
				}
			}
			e.Applied()
			sleep(ctx, d)
			return nil
		},
		Extra: mysqlOutageChecks(time.Second)})
}

// TestMySQLBlackholed: MySQL stops answering every instance without closing anything
// (packets dropped): every query waits. Requests must still end by their deadline.
func TestMySQLBlackholed(t *testing.T) {
	Run(t, Scenario{Order: 4, Name: "mysql-blackholed", Plan: DefaultPlan(15 * time.Second),
		Fault: "MySQL silent to every instance (connections stay open, no byte passes either way)",
		Promise: "catalog reads keep being served from the caches; mutations answer SERVICE_UNAVAILABLE by the " +
			"instance's MySQL deadline; no request hangs past its deadline; nothing is left half-done",
		Inject: func(ctx context.Context, e *Env, d time.Duration) error {
			for _, in := range e.Instances {
				if err := in.MySQL.Blackhole(); err != nil {
					return err
				}
			}
			e.Applied()
			sleep(ctx, d)
			return nil
		},
		Extra: mysqlOutageChecks(0)})
}

// mysqlOutageChecks: while MySQL is out, cached catalog reads succeed, no mutation
// succeeds, and mutations fail within fast (0: the request deadline + 1 s).
func mysqlOutageChecks(fast time.Duration) func(e *Env, w *Workload, ws []*Watcher, res *Result) {
	return func(e *Env, w *Workload, ws []*Watcher, res *Result) {
		if fast == 0 {
			fast = e.Plan.Deadline + time.Second
		}
		samples, on, off := w.Rec.Samples()
		var reads, readsOK, muts, mutsFast int
		for _, s := range samples {
			if !during(s, on, off) {
				continue
			}
			switch {
			case s.Op == OpShowtime || s.Op == OpMovies:
				reads++
				if s.Code == CodeOK {
					readsOK++
				}
			case isMutation(s.Op):
				muts++
				if s.Latency < fast {
					mutsFast++
				}
				if s.Code == CodeOK && s.Start.Add(s.Latency).Before(off) {
					res.violate("%s answered OK while MySQL was unreachable", s.Op)
				}
			}
		}
		res.Note("catalog reads served during the outage: %d of %d", readsOK, reads)
		res.Note("mutations answered within %s during the outage: %d of %d", fast, mutsFast, muts)
		if readsOK < reads {
			res.violate("%d catalog reads failed while MySQL was unreachable (the caches hold them)", reads-readsOK)
		}
		if mutsFast < muts {
			res.violate("%d mutations took %s or more to fail while MySQL was unreachable", muts-mutsFast, fast)
		}
	}
}

// TestMySQLRestart: the MySQL server (a private one) is shut down mid-load and started
// again.
func TestMySQLRestart(t *testing.T) {
	m := StartMariaDB(t)
	var stopped, started time.Duration
	Run(t, Scenario{Order: 3, Name: "mysql-restart", Plan: DefaultPlan(20 * time.Second),
		Opts:    Options{MySQLServerDSN: m.ServerDSN()},
		Fault:   "MySQL server shut down (SIGTERM) mid-load, started again after a few seconds",
		Promise: "requests during the restart answer SERVICE_UNAVAILABLE, the instances reconnect by themselves, nothing is left half-done",
		Inject: func(ctx context.Context, e *Env, d time.Duration) error {
			begin := time.Now()
			if err := m.Stop(); err != nil {
				return err
			}
			stopped = time.Since(begin)
			e.Applied()
			sleep(ctx, min(5*time.Second, d/3))
			begin = time.Now()
			if err := m.Start(); err != nil {
				return err
			}
			started = time.Since(begin)
			sleep(ctx, d-stopped-started-min(5*time.Second, d/3))
			return nil
		},
		Extra: func(e *Env, w *Workload, ws []*Watcher, res *Result) {
			res.Note("shutdown took %.1f s, down %.1f s, start took %.1f s", stopped.Seconds(),
				min(5*time.Second, e.Plan.Fault/3).Seconds(), started.Seconds())
		}})
}
