package soak

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"
)

// The soak's section of docs/RELIABILITY.md lies between these markers: the soak rewrites
// it, and the fault suite's generator (cmd/seatflow-reliability) keeps it as it is.
const (
	sectionBegin = "<!-- soak: begin (written by `make soak`; edit internal/tooling/soak) -->"
	sectionEnd   = "<!-- soak: end -->"
)

// Result is what a soak run did and found.
type Result struct {
	Duration, Window, Every time.Duration
	// Rate is the rate soaked at; Capacity the rate the capacity steps held (0 when the
	// rate was given).
	Rate, Capacity      int
	Instances, Watchers int
	HoldTTL             time.Duration
	Requests            int
	Verdicts            []Verdict
	// Internal counts INTERNAL answers; Failures are the load test's broken promises
	// (verify included); SampleErrors what could not be sampled.
	Internal     int
	Failures     []string
	SampleErrors []string
}

// Passed reports whether every curve was flat, no answer INTERNAL, nothing failed and
// every source could be sampled (a curve that was never read shows nothing).
func (r *Result) Passed() bool {
	for _, v := range r.Verdicts {
		if !v.Flat {
			return false
		}
	}
	return len(r.Verdicts) > 0 && r.Internal == 0 && len(r.Failures) == 0 && len(r.SampleErrors) == 0
}

// minutes writes a duration as the docs do ("30-minute", "2-minute", "90-second").
func minutes(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("%d-minute", int(d.Minutes()))
	}
	return fmt.Sprintf("%d-second", int(d.Seconds()))
}

// Markdown writes the section of docs/RELIABILITY.md, markers included; png is the plot's
// path relative to the doc ("" when none was drawn).
func (r *Result) Markdown(w io.Writer, png string) {
	fmt.Fprintf(w, "%s\n## Soak\n\n", sectionBegin)
	fmt.Fprintf(w, "`make soak` (`seatflow-bench soak`, `internal/tooling/soak`) runs the load test's premiere-night mix "+
		"(90 %% browsing, 8 %% holds, 2 %% payments or cancels, websocket watchers of the hot showtimes; "+
		"`internal/tooling/loadtest`'s mix table, one entry per operation) on %d instances of the server binary over one "+
		"MySQL database and a private Redis, with their reconciler running (every 30 s, as shipped) and %s holds that "+
		"expire throughout, for 30 minutes (`SOAK_DURATION`), at half the rate the instances held in the load test's "+
		"capacity steps run just before it (from 50 req/s, ×1.5 every 10 s, until an operation's p99 passes 250 ms or "+
		"a request fails; `-rate` names the rate instead). Every %.0f s it samples each instance's "+
		"resident memory and open files (`/proc/PID`), its goroutines (its `/metrics`), the MySQL connections of the "+
		"instances (`information_schema.PROCESSLIST` of their database, less the soak's own) and the Redis used memory "+
		"(`INFO memory`).\n\n", r.Instances, minutes(r.HoldTTL), r.Every.Seconds())
	fmt.Fprintf(w, "It passes when, over the last 20 minutes of the run (at most its last 80 %%), the least-squares slope of "+
		"every curve stays under the larger of an absolute bound and a share of the curve's mean, per minute (below); no "+
		"answer is INTERNAL and no request fails; and `seatflow verify` finds nothing once the reconciler has converged. "+
		"Goroutines, open files and MySQL connections are each sample's least of 5 reads 100 ms apart: requests in flight "+
		"come and go, what leaked stays. `make test` runs a 2-minute soak, judged by the wider bounds of a window shorter "+
		"than %d minutes: its 96 seconds hold the heap growing to its working size (the Go runtime grows it in steps of "+
		"several MiB) and a few GC cycles, whose steps weigh on a slope as much as a slow leak; it catches a leak of the "+
		"order of 20 MiB or 10 goroutines a minute (a goroutine per request or per watcher is hundreds), the 30-minute "+
		"run the slow ones.\n\n", int(shortWindow.Minutes()))
	fmt.Fprintf(w, "| curve | bound per minute | bound per minute, window under %d minutes |\n|---|---|---|\n", int(shortWindow.Minutes()))
	for _, m := range Metrics {
		unit := ""
		if m.Unit != "" {
			unit = " " + m.Unit
		}
		fmt.Fprintf(w, "| %s | %g%s or %g %% of the mean | %g%s or %g %% of the mean |\n", m.Title, m.PerMinute, unit, 100*m.Relative,
			m.ShortPerMinute, unit, 100*m.ShortRelative)
	}
	fmt.Fprintln(w)
	how := fmt.Sprintf("%d req/s, half of the %d req/s the capacity steps held", r.Rate, r.Capacity)
	if r.Capacity == 0 {
		how = fmt.Sprintf("%d req/s (given)", r.Rate)
	}
	fmt.Fprintf(w, "Measured by a %s run (`make soak SOAK_DURATION=%s`): %s, %d watchers, %d requests; slopes over its last %.0f s.\n\n",
		minutes(r.Duration), flagValue(r.Duration), how, r.Watchers, r.Requests,
		r.Window.Seconds())
	if png != "" {
		fmt.Fprintf(w, "![The soak's curves: resident memory, goroutines and open files per instance, MySQL connections, Redis memory; dashed: the window's least-squares line](%s)\n\n", png)
	}
	fmt.Fprintf(w, "| curve | samples in the window | mean | slope per minute | bound per minute | flat |\n|---|---|---|---|---|---|\n")
	for _, v := range r.Verdicts {
		unit := ""
		if u := v.Series.Metric.Unit; u != "" {
			unit = " " + u
		}
		flat := "yes"
		if !v.Flat {
			flat = "**no**"
		}
		fmt.Fprintf(w, "| %s | %d | %.1f%s | %+.2f%s | %.2f%s | %s |\n", v.Series.Label(), v.N, v.Mean, unit, v.Slope, unit, v.Bound, unit, flat)
	}
	verdict := "passed"
	if !r.Passed() {
		verdict = "**failed**"
	}
	fmt.Fprintf(w, "\nINTERNAL answers: %d. Failures: %s. Verdict: %s.\n", r.Internal, list(r.Failures), verdict)
	if len(r.SampleErrors) > 0 {
		fmt.Fprintf(w, "\nNot sampled: %s.\n", strings.Join(r.SampleErrors, "; "))
	}
	fmt.Fprintf(w, "%s\n", sectionEnd)
}

// flagValue writes a duration as one would pass it ("2m", "90s").
func flagValue(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("%dm", int(d.Minutes()))
	}
	return d.String()
}

func list(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, "; ")
}

// KeptSection is the soak's section of doc, markers included ("" when it has none).
func KeptSection(doc string) string {
	i := strings.Index(doc, sectionBegin)
	j := strings.Index(doc, sectionEnd)
	if i < 0 || j < i {
		return ""
	}
	return doc[i:j+len(sectionEnd)] + "\n"
}

// WriteSection puts section in place of the soak's section of the file at path (at its
// end when it has none; the file is created when missing).
func WriteSection(path, section string) error {
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	doc := string(b)
	if old := KeptSection(doc); old != "" {
		doc = strings.Replace(doc, old, section, 1)
	} else {
		if doc != "" && !strings.HasSuffix(doc, "\n\n") {
			doc = strings.TrimRight(doc, "\n") + "\n\n"
		}
		doc += section
	}
	return os.WriteFile(path, []byte(doc), 0o644)
}
