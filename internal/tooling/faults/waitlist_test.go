package faults

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestWaitlistUnderFaults: the waiting list in the mix on a hall of 16 seats, which the
// workload sells out before the fault (customers only hold until then). From the fault on
// customers hold, pay, cancel and are refunded as usual; others join the waiting list and read their entries, and the seats that come
// back are offered to them while instance 0 loses MySQL (its offers fail after
// offer.lua and give the seats back to the list) and then the last instance loses Redis
// (its offerer stops; the others' sweeps carry on). Every offer found is in the history
// as a hold of the entrant's order (waitlist.go), so the seat model's no-double-sale
// covers offers: a seat offered while held or sold by another order has no
// linearization. Once the workload is over every entrant leaves and their offers are
// read (Scenario.Settle).
func TestWaitlistUnderFaults(t *testing.T) {
	Run(t, Scenario{Order: 10, Name: "waitlist", Plan: DefaultPlan(10 * time.Second), Opts: Options{Rows: 1},
		Fault: "a sold-out showtime's waiting list in the mix: instance 0 loses MySQL for the first half of the fault " +
			"(its proxy down), then the last instance loses Redis for the second half",
		Promise: "every hold, offer (a hold by the entrant's order), payment, cancel and refund linearizable: no seat " +
			"offered while another order has it; no seat left returned to the list unoffered; verify clean",
		Prepare: func(e *Env, w *Workload) {
			w.WithWaitlist()
			w.HoldOnly(true)
		},
		Inject: func(ctx context.Context, e *Env, d time.Duration) error {
			e.work.HoldOnly(false)
			first, last := e.Instances[0], e.Instances[len(e.Instances)-1]
			if err := first.MySQL.Disable(); err != nil {
				return err
			}
			e.Applied()
			sleep(ctx, d/2)
			if err := first.MySQL.Heal(); err != nil {
				return err
			}
			if err := last.Redis.Disable(); err != nil {
				return err
			}
			sleep(ctx, d-d/2)
			return nil
		},
		Settle: func(ctx context.Context, e *Env, w *Workload) []string { return w.SettleWaitlist(ctx) },
		Extra: func(e *Env, w *Workload, ws []*Watcher, res *Result) {
			offers := map[int]bool{}
			paid, declined := 0, 0
			for _, c := range w.Rec.Calls() {
				switch {
				case c.Op == OpHold && strings.HasPrefix(c.Key, "waitlist-entry:"):
					offers[c.Order] = true
				case c.Op == OpPay && c.Code == CodeOK && offers[c.Order]:
					paid++
				case c.Op == OpCancel && c.Code == CodeOK && offers[c.Order]:
					declined++
				}
			}
			joins := map[string]int{}
			samples, _, _ := w.Rec.Samples()
			for _, s := range samples {
				if s.Op == OpJoin {
					joins[s.Code]++
				}
			}
			res.Note("joins: %s; offers in the history: %d, paid %d, declined %d", counts(joins), len(offers), paid, declined)
			if len(offers) == 0 {
				res.violate("no offer was made: the run did not exercise the waiting list")
			}
		}})
}
