package bench

import (
	"os"
	"strconv"
	"strings"
)

// A latency target met only on a saturated host measures the host, not the product: with
// the clients, MySQL and Redis on the same two cores as the server, requests queue for a
// core whatever the server does. Such targets are judged at the offered rate that leaves
// the host at most hostBusyMax busy (all its cores, from /proc/stat), found by rateAtBusy;
// the rate the target names is kept as a figure.

const (
	hostBusyMax = 0.70
	busyAim     = 0.66 // the share a next rate aims at, below hostBusyMax
	busyTries   = 5    // rates tried at most
)

// cpuTimes are the host's CPU times summed over every core (/proc/stat's first line), in
// clock ticks: all of them, and the idle ones (idle and iowait).
type cpuTimes struct{ total, idle float64 }

func readCPUTimes() cpuTimes {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return parseCPULine(line)
}

// parseCPULine reads "cpu user nice system idle iowait irq softirq steal ...".
func parseCPULine(line string) cpuTimes {
	var t cpuTimes
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return t
	}
	for i, s := range f[1:] {
		if i >= 8 { // guest times are counted in user and nice already
			break
		}
		v, _ := strconv.ParseFloat(s, 64)
		t.total += v
		if i == 3 || i == 4 {
			t.idle += v
		}
	}
	return t
}

// busySince is the share of the host's CPU time that was busy from t to now.
func (t cpuTimes) busySince() float64 { return t.busyUntil(readCPUTimes()) }

func (t cpuTimes) busyUntil(u cpuTimes) float64 {
	total := u.total - t.total
	if total <= 0 {
		return 0
	}
	return 1 - (u.idle-t.idle)/total
}

// rateAtBusy runs run at an offered rate, first at first, then, while the host was more
// than hostBusyMax busy, at a rate aimed a little below it (busyAim): the second from the
// first alone (the busy share taken as proportional to the rate), the next ones from the
// line through the last two runs (the host's own work, and the clients', do not scale down
// with the rate: a share proportional to it came down too slowly), never below half the
// rate before, at most busyTries runs. run returns the host's busy share over its run. rateAtBusy returns the last rate
// run, its busy share, and whether that stayed within hostBusyMax; the caller keeps the
// last run's results.
func rateAtBusy(first int, run func(rate int) (busy float64, err error)) (rate int, busy float64, within bool, err error) {
	var prevRate int
	var prevBusy float64
	rate = first
	for try := 1; ; try++ {
		if busy, err = run(rate); err != nil {
			return rate, busy, false, err
		}
		if busy <= hostBusyMax || try == busyTries {
			return rate, busy, busy <= hostBusyMax, nil
		}
		next := float64(rate) * busyAim / busy
		if prevRate > 0 && prevRate != rate && prevBusy > busy {
			slope := (prevBusy - busy) / float64(prevRate-rate) // busy share per request a second
			// Near saturation the line is flat (an offered rate the host cannot take
			// leaves it no busier), and its aim far too low: never below half the rate.
			next = max(float64(rate)-(busy-busyAim)/slope, float64(rate)/2)
		}
		prevRate, prevBusy = rate, busy
		rate = max(1, min(int(next), rate-1))
	}
}
