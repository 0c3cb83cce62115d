// Package faults is the fault-injection suite (docs/RELIABILITY.md): SeatFlow instances
// run in-process, each reaching MySQL and Redis through toxiproxy proxies of its own, so a
// fault can hit every instance or one alone. A scenario runs a bounded mixed workload
// (holds, pays, cancels, seat-map and catalog reads, websocket watchers) while its fault
// is on, heals it, and hands the run to the checker, which fails the test on any broken
// promise: end states, and the recorded history of holds, payments, cancels, extends,
// refunds, order reads and expiries checked for linearizability with porcupine
// (model.go, linearize.go). TestBaseline runs the workload without a fault;
// TestWaitlistUnderFaults adds a sold-out showtime's waiting list, its offers recorded as
// holds of the entrants' orders (waitlist.go). The package only observes the product through its API and its stores; it
// changes nothing except through the API and the reconciler.
//
// SEATFLOW_FAULTS=long runs the full durations (make faults), SEATFLOW_FAULTS=short a
// short version (a step of make test of its own); without it every test is skipped, so
// `go test ./...` does not run the suite beside the other packages, whose load would skew
// the deadlines it measures. SEATFLOW_FAULTS_RESULTS names a directory where each scenario
// writes its measurements as JSON (cmd/seatflow-reliability turns them into
// docs/RELIABILITY.md).
// SEATFLOW_TEST_TOXIPROXY (default 127.0.0.1:8474) is the toxiproxy API.
package faults

import (
	"os"
	"testing"
	"time"
)

// selected skips the test unless SEATFLOW_FAULTS names a version of the suite.
func selected(t *testing.T) {
	t.Helper()
	if v := os.Getenv("SEATFLOW_FAULTS"); v != "short" && v != "long" {
		t.Skip("the fault-injection suite runs with SEATFLOW_FAULTS=short (make test) or long (make faults)")
	}
}

// Long reports whether the suite runs its long version (SEATFLOW_FAULTS=long).
func Long() bool { return os.Getenv("SEATFLOW_FAULTS") == "long" }

// Plan is the shape of one scenario's run: the workload before, during and after the fault.
type Plan struct {
	Instances int
	// Before, Fault and After are the workload's phases: the fault is on during Fault.
	Before, Fault, After time.Duration
	// Rate is requests per second over all instances.
	Rate int
	// WatchersPerInstance are websocket seat-map subscriptions per instance.
	WatchersPerInstance int
	// Deadline is each request's deadline: the instances' SEATFLOW_REQUEST_TIMEOUT; the
	// client gives up one second after it.
	Deadline time.Duration
}

// DefaultPlan is the plan of a scenario whose fault lasts fault in the long version.
func DefaultPlan(fault time.Duration) Plan {
	if Long() {
		return Plan{Instances: 3, Before: 5 * time.Second, Fault: fault, After: 10 * time.Second, Rate: 40,
			WatchersPerInstance: 2, Deadline: 4 * time.Second}
	}
	return Plan{Instances: 2, Before: 2 * time.Second, Fault: min(fault, 5*time.Second), After: 3 * time.Second,
		Rate: 25, WatchersPerInstance: 1, Deadline: 4 * time.Second}
}
