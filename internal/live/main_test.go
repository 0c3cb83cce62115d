package live

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's run if a goroutine outlives its tests: the hub runs until
// its context ends, with a heartbeat and a resync per showtime, and every watch ends with
// its context. Nothing is ignored: every client, server and worker a test opens is closed
// or stopped by its cleanup.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
