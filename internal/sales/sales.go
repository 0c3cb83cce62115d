// Package sales puts showtimes on sale and takes them off, at staff's request or by
// themselves once started (the sales closer): it builds a showtime's seat hash from the
// hall template with the active orders overlaid (the only code that does), under the
// showtime's lock that the reconciler's repairs share, and moves the showtime's status.
// It never holds, sells or frees a seat (package booking does, through package seats).
package sales

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/order"
	"seatflow/ent/seatoccupancy"
	"seatflow/internal/database"
	"seatflow/internal/keys"
	"seatflow/internal/rdb"
	"seatflow/internal/redislock"
	"seatflow/internal/seats"
)

// showLockTTL bounds how long a crashed holder can keep a showtime's seat hash locked.
const showLockTTL = 10 * time.Second

// Catalog is what sales reads and changes in the catalog.
type Catalog interface {
	// FreshShowtime reads a showtime from MySQL, never from a cache.
	FreshShowtime(ctx context.Context, id int) (*seatflow.Showtime, error)
	Hall(ctx context.Context, id int) (*seatflow.Hall, error)
	// SetShowtimeStatus changes a showtime's status and invalidates its cache entries.
	SetShowtimeStatus(ctx context.Context, id int, to seatflow.ShowtimeStatus) (*seatflow.Showtime, error)
	// OnSaleStartedBy lists, from MySQL, the showtimes still ON_SALE that started at or
	// before t.
	OnSaleStartedBy(ctx context.Context, t time.Time) ([]int, error)
}

// PendingOrders ends the pending orders of showtimes whose sales have closed by
// themselves (package booking).
type PendingOrders interface {
	ExpireAtSalesClose(ctx context.Context) (int, error)
}

// Service opens and closes sales and builds seat hashes.
type Service struct {
	DB      *ent.Client
	Seats   *seats.Store
	RDB     redis.UniversalClient
	Keys    keys.Keys
	Catalog Catalog
	// CloseAfter is how long after its start a showtime's sales close by themselves
	// (seatflow.DefaultSalesCloseAfter when zero); Orders ends the pending orders then
	// (none are ended when nil).
	CloseAfter time.Duration
	Orders     PendingOrders
	// Now is the clock; time.Now when nil.
	Now seatflow.ClockFunc
	// Log receives what the sales closer cannot do; slog.Default() when nil.
	Log *slog.Logger
}

// OpenSales puts a showtime on sale: it builds the seat hash from the hall template with
// the active orders overlaid, then moves the showtime SCHEDULED (or CLOSED) → ON_SALE,
// which invalidates its cache entries at once, so a buyer who looked at it while it was
// SCHEDULED can buy the moment it opens. The hash comes first: an ON_SALE showtime always
// has one.
func (s *Service) OpenSales(ctx context.Context, showID int) (*seatflow.Showtime, error) {
	st, err := s.Catalog.FreshShowtime(ctx, showID)
	if err != nil {
		return nil, err
	}
	if !st.Status.CanMoveTo(seatflow.ShowtimeOnSale) {
		return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "showtime %d is %s; only a scheduled or closed showtime can open", showID, st.Status)
	}
	if !st.StartsAt.After(s.Now.Now()) {
		return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "showtime %d has already started", showID)
	}
	if _, err := s.InitSeats(ctx, showID, st.HallID); err != nil {
		return nil, err
	}
	return s.Catalog.SetShowtimeStatus(ctx, showID, seatflow.ShowtimeOnSale)
}

// CloseSales stops new holds on a showtime; its orders can still be paid or cancelled
// until its sales close by themselves (CloseAfter after its start).
func (s *Service) CloseSales(ctx context.Context, showID int) (*seatflow.Showtime, error) {
	return s.Catalog.SetShowtimeStatus(ctx, showID, seatflow.ShowtimeClosed)
}

// InitSeats builds a showtime's seat hash, if it has none, from the hall template, the
// active orders and the house seats (blocks.go; an active order wins over a block). It
// holds the showtime's lock (shared with the reconciler's rebuild) so two builders never
// interleave, and reports whether it built the hash. Each build is counted in MySQL first
// (the showtime's seat_epoch), and its versions start above that epoch's base: a hash
// rebuilt after Redis came back empty continues above every version issued before
// (seats.EpochBase).
func (s *Service) InitSeats(ctx context.Context, showID, hallID int) (bool, error) {
	lock, err := s.LockShow(ctx, showID)
	if err != nil {
		return false, err
	}
	defer lock.Release(context.WithoutCancel(ctx))
	if exists, err := s.Seats.Exists(ctx, showID); err != nil || exists {
		return false, err
	}
	hall, err := s.Catalog.Hall(ctx, hallID)
	if err != nil {
		return false, err
	}
	// The blocks first: the occupancy is read as late as it can be, so an order ended
	// meanwhile is seen ended (and an order wins over a block whatever the order of reads).
	blocked, err := s.Blocked(ctx, showID)
	if err != nil {
		return false, err
	}
	occ, err := s.ActiveOccupancy(ctx, showID)
	if err != nil {
		return false, err
	}
	base, err := s.nextEpoch(ctx, showID)
	if err != nil {
		return false, err
	}
	return s.Seats.InitBlocked(ctx, showID, hall, occ, blocked, base)
}

// nextEpoch counts one more build of the showtime's seat hash and returns the version
// its versions start above.
func (s *Service) nextEpoch(ctx context.Context, showID int) (int, error) {
	st, err := s.DB.Showtime.UpdateOneID(showID).AddSeatEpoch(1).Save(ctx)
	if err != nil {
		return 0, fmt.Errorf("count a seat hash build: %w", database.Classify(err))
	}
	base, err := seats.EpochBase(st.SeatEpoch)
	if err != nil {
		return 0, seatflow.Errorf(seatflow.EINTERNAL, "showtime %d: %v", showID, err)
	}
	return base, nil
}

// LockShow takes a showtime's seat lock, the one building its seat hash and the
// reconciler's repairs share, waiting at most showLockTTL for it.
func (s *Service) LockShow(ctx context.Context, showID int) (*redislock.Lock, error) {
	lockCtx, cancel := context.WithTimeout(ctx, showLockTTL)
	defer cancel()
	lock, err := redislock.Acquire(lockCtx, s.RDB, s.Keys.ShowLock(showID), showLockTTL)
	if err != nil {
		return nil, rdb.Classify("lock showtime seats", err)
	}
	return lock, nil
}

// ActiveOccupancy lists the seats of a showtime's PENDING_PAYMENT and PAID orders, as the
// seat hash must show them.
func (s *Service) ActiveOccupancy(ctx context.Context, showID int) ([]seats.Occupancy, error) {
	rows, err := s.DB.SeatOccupancy.Query().Where(seatoccupancy.ShowtimeID(showID)).
		WithOrder(func(q *ent.OrderQuery) {
			q.Select(order.FieldUserID, order.FieldHoldToken, order.FieldStatus, order.FieldCreatedAt)
		}).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("read occupancy: %w", database.Classify(err))
	}
	out := make([]seats.Occupancy, 0, len(rows))
	for _, r := range rows {
		o := r.Edges.Order
		if o == nil || !o.Status.Active() {
			continue // an occupancy row outlives its order only by a bug; verify reports it
		}
		out = append(out, seats.Occupancy{SeatID: r.SeatID, UserID: o.UserID, Token: o.HoldToken,
			Sold: o.Status == seatflow.OrderPaid, HeldAt: o.CreatedAt})
	}
	return out, nil
}
