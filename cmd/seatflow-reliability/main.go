// Command seatflow-reliability writes docs/RELIABILITY.md from the results the
// fault-injection suite (internal/tooling/faults) wrote as JSON: `make faults` runs the
// suite's long version with SEATFLOW_FAULTS_RESULTS set, then this command.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"seatflow/internal/tooling/faults"
	"seatflow/internal/tooling/soak"
)

func main() {
	dir := flag.String("results", "", "directory of the suite's JSON results")
	out := flag.String("out", "docs/RELIABILITY.md", "the markdown file to write")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "seatflow-reliability: -results is required")
		os.Exit(2)
	}
	rs, err := faults.ReadResults(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "seatflow-reliability:", err)
		os.Exit(1)
	}
	if len(rs) == 0 {
		fmt.Fprintln(os.Stderr, "seatflow-reliability: no results in", *dir)
		os.Exit(1)
	}
	var b bytes.Buffer
	write(&b, rs)
	// The soak's section is written by `make soak`: keep it as it is.
	if old, err := os.ReadFile(*out); err == nil {
		if kept := soak.KeptSection(string(old)); kept != "" {
			b.WriteString("\n" + kept)
		}
	}
	if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "seatflow-reliability:", err)
		os.Exit(1)
	}
	fmt.Printf("seatflow-reliability: wrote %s (%d scenarios)\n", *out, len(rs))
}

func write(b *bytes.Buffer, rs []*faults.Result) {
	mode := "short"
	if rs[0].Long {
		mode = "long"
	}
	fmt.Fprintf(b, "%s", header)
	how := "`make faults` (the long version)"
	if mode == "short" {
		how = "the short version (`SEATFLOW_FAULTS=short`, as in `make test`)"
	}
	fmt.Fprintf(b, "Measured by %s on %s.\n\n", how, time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(b, "| # | fault | what the system promised | errors by code (whole run; during the fault) | p99 during the fault (all; mutations) | time to recover | repairs by the reconciler | verdict |\n")
	fmt.Fprintf(b, "|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		verdict := "kept"
		if len(r.Violations) > 0 {
			verdict = fmt.Sprintf("**%d violations**", len(r.Violations))
		}
		fmt.Fprintf(b, "| %d | %s (%.0f s, %d instances) | %s | %s; %s | %.0f ms; %.0f ms | %.1f s | %s (%d runs) | %s |\n",
			r.Order, r.Fault, r.FaultSeconds, r.Instance, r.Promise, codes(r.Codes), codes(r.DuringFault),
			r.P99FaultMS, r.P99MutationFaultMS, r.RecoverySeconds, r.Repairs, r.ReconcileRuns, verdict)
	}
	fmt.Fprintf(b, "\n### Linearizability and staleness\n\n")
	fmt.Fprintf(b, "| # | scenario | calls recorded (answers lost) | operations checked (partitions) | linearizable | seat-map reads: seats compared, stale, worst | live frames: changes × watchers, p99 and max behind, missed |\n")
	fmt.Fprintf(b, "|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		l := r.Linearizability
		if l == nil {
			fmt.Fprintf(b, "| %d | %s | not recorded | | | | |\n", r.Order, r.Name)
			continue
		}
		lin := "yes"
		switch {
		case len(l.Illegal) > 0:
			lin = fmt.Sprintf("**no: %d partitions**", len(l.Illegal))
		case len(l.Undecided) > 0:
			lin = fmt.Sprintf("**undecided: %d partitions**", len(l.Undecided))
		}
		fmt.Fprintf(b, "| %d | %s | %d (%d) | %d (%d) | %s | %d, %d, %.0f ms | %d, %.0f ms and %.0f ms, %d |\n",
			r.Order, r.Name, total(l.Calls), l.Lost, l.Operations, l.Partitions, lin,
			l.Reads.Observations, l.Reads.Stale, l.Reads.MaxMS, l.Frames.Observations, l.Frames.P99MS, l.Frames.MaxMS, l.Frames.Missed)
	}
	fmt.Fprintf(b, "\n## Per scenario\n\n")
	for _, r := range rs {
		fmt.Fprintf(b, "### %d. %s\n\n", r.Order, r.Name)
		fmt.Fprintf(b, "- requests: %d (slowest %.0f ms); orders at the end: %d paid, %d pending\n", r.Requests, r.MaxMS, r.PaidOrders, r.PendingOrders)
		if l := r.Linearizability; l != nil {
			fmt.Fprintf(b, "- history: %s; %d porcupine operations in %d partitions, checked in %.0f ms\n", codes(l.Calls), l.Operations, l.Partitions, l.CheckMS)
			for _, st := range []faults.Staleness{l.Reads, l.Frames} {
				if st.Worst != "" && st.MaxMS >= 10 { // below, the clocks' own resolution
					fmt.Fprintf(b, "- stalest: %s\n", st.Worst)
				}
				if st.FirstImpossible != "" {
					fmt.Fprintf(b, "- first impossible: %s\n", st.FirstImpossible)
				}
			}
		}
		for _, n := range r.Notes {
			fmt.Fprintf(b, "- %s\n", n)
		}
		if len(r.Violations) == 0 {
			fmt.Fprintf(b, "- checker: every promise kept\n")
		}
		for _, v := range r.Violations {
			fmt.Fprintf(b, "- VIOLATION: %s\n", v)
		}
		fmt.Fprintln(b)
	}
	fmt.Fprintf(b, "%s", footer)
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func codes(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
