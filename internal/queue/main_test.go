package queue_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's run if a goroutine outlives its tests: a subscriber's feed
// runs until its last subscriber leaves, and the admission until its context ends.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
