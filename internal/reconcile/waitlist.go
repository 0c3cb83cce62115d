package reconcile

import (
	"context"
	"slices"

	"seatflow/internal/rdb"
	"seatflow/internal/seats"
)

// waitlist runs the waiting list's repairs on one showtime, after its seat repairs and
// outside its show lock (docs/DESIGN.md "Waiting list"):
//
//   - repair 10, the count of waiting entries in Redis (Keys.Waitlist), which tells
//     release.lua and unblock.lua to return freed seats to the list: lost with Redis, or
//     off after a join, leave or offer whose change of it failed, it is set to MySQL's
//     count of entries WAITING (waitlist.Service.Recount, a compare-and-set);
//   - repair 11, seats returned to the list ("4|MS") longer ago than ReturnedGrace: the
//     instance that returned them died before offering them, or nobody waits any more so
//     no sweep looks at the showtime. The waiting list offers every returned seat of the
//     showtime now, to the waiting entries in join order, and puts on sale those none
//     fits (waitlist.Service.OfferReturned).
//
// states is the seat repairs' last reading (nil when they skipped the showtime).
func (x *run) waitlist(ctx context.Context, showID int, states map[int]seats.State) error {
	w := x.r.Waitlist
	if w == nil {
		return nil
	}
	if x.left[kindWaitlistCounts] > 0 {
		fixed, err := w.Recount(ctx, showID)
		if err != nil {
			return err
		}
		if fixed {
			x.take(kindWaitlistCounts, 1)
			x.done(kindWaitlistCounts, 1, showID)
		}
	} else {
		x.truncated = true
		return nil
	}
	stuck, err := x.stuckReturned(ctx, states)
	if err != nil || len(stuck) == 0 {
		return err
	}
	if n := x.take(kindReturnedSeats, len(stuck)); n < len(stuck) {
		x.left[kindReturnedSeats] += n // all of the showtime's or none: the next run starts here
		return nil
	}
	if _, err := w.OfferReturned(ctx, showID); err != nil {
		return err
	}
	x.c.Log.Warn("reconcile: seats returned to the waiting list were left unoffered; offered now",
		"showtime", showID, "seats", stuck)
	x.done(kindReturnedSeats, len(stuck), showID)
	return nil
}

// stuckReturned returns, in order, the seats of states returned to the waiting list
// longer ago than ReturnedGrace. A seat's return time is Redis' clock (delta.lua's
// returnedOrFree), so its age is measured on that clock too, whatever the instances' clocks.
func (x *run) stuckReturned(ctx context.Context, states map[int]seats.State) ([]int, error) {
	var returned []int
	for id, st := range states {
		if st.Returned {
			returned = append(returned, id)
		}
	}
	if len(returned) == 0 {
		return nil, nil
	}
	now, err := x.r.RDB.Time(ctx).Result()
	if err != nil {
		return nil, rdb.Classify("read Redis' clock", err)
	}
	cutoff := now.Add(-x.c.ReturnedGrace)
	var out []int
	for _, id := range returned {
		if states[id].HeldAt.Before(cutoff) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out, nil
}
