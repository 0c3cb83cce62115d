package soak

import (
	"fmt"
	"math"
	"time"

	"gonum.org/v1/gonum/stat"
)

// Metric is one quantity the soak samples, and the bound its slope must stay under for
// the run to pass.
type Metric struct {
	Name, Title, Unit string
	// PerInstance: sampled from each instance's process (else once for the deployment).
	PerInstance bool
	// PerMinute is the slope allowed whatever the level (unit per minute); Relative the
	// slope allowed relative to the window's mean (fraction per minute). A series is flat
	// when its slope is under the larger of the two. Short are the same for a window
	// shorter than shortWindow.
	PerMinute, Relative           float64
	ShortPerMinute, ShortRelative float64
}

// Metrics are what the soak samples every -sample: a leak of any of them grows its curve.
var Metrics = []Metric{
	{Name: "rss", Title: "resident memory", Unit: "MiB", PerInstance: true, PerMinute: 1, Relative: 0.001, ShortPerMinute: 20, ShortRelative: 0.1},
	{Name: "goroutines", Title: "goroutines", PerInstance: true, PerMinute: 1, Relative: 0.001, ShortPerMinute: 10, ShortRelative: 0.01},
	{Name: "fds", Title: "open files", PerInstance: true, PerMinute: 1, Relative: 0.001, ShortPerMinute: 10, ShortRelative: 0.01},
	{Name: "mysql", Title: "MySQL connections of the instances", PerMinute: 0.5, Relative: 0.001, ShortPerMinute: 5, ShortRelative: 0.01},
	{Name: "redis", Title: "Redis used memory", Unit: "MiB", PerMinute: 1, Relative: 0.001, ShortPerMinute: 10, ShortRelative: 0.01},
}

// shortWindow is the window under which the Short bounds apply: a window of a minute or
// two holds the heap growing to its working size (the Go runtime grows it in steps of
// several MiB), a few GC cycles and the first expiries, whose steps weigh on its slope as
// much as a leak would. The 2-minute version (make test) catches leaks of the order of
// 20 MiB or 10 goroutines or files a minute (a goroutine per request or per watcher is
// hundreds); the 30-minute run the slow ones.
const shortWindow = 10 * time.Minute

// Window is the part of a run whose slopes are judged: the last want of it, but never
// more than 80% of it (the first fifth warms caches and pools).
func Window(run, want time.Duration) time.Duration { return min(want, run*4/5) }

// Series is one curve: a metric of one instance (Instance 0 for the deployment's).
type Series struct {
	Metric   Metric
	Instance int
	// At are the samples' times since the attack began, Values their values.
	At     []time.Duration
	Values []float64
}

// Label names the series in tables and legends.
func (s *Series) Label() string {
	if s.Instance == 0 {
		return s.Metric.Title
	}
	return fmt.Sprintf("%s, instance %d", s.Metric.Title, s.Instance)
}

// Verdict is a series judged over its window.
type Verdict struct {
	Series *Series
	// From is where the window begins; N the samples in it.
	From time.Duration
	N    int
	// Mean of the window, Slope of its least-squares line (unit per minute) and Intercept
	// (at 0), Bound the slope allowed.
	Mean, Slope, Intercept, Bound float64
	Flat                          bool
}

// Judge fits a least-squares line to the samples from the window's start on (gonum's
// stat.LinearRegression, minutes against value) and calls the series flat when its slope
// stays under the bound. Fewer than 3 samples in the window is not flat: nothing was shown.
func Judge(s *Series, run, window time.Duration) Verdict {
	v := Verdict{Series: s, From: run - window, Bound: math.NaN()}
	var xs, ys []float64
	for i, at := range s.At {
		if at >= v.From && at <= run {
			xs, ys = append(xs, at.Minutes()), append(ys, s.Values[i])
		}
	}
	v.N = len(xs)
	if v.N < 3 {
		return v
	}
	v.Intercept, v.Slope = stat.LinearRegression(xs, ys, nil, false)
	v.Mean = stat.Mean(ys, nil)
	m := s.Metric
	if window < shortWindow {
		m.PerMinute, m.Relative = m.ShortPerMinute, m.ShortRelative
	}
	v.Bound = max(m.PerMinute, m.Relative*math.Abs(v.Mean))
	v.Flat = v.Slope <= v.Bound // a shrinking curve is no leak
	return v
}
