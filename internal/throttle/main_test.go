package throttle

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's run if a goroutine outlives its tests: the tests spend
// one budget from several instances at once. Nothing is ignored: every client a test
// opens is closed by its cleanup.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
