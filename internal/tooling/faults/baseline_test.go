package faults

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"seatflow"
	"seatflow/ent/order"
)

// TestBaseline: no fault. The workload alone on healthy stores, its history checked like
// every scenario's: the yardstick of the others, and the run where every operation of the
// model happens: holds, payments, cancels, extends, staff refunds, order reads, and
// expiries. In the first phase customers only hold; as the second begins the clocks jump
// one hold's lifetime forward (less 3 s), so the orders held so far run out while
// customers pay (late), cancel and extend them.
func TestBaseline(t *testing.T) {
	e := NewEnv(t, DefaultPlan(10*time.Second), Options{HoldTTL: time.Minute})
	RunOn(t, e, baseline())
}

// baseline is the scenario of TestBaseline (TestCheckerCatchesReleaseBug runs it too).
// counts writes n as "a 1, b 2", sorted.
func counts(n map[string]int) string {
	keys := slices.Sorted(maps.Keys(n))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, n[k])
	}
	return strings.Join(parts, ", ")
}

func baseline() Scenario {
	return Scenario{Order: 0, Name: "baseline",
		Fault: "none: the workload alone on healthy stores; customers only hold at first, then the clocks jump one hold's " +
			"lifetime (1 m) less 3 s forward, so the orders held so far expire while customers pay, cancel and extend them",
		Promise: "every hold, payment, cancel, extend, refund, order read and expiry linearizable; seat maps and live frames " +
			"behind by the measured bound only; verify clean",
		Prepare: func(e *Env, w *Workload) { w.HoldOnly(true) },
		Inject: func(ctx context.Context, e *Env, d time.Duration) error {
			e.Shift(e.Opts.HoldTTL - 3*time.Second)
			e.work.HoldOnly(false)
			e.Applied()
			sleep(ctx, d)
			return nil
		},
		Extra: func(e *Env, w *Workload, ws []*Watcher, res *Result) {
			n, due := map[string]int{}, map[int]time.Time{}
			late := 0
			for _, c := range w.Rec.Calls() {
				n[c.Op+" "+c.Code]++
				switch {
				case c.Op == OpHold && c.Code == CodeOK:
					due[c.Order] = c.ExpiresAt
				case c.Op == OpPay && !due[c.Order].IsZero() && c.Start.After(e.earliestDue(due[c.Order])):
					late++
				}
			}
			expired, err := e.Checker.DB.Order.Query().Where(order.StatusEQ(seatflow.OrderExpired)).Count(context.Background())
			if err != nil {
				res.violate("count expired orders: %v", err)
			}
			res.Note("answers in the history: %s", counts(n))
			res.Note("orders expired: %d; payments sent after their order's hold may have run out: %d", expired, late)
			if expired == 0 && late == 0 {
				res.violate("no order expired and no payment came late: the run did not exercise expiry")
			}
		}}
}
