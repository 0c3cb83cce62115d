package testenv

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

// leakWait is how long the goroutines of finished work may take to end. goleak.Find alone
// retries for about half a second, too little for a busy host running tests under -race.
const leakWait = 5 * time.Second

// NoGoroutineLeft fails tb if a goroutine goleak does not ignore is still running after
// leakWait. Take goleak.IgnoreCurrent() before the work starts and pass it, so only the
// work's goroutines count while the rest of the test's (servers, stores) run on.
func NoGoroutineLeft(tb testing.TB, opts ...goleak.Option) {
	tb.Helper()
	deadline := time.Now().Add(leakWait)
	for {
		err := goleak.Find(opts...)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("goroutines left after %v: %v", leakWait, err)
		}
	}
}
