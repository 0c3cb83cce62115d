package seatrender_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's run if a goroutine outlives its tests: the property
// test serves the real schema over an httptest server and watches seat maps through the
// live hub. Nothing is ignored: every server, client and hub a test opens is closed or
// stopped by its cleanup.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
