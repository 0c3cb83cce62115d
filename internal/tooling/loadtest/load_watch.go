package loadtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"seatflow/internal/tooling/gqlclient"
)

// watcher keeps one graphql-transport-ws subscription of a hot showtime's seat map open
// until ctx ends, reconnecting (to the next instance) when its connection drops.
func (l *loadRun) watcher(ctx context.Context, i int) {
	show := l.hot[i%len(l.hot)].id
	inst := i % len(l.o.Instances)
	backoff := 250 * time.Millisecond
	for ctx.Err() == nil {
		subscribed, err := l.watchOnce(ctx, l.o.Instances[inst], show)
		if ctx.Err() != nil {
			return
		}
		if err != nil && !subscribed {
			l.watch.dialErrors.Add(1)
		}
		if subscribed {
			l.watch.disconnects.Add(1)
			backoff = 250 * time.Millisecond
		}
		inst = (inst + 1) % len(l.o.Instances)
		wait := backoff + time.Duration(l.intn(int(backoff/time.Millisecond)+1))*time.Millisecond
		backoff = min(backoff*2, 4*time.Second)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// watchEvent is what the load test reads of a seat-map event: its kind and version.
type watchEvent struct {
	Data struct {
		SeatMap struct {
			Kind        string `json:"kind"`
			FromVersion int64  `json:"fromVersion"`
			Version     int64  `json:"version"`
		} `json:"seatMap"`
	} `json:"data"`
}

// watchOnce runs one connection; subscribed reports whether it got as far as a subscription.
func (l *loadRun) watchOnce(ctx context.Context, addr, show string) (subscribed bool, err error) {
	sub, err := gqlclient.Subscribe(ctx, "http://"+addr,
		gqlclient.Request{OperationName: "LoadWatch", Query: qWatch, Variables: map[string]any{"id": show}},
		// The server pings every few seconds; a minute of silence means a dead connection.
		gqlclient.SubscribeOptions{DialTimeout: 10 * time.Second, AckTimeout: 15 * time.Second, ReadTimeout: 60 * time.Second})
	if err != nil {
		return false, err
	}
	defer sub.Close()
	l.watch.connects.Add(1)
	l.watch.connected.Add(1)
	defer l.watch.connected.Add(-1)
	var last int64 = -1
	for {
		payload, err := sub.Next()
		if err != nil {
			return true, err
		}
		var ev watchEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return true, err
		}
		sm := ev.Data.SeatMap
		switch sm.Kind {
		case "SNAPSHOT":
			l.watch.snapshots.Add(1)
			last = sm.Version
		case "DELTA":
			l.watch.deltas.Add(1)
			switch {
			case last < 0:
			case sm.Version <= last:
				l.watch.regressions.Add(1)
			case sm.FromVersion != last: // coalesced DELTAs span versions
				l.watch.gaps.Add(1)
			}
			last = max(last, sm.Version)
		}
	}
}

// ---- report ----------------------------------------------------------------------------

// Failures are the promises the run broke (none: the run passed).
func (r *Report) Failures() []string {
	var out []string
	if r.oversoldClient > 0 || r.oversoldDB > 0 {
		out = append(out, fmt.Sprintf("oversold seats: %d seen paid twice by clients, %d in two active orders in MySQL", r.oversoldClient, r.oversoldDB))
	}
	if r.internal > 0 {
		out = append(out, fmt.Sprintf("%d INTERNAL errors", r.internal))
	}
	if other := sum(r.failed) - r.internal; other > 0 {
		out = append(out, fmt.Sprintf("%d other failed requests (transport errors or unexpected codes)", other))
	}
	if r.verifyErr != nil {
		out = append(out, "verify: "+r.verifyErr.Error())
	}
	if len(r.verifyFinal) > 0 {
		out = append(out, fmt.Sprintf("verify: %d violations after convergence", len(r.verifyFinal)))
	}
	if len(r.paidLost) > 0 {
		out = append(out, fmt.Sprintf("%d paid orders no longer PAID", len(r.paidLost)))
	}
	if len(r.chaosErrs) > 0 {
		out = append(out, "chaos: "+strings.Join(r.chaosErrs, "; "))
	}
	return out
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Requests is how many requests the attack sent.
func (r *Report) Requests() int {
	total := 0
	for _, s := range r.stats {
		total += int(s.metrics.Requests)
	}
	return total
}

// Internal is how many answers were INTERNAL.
func (r *Report) Internal() int { return r.internal }

// Print writes the run's report.
func (r *Report) Print(w io.Writer, o *Options) {
	total := 0
	for _, s := range r.stats {
		total += int(s.metrics.Requests)
	}
	fmt.Fprintf(w, "\n## Premiere-night load test\n\n")
	fmt.Fprintf(w, "flags: -duration %s -rate %d -watchers %d -instances %s -chaos=%v -hold-ttl %s -customers %d\n",
		o.Duration, o.Rate, o.Watchers, strings.Join(o.Instances, ","), o.Chaos, o.HoldTTL, o.Customers)
	fmt.Fprintf(w, "requests: %d in %s = %.1f req/s (target %d req/s) over %d instances\n\n",
		total, r.attackTook.Round(time.Millisecond), float64(total)/r.attackTook.Seconds(), r.rate, r.instances)
	fmt.Fprintf(w, "| operation | requests | ok | share | p50 ms | p99 ms | max ms | outcomes by code |\n|---|---|---|---|---|---|---|---|\n")
	for _, op := range append(loadOps, "unknown") {
		s := r.stats[op]
		if s == nil || s.metrics.Requests == 0 {
			continue
		}
		var codes []string
		for _, c := range sortedKeys(s.codes) {
			codes = append(codes, fmt.Sprintf("%s %d", c, s.codes[c]))
		}
		fmt.Fprintf(w, "| %s | %d | %d | %.1f%% | %s | %s | %s | %s |\n", op, s.metrics.Requests, s.ok,
			100*float64(s.metrics.Requests)/float64(max(total, 1)), ms(s.metrics.Latencies.P50), ms(s.metrics.Latencies.P99),
			ms(s.metrics.Latencies.Max), strings.Join(codes, ", "))
	}
	fmt.Fprintf(w, "\nexpected business outcomes: %s\n", fmtCounts(r.expected))
	if o.Chaos {
		fmt.Fprintf(w, "expected because of chaos: %s\n", fmtCounts(r.chaosExp))
	}
	fmt.Fprintf(w, "FAILURES (INTERNAL, transport, unexpected codes): %s\n", fmtCounts(r.failed))
	for _, s := range r.samples {
		fmt.Fprintf(w, "  e.g. %s\n", s)
	}
	ws := r.watch
	fmt.Fprintf(w, "\nwatchers: %d wanted, %d subscribed at start; %d subscriptions, %d drops (reconnected), %d failed dials;\n"+
		"  %d snapshots and %d deltas delivered (%d version gaps, %d out of order)\n",
		r.watchersWanted, r.watchersAtStart, ws.connects.Load(), ws.disconnects.Load(), ws.dialErrors.Load(),
		ws.snapshots.Load(), ws.deltas.Load(), ws.gaps.Load(), ws.regressions.Load())
	if len(r.events) > 0 || len(r.chaosErrs) > 0 {
		fmt.Fprintf(w, "\nchaos events:\n")
		for _, e := range r.events {
			fmt.Fprintf(w, "  %s\n", e)
		}
		for _, e := range r.chaosErrs {
			fmt.Fprintf(w, "  FAILED %s\n", e)
		}
	}
	fmt.Fprintf(w, "\nreconcile (runReconcile as admin until two runs repair nothing): converged=%v after %d runs\n", r.converged, len(r.reconciles))
	for i, s := range r.reconciles {
		if i < 6 || i == len(r.reconciles)-1 {
			fmt.Fprintf(w, "  run %d: %s\n", i+1, s)
		}
	}
	fmt.Fprintf(w, "\npaid orders: %d (all still PAID: %v)\n", r.paidOrders, len(r.paidLost) == 0)
	if len(r.paidLost) > 0 {
		fmt.Fprintf(w, "  no longer PAID: %s\n", strings.Join(r.paidLost[:min(20, len(r.paidLost))], ", "))
	}
	fmt.Fprintf(w, "oversold seats: %d (client view) / %d (MySQL, seats in two active orders)\n", r.oversoldClient, r.oversoldDB)
	fmt.Fprintf(w, "INTERNAL errors: %d\n", r.internal)
	if len(r.verifyFirst) > 0 {
		fmt.Fprintf(w, "verify, first attempt: %d violations (holds expiring in the background can cause transient ones)\n", len(r.verifyFirst))
		for _, v := range r.verifyFirst[:min(10, len(r.verifyFirst))] {
			fmt.Fprintf(w, "  %s\n", v)
		}
	}
	verr := "none"
	if r.verifyErr != nil {
		verr = r.verifyErr.Error()
	}
	fmt.Fprintf(w, "verify violations: %d after %d attempt(s) (error: %s)\n", len(r.verifyFinal), r.verifyAttempts, verr)
	for _, v := range r.verifyFinal[:min(20, len(r.verifyFinal))] {
		fmt.Fprintf(w, "  %s\n", v)
	}
}

func fmtCounts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s: %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
