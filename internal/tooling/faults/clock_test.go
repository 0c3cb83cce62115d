package faults

import (
	"context"
	"testing"
	"time"

	"seatflow"
	"seatflow/ent/order"
)

// TestClockSkew: the instances' clocks disagree by up to ±2 s while holds expire. Before
// the fault the workload only holds (orders pile up unpaid); then the shared clock jumps to
// a few seconds before the first holds are due and runs 3× fast, so holds of the minimum
// TTL (1 m) expire during the fault while pays and cancels race their expiry on instances
// whose clocks disagree.
func TestClockSkew(t *testing.T) {
	plan := DefaultPlan(20 * time.Second)
	e := NewEnv(t, plan, Options{HoldTTL: time.Minute})
	skews := []time.Duration{-2 * time.Second, 2 * time.Second, 0}
	var expired int
	RunOn(t, e, Scenario{Order: 8, Name: "clock-skew",
		Fault: "instance clocks skewed -2 s / +2 s (/ 0 s) while 1 m holds expire (time jumped to 5 s before the first expiry, then 3× fast)",
		Promise: "an order expires once; a payment racing expiry either pays with the seats or fails cleanly " +
			"(ORDER_EXPIRED); no seat sold twice",
		Prepare: func(e *Env, w *Workload) { w.HoldOnly(true) }, // orders pile up unpaid until the fault
		Inject: func(ctx context.Context, e *Env, d time.Duration) error {
			for i, in := range e.Instances {
				in.SetSkew(skews[i%len(skews)])
			}
			// Holds made before the fault are due a few seconds from now, those of its
			// first seconds as it goes on (time runs 3× fast).
			e.Shift(e.Opts.HoldTTL - 5*time.Second)
			e.work.HoldOnly(false) // pays and cancels now race the expiry of the orders held so far
			e.Applied()
			end := time.Now().Add(d)
			for time.Now().Before(end) && ctx.Err() == nil {
				sleep(ctx, time.Second)
				e.Shift(2 * time.Second)
			}
			for _, in := range e.Instances {
				in.SetSkew(0)
			}
			return nil
		},
		Extra: func(e *Env, w *Workload, ws []*Watcher, res *Result) {
			n, err := e.Checker.DB.Order.Query().Where(order.StatusEQ(seatflow.OrderExpired)).Count(context.Background())
			if err == nil {
				expired = n
			}
			samples, on, off := w.Rec.Samples()
			late, lateDuring := 0, 0
			for _, s := range samples {
				if s.Code == "ORDER_EXPIRED" {
					late++
					if during(s, on, off) {
						lateDuring++
					}
				}
			}
			res.Note("orders expired: %d; payments answered ORDER_EXPIRED: %d (%d during the skew)", expired, late, lateDuring)
		}})
}
