package seats_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's run if a goroutine outlives its tests: they hold seats
// from many goroutines at once, the calls batched into pipelines. Nothing is ignored:
// every client a test opens is closed by its cleanup.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
