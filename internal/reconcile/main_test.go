package reconcile_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's run if a goroutine outlives its tests: the reconciler
// runs until its context ends, and its race test starts buyers and a watcher. Nothing is
// ignored: every client, server and worker a test opens is closed or stopped by its
// cleanup, and the goroutines the libraries start (go-redis, database/sql, the MySQL
// driver) end with the Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
