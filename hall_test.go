package seatflow_test

import (
	"testing"

	"seatflow"
)

// TestMinAccessible: MinAccessible is the companion rule's count turned round, the fewest
// accessible seats CompanionsFit takes for a number of seats, and one fewer is refused.
func TestMinAccessible(t *testing.T) {
	for n := 1; n <= 4*seatflow.MaxSeatsPerOrder; n++ {
		a := seatflow.MinAccessible(n)
		if !seatflow.CompanionsFit(a, n-a) || seatflow.CompanionsFit(a-1, n-a+1) {
			t.Fatalf("MinAccessible(%d) = %d: CompanionsFit(%d, %d) = %t, CompanionsFit(%d, %d) = %t; want true, false",
				n, a, a, n-a, seatflow.CompanionsFit(a, n-a), a-1, n-a+1, seatflow.CompanionsFit(a-1, n-a+1))
		}
	}
}
