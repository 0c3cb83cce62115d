package reconcile

import (
	"context"
	"fmt"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/order"
	"seatflow/ent/showtime"
)

// run is the state of one RunOnce: the report, what is left of each repair's budget, and
// whether a showtime had more drift than fitted (then the scan stops there).
type run struct {
	r         *Reconciler
	c         Config
	now       time.Time
	rep       Report
	left      map[string]int
	truncated bool
	touched   map[int]bool
	// reachedEnd: the scan went past the last showtime (the next run starts again).
	reachedEnd bool
}

// take reserves up to want items of kind's budget and returns how many it got; getting
// fewer marks the run truncated.
func (x *run) take(kind string, want int) int {
	n := min(want, x.left[kind])
	if n < want {
		x.truncated = true
	}
	x.left[kind] -= n
	return n
}

// done counts n repairs of kind on a showtime (budget already taken by take).
func (x *run) done(kind string, n, showID int) {
	if n <= 0 {
		return
	}
	repairsTotal.WithLabelValues(kind).Add(float64(n))
	x.touched[showID] = true
	switch kind {
	case kindExpired:
		x.rep.ExpiredCancelled += n
	case kindPaidSeats:
		x.rep.PaidSeatsFixed += n
	case kindHashes:
		x.rep.HashesRebuilt += n
	case kindOrphanHolds:
		x.rep.OrphanHoldsReleased += n
	case kindSoldOrphans:
		x.rep.SoldOrphansReleased += n
	case kindPendingSeats:
		x.rep.PendingSeatsReheld += n
	case kindBlocks:
		x.rep.BlocksRepaired += n
	case kindLimits:
		x.rep.LimitsRecounted += n
	case kindPurchaseCounts:
		x.rep.PurchaseCountsRecounted += n
	case kindRefunds:
		x.rep.RefundsRetried += n
	case kindWaitlistCounts:
		x.rep.WaitlistCountsRecounted += n
	case kindReturnedSeats:
		x.rep.ReturnedSeatsOffered += n
	}
}

// expireOrders is repair 1: pending orders past expires_at + ExpiryBuffer (their expiry
// enqueue was lost, or the worker is down) are expired through booking's normal path,
// which frees their seats and gives the user's count back. At most Batch per run, oldest
// first.
func (x *run) expireOrders(ctx context.Context) error {
	due, err := x.r.DB.Order.Query().
		Where(order.StatusEQ(seatflow.OrderPending), order.ExpiresAtLT(x.now.Add(-x.c.ExpiryBuffer))).
		Order(ent.Asc(order.FieldExpiresAt), ent.Asc(order.FieldID)).Limit(x.left[kindExpired]).
		Select(order.FieldID, order.FieldShowtimeID).All(ctx)
	if err != nil {
		return fmt.Errorf("expired orders: %w", err)
	}
	x.left[kindExpired] -= len(due)
	for _, o := range due {
		ok, err := x.r.Orders.Expire(ctx, o.ID)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			x.c.Log.Error("reconcile: expire order", "order", o.ID, "err", err)
			continue
		}
		if ok {
			x.done(kindExpired, 1, o.ShowtimeID)
		}
	}
	return nil
}

// scanShowtimes runs repairs 2–11 on ON_SALE and CLOSED showtimes from the cursor on, at
// most Batch showtimes, stopping at the first showtime with more drift than the budgets
// left (the next run starts there).
func (x *run) scanShowtimes(ctx context.Context) error {
	r := x.r
	after := r.cursor
	defer func() { r.cursor = after }()
	for visited := 0; visited < x.c.Batch; {
		want := min(showPage, x.c.Batch-visited)
		page, err := r.DB.Showtime.Query().
			Where(showtime.StatusIn(seatflow.ShowtimeOnSale, seatflow.ShowtimeClosed), showtime.IDGT(after)).
			Order(ent.Asc(showtime.FieldID)).Limit(want).
			Select(showtime.FieldID, showtime.FieldHallID, showtime.FieldPurchaseLimit).All(ctx)
		if err != nil {
			return fmt.Errorf("showtimes: %w", err)
		}
		for _, sh := range page {
			if err := x.showtime(ctx, sh); err != nil {
				return fmt.Errorf("showtime %d: %w", sh.ID, err)
			}
			if x.truncated {
				after = sh.ID - 1
				return nil
			}
			after = sh.ID
			visited++
		}
		if len(page) < want {
			after = 0 // reached the end: the next run starts from the first showtime
			x.reachedEnd = true
			return nil
		}
	}
	return nil
}
