package coalesce

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's run if a goroutine outlives its tests: a computation
// runs in a goroutine of its own, which must end when its last caller has its answer or
// went away. Nothing is ignored.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
