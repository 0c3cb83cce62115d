package bench

import (
	"math"
	"testing"
)

func TestParseCPULine(t *testing.T) {
	got := parseCPULine("cpu  100 5 50 800 20 3 2 0 7 0")
	if got.total != 980 || got.idle != 820 { // guest (7) is in user already
		t.Fatalf("parseCPULine = %+v, want total 980, idle 820", got)
	}
	a, b := cpuTimes{total: 1000, idle: 600}, cpuTimes{total: 1200, idle: 660}
	if busy := a.busyUntil(b); math.Abs(busy-0.7) > 1e-9 {
		t.Fatalf("busy = %v, want 0.7", busy)
	}
	if parseCPULine("intr 1 2 3").total != 0 {
		t.Fatal("a line other than cpu's read as CPU times")
	}
}

// TestRateAtBusy: the rate comes down, scaled by the busy share measured, until the host
// is at most 70 % busy, and at most busyTries rates are tried.
func TestRateAtBusy(t *testing.T) {
	// A host with half its time busy with its own work: 5,000/s is 96 % busy, as the
	// queue's joins found it (a share proportional to the rate came down too slowly).
	host := func(rate int) float64 { return 0.5 + 0.46*float64(rate)/5000 }
	var tried []int
	rate, busy, within, err := rateAtBusy(5000, func(rate int) (float64, error) {
		tried = append(tried, rate)
		return host(rate), nil
	})
	if err != nil || !within || busy > hostBusyMax || rate >= 5000 {
		t.Fatalf("rateAtBusy = %d, %.2f, %v, %v; want a rate below 5000 at most 70 %% busy", rate, busy, within, err)
	}
	if len(tried) > 3 || tried[0] != 5000 {
		t.Fatalf("rates tried %v: want 5000 first, at most %d", tried, busyTries)
	}
	// A host saturated above 3,000/s (busy no more for a higher offer), linear below: the
	// line through two saturated runs must not send the rate to nothing.
	tried = nil
	saturated := func(rate int) float64 { return min(0.95, 0.3+0.65*float64(rate)/3000) }
	rate, busy, within, _ = rateAtBusy(5000, func(rate int) (float64, error) { tried = append(tried, rate); return saturated(rate), nil })
	if !within || busy < 0.5 || rate < 1000 {
		t.Fatalf("saturated host: rate %d at %.2f busy after %v; want one at 50 to 70 %% busy", rate, busy, tried)
	}
	// A host that is never quiet enough: the last rate is reported, not within.
	tried = nil
	_, _, within, _ = rateAtBusy(5000, func(rate int) (float64, error) { tried = append(tried, rate); return 0.95, nil })
	if within || len(tried) != busyTries {
		t.Fatalf("always busy: within %v after %d tries, want false after %d", within, len(tried), busyTries)
	}
	// Quiet at the first rate: one run.
	tried = nil
	if rate, _, within, _ := rateAtBusy(1000, func(rate int) (float64, error) { tried = append(tried, rate); return 0.4, nil }); rate != 1000 || !within || len(tried) != 1 {
		t.Fatalf("quiet host: rate %d within %v after %v, want 1000 at once", rate, within, tried)
	}
}
