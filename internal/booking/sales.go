package booking

import (
	"context"
	"fmt"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/order"
	"seatflow/ent/seatoccupancy"
	"seatflow/ent/showtime"
	"seatflow/internal/catalog"
	"seatflow/internal/redislock"
	"seatflow/internal/seats"
)

// showLockTTL bounds how long a crashed holder can keep a showtime's seat hash locked.
const showLockTTL = 10 * time.Second

// OpenSales puts a showtime on sale: it builds the seat hash from the hall template with
// the active orders overlaid, then moves the showtime SCHEDULED (or CLOSED) → ON_SALE,
// which invalidates its cache entries at once, so a buyer who looked at it while it was
// SCHEDULED can buy the moment it opens. The hash comes first: an ON_SALE showtime always
// has one.
func (s *Service) OpenSales(ctx context.Context, showID int) (*catalog.Showtime, error) {
	st, err := s.DB.Showtime.Get(ctx, showID)
	if ent.IsNotFound(err) {
		return nil, seatflow.Errorf(seatflow.ENOTFOUND, "showtime %d does not exist", showID)
	} else if err != nil {
		return nil, fmt.Errorf("open sales: %w", err)
	}
	if st.Status != showtime.StatusSCHEDULED && st.Status != showtime.StatusCLOSED {
		return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "showtime %d is %s; only a scheduled or closed showtime can open", showID, st.Status)
	}
	if !st.StartsAt.After(s.now()) {
		return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "showtime %d has already started", showID)
	}
	if _, err := s.InitSeats(ctx, showID, st.HallID); err != nil {
		return nil, err
	}
	return s.Catalog.SetShowtimeStatus(ctx, showID, []string{catalog.ShowtimeScheduled, catalog.ShowtimeClosed}, catalog.ShowtimeOnSale)
}

// CloseSales stops new holds on a showtime; its orders can still be paid or cancelled.
func (s *Service) CloseSales(ctx context.Context, showID int) (*catalog.Showtime, error) {
	return s.Catalog.SetShowtimeStatus(ctx, showID, []string{catalog.ShowtimeOnSale}, catalog.ShowtimeClosed)
}

// InitSeats builds a showtime's seat hash, if it has none, from the hall template and the
// active orders. It holds the showtime's lock (shared with the reconciler's rebuild) so
// two builders never interleave, and reports whether it built the hash.
func (s *Service) InitSeats(ctx context.Context, showID, hallID int) (bool, error) {
	lock, err := s.LockShow(ctx, showID)
	if err != nil {
		return false, unavailable("lock showtime seats", err)
	}
	defer lock.Release(context.WithoutCancel(ctx))
	hall, err := s.Catalog.Hall(ctx, hallID)
	if err != nil {
		return false, err
	}
	occ, err := s.ActiveOccupancy(ctx, showID)
	if err != nil {
		return false, err
	}
	return s.Seats.Init(ctx, showID, hall, occ)
}

// LockShow takes a showtime's seat lock, the one building its seat hash and the
// reconciler's repairs share, waiting at most showLockTTL for it.
func (s *Service) LockShow(ctx context.Context, showID int) (*redislock.Lock, error) {
	lockCtx, cancel := context.WithTimeout(ctx, showLockTTL)
	defer cancel()
	return redislock.Acquire(lockCtx, s.RDB, s.Keys.ShowLock(showID), showLockTTL)
}

// ActiveOccupancy lists the seats of a showtime's PENDING_PAYMENT and PAID orders, as the
// seat hash must show them.
func (s *Service) ActiveOccupancy(ctx context.Context, showID int) ([]seats.Occupancy, error) {
	rows, err := s.DB.SeatOccupancy.Query().Where(seatoccupancy.ShowtimeID(showID)).
		WithOrder(func(q *ent.OrderQuery) {
			q.Select(order.FieldUserID, order.FieldHoldToken, order.FieldStatus, order.FieldCreatedAt)
		}).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("read occupancy: %w", err)
	}
	out := make([]seats.Occupancy, 0, len(rows))
	for _, r := range rows {
		o := r.Edges.Order
		if o == nil || (o.Status != order.StatusPENDING_PAYMENT && o.Status != order.StatusPAID) {
			continue // an occupancy row outlives its order only by a bug; verify reports it
		}
		out = append(out, seats.Occupancy{SeatID: r.SeatID, UserID: o.UserID, Token: o.HoldToken,
			Sold: o.Status == order.StatusPAID, HeldAt: o.CreatedAt})
	}
	return out, nil
}
