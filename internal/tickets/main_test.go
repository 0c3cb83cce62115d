package tickets_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's run if a goroutine outlives its tests: WatchCounts runs a
// feed per showtime until its last watcher leaves, and announcements run on timers.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
