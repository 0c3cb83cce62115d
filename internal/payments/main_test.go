package payments_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's run if a goroutine outlives its tests: they serve
// stripe-mock behind a recording proxy on an httptest server and call it through the
// provider's HTTP client, whose connections end with each test. Nothing is ignored.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
