package cache

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's run if a goroutine outlives its tests: the invalidation
// listener runs until its context ends, rebuilds wait on each other, and the tests race
// readers against writers. Nothing is ignored: every client a test opens is closed by its
// cleanup.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
