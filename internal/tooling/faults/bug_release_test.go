//go:build seatflow_bug_release

package faults

import (
	"testing"
	"time"
)

// TestCheckerCatchesReleaseBug runs the baseline against a server built with the tag
// seatflow_bug_release, whose seat release skips the last seat of every release
// (internal/seats/release_bug.go): cancels, refunds and expiries answer OK and leave a
// seat held. The linearizability checker must find partitions with no linearization.
//
//	SEATFLOW_FAULTS=short go test -tags seatflow_bug_release -run TestCheckerCatches ./internal/tooling/faults
func TestCheckerCatchesReleaseBug(t *testing.T) {
	e := NewEnv(t, DefaultPlan(10*time.Second), Options{HoldTTL: time.Minute})
	res := execute(t, e, baseline())
	l := res.Linearizability
	if l == nil || len(l.Illegal) == 0 {
		t.Fatalf("the checker found no partition without a linearization under a release that skips a seat; violations: %v", res.Violations)
	}
	t.Logf("caught: %d partitions not linearizable (%v); visualisations %v", len(l.Illegal), l.Illegal, l.Files)
}
