package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's run if a goroutine outlives its tests: the serve command
// runs the whole instance (HTTP server, background work, embedded stores) until its
// context ends. Nothing is ignored: the test stops it and closes its connections.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
