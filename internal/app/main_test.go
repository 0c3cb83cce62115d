package app

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's run if a goroutine outlives its tests: an App runs its
// background work (cache invalidation listener, outbox relay, expiry worker, live hub,
// reconciler) until Close, and every websocket client has its own goroutines. Nothing is
// ignored: every client, server and worker a test opens is closed or stopped by its
// cleanup, and the goroutines the libraries start (go-redis, database/sql, the MySQL
// driver) end with the Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
