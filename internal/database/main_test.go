package database_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's run if a goroutine outlives its tests: the tests
// migrate from several instances at once, each under the MySQL named lock. Nothing is
// ignored: every database a test opens is closed by its cleanup.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
