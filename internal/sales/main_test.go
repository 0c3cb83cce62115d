package sales_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's run if a goroutine outlives its tests (RunCloser runs
// until its context ends).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
