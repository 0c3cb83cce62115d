// Package waitlist keeps the waiting lists of sold-out showtimes: customers join one
// (joinWaitingList), and seats that come back are offered to its entries in join order,
// each offer a pending order held for the entrant, before anyone else may hold them
// (docs/DESIGN.md "Waiting list"). MySQL keeps the entries (waitlist_entries); the seat
// hash keeps the seats returned to the list ("4|MS", package seats), and a count of the
// entries waiting tells the seat scripts to return seats at all.
package waitlist

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/order"
	"seatflow/ent/waitlistentry"
	"seatflow/internal/background"
	"seatflow/internal/booking"
	"seatflow/internal/database"
	"seatflow/internal/keys"
	"seatflow/internal/rdb"
	"seatflow/internal/seats"
)

// Catalog reads showtimes fresh from MySQL (whether one is on sale must be current).
type Catalog interface {
	FreshShowtime(ctx context.Context, id int) (*seatflow.Showtime, error)
}

// Booking is what the waiting list asks of package booking: an offer's order, its
// cancellation when the entrant declines, and the customers' rate of order changes, which
// joins and leaves spend too.
type Booking interface {
	HoldOffer(ctx context.Context, in booking.OfferInput) (*seatflow.Order, error)
	CancelOrder(ctx context.Context, userID string, orderID int) (*seatflow.Order, error)
	LimitOrderChange(ctx context.Context, userID string) error
}

// Sales reads a showtime's sales report (package reports): the seats sold through offers.
type Sales interface {
	ShowtimeSales(ctx context.Context, showID int) (*seatflow.SalesReport, error)
}

// Deps are the stores and services the waiting list works with.
type Deps struct {
	DB      *ent.Client
	Seats   *seats.Store
	Layouts *seats.Layouts
	RDB     redis.UniversalClient
	Keys    keys.Keys
	Catalog Catalog
	Booking Booking
	Sales   Sales
}

// Config is how the waiting list behaves; New gives each zero field its default.
type Config struct {
	Now seatflow.ClockFunc
	// OfferTTL is how long offered seats stay held (seatflow.DefaultOfferTTL).
	OfferTTL time.Duration
	// SalesCloseAfter is when a showtime's sales close by themselves after its start
	// (seatflow.DefaultSalesCloseAfter): no entry joins after.
	SalesCloseAfter time.Duration
	// Sweep is how often the offerer looks at every showtime with entries waiting, for
	// seats returned while no instance was told (1 s by default).
	Sweep time.Duration
	Log   *slog.Logger
}

// Service runs the waiting lists. Build one with New; Run offers returned seats.
type Service struct {
	Deps
	Config
	kicks chan int
	feeds feeds
}

// New returns the service over d with c's settings.
func New(d Deps, c Config) *Service {
	if c.OfferTTL <= 0 {
		c.OfferTTL = seatflow.DefaultOfferTTL
	}
	if c.SalesCloseAfter <= 0 {
		c.SalesCloseAfter = seatflow.DefaultSalesCloseAfter
	}
	if c.Sweep <= 0 {
		c.Sweep = time.Second
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	return &Service{Deps: d, Config: c, kicks: make(chan int, 1024)}
}

var errNotFound = seatflow.Errorf(seatflow.ENOTFOUND, "waiting-list entry not found")

// activeKey is an active entry's unique key: one per user and showtime.
func activeKey(userID string, showID int) string { return fmt.Sprintf("%s|%d", userID, showID) }

// own loads one of the user's entries; someone else's is NOT_FOUND, like a missing one.
func (s *Service) own(ctx context.Context, userID string, id int) (*ent.WaitlistEntry, error) {
	e, err := s.DB.WaitlistEntry.Query().Where(waitlistentry.ID(id), waitlistentry.UserID(userID)).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, errNotFound
	} else if err != nil {
		return nil, fmt.Errorf("load waiting-list entry: %w", database.Classify(err))
	}
	return e, nil
}

// views returns rows as the API's entries: each offered one with its order's outcome and
// seats, each waiting one with its position, in two queries more at most per showtime.
func (s *Service) views(ctx context.Context, rows []*ent.WaitlistEntry) ([]*seatflow.WaitlistEntry, error) {
	var orderIDs []int
	for _, r := range rows {
		if r.OrderID != nil {
			orderIDs = append(orderIDs, *r.OrderID)
		}
	}
	orders := map[int]*ent.Order{}
	seatsOf := map[int][]int{}
	if len(orderIDs) > 0 {
		os, err := s.DB.Order.Query().Where(order.IDIn(orderIDs...)).WithSeats().All(ctx)
		if err != nil {
			return nil, fmt.Errorf("waiting-list offers: %w", database.Classify(err))
		}
		for _, o := range os {
			orders[o.ID] = o
			for _, l := range o.Edges.Seats {
				seatsOf[o.ID] = append(seatsOf[o.ID], l.SeatID)
			}
		}
	}
	waiting := map[int][]int{} // showtime: its waiting entries' ids in join order
	open := map[int]bool{}     // showtime: its sales are open
	out := make([]*seatflow.WaitlistEntry, len(rows))
	for i, r := range rows {
		e := &seatflow.WaitlistEntry{ID: r.ID, UserID: r.UserID, ShowtimeID: r.ShowtimeID, Seats: r.Seats,
			TicketTypes: parseTypes(r.TicketTypes), JoinedAt: r.CreatedAt, Status: seatflow.WaitlistStatus(r.State)}
		if o := orders[derefInt(r.OrderID)]; r.OrderID != nil && o != nil {
			e.Status = seatflow.OfferStatus(o.Status)
			e.Offer = &seatflow.WaitlistOffer{OrderID: o.ID, ShowtimeID: o.ShowtimeID, SeatIDs: seatsOf[o.ID], ExpiresAt: o.ExpiresAt}
		}
		if _, ok := waiting[r.ShowtimeID]; !ok {
			ids, err := s.waitingIDs(ctx, r.ShowtimeID)
			if err != nil {
				return nil, err
			}
			waiting[r.ShowtimeID] = ids
			if open[r.ShowtimeID], err = s.salesOpen(ctx, r.ShowtimeID); err != nil {
				return nil, err
			}
		}
		if e.Status == seatflow.WaitlistWaiting && !open[r.ShowtimeID] {
			e.Status = seatflow.WaitlistClosed
		}
		e.Waiting = len(waiting[r.ShowtimeID])
		if p := position(waiting[r.ShowtimeID], r.ID); p > 0 && e.Status == seatflow.WaitlistWaiting {
			e.Position = &p
		}
		out[i] = e
	}
	return out, nil
}

// salesOpen reports whether the showtime is on sale with its sales open: its waiting list
// is open too.
func (s *Service) salesOpen(ctx context.Context, showID int) (bool, error) {
	st, err := s.Catalog.FreshShowtime(ctx, showID)
	if seatflow.ErrorCode(err) == seatflow.ENOTFOUND {
		return false, nil
	} else if err != nil {
		return false, err
	}
	return s.isOpen(st), nil
}

// isOpen reports whether st is on sale with its sales open.
func (s *Service) isOpen(st *seatflow.Showtime) bool {
	return st.Status == seatflow.ShowtimeOnSale && !st.SalesEnded(s.Now.Now(), s.SalesCloseAfter)
}

// waitingIDs are the showtime's waiting entries' ids, in join order.
func (s *Service) waitingIDs(ctx context.Context, showID int) ([]int, error) {
	ids, err := s.DB.WaitlistEntry.Query().Where(waitlistentry.ShowtimeID(showID), waitlistentry.StateEQ(waitlistentry.StateWAITING)).
		Order(ent.Asc(waitlistentry.FieldID)).IDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("waiting entries: %w", database.Classify(err))
	}
	return ids, nil
}

// position is 1 + the number of ids before id (ids ascending), 0 when id is not in them.
func position(ids []int, id int) int {
	lo, hi := 0, len(ids)
	for lo < hi {
		m := (lo + hi) / 2
		if ids[m] < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(ids) && ids[lo] == id {
		return lo + 1
	}
	return 0
}

func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

func parseTypes(s string) []seatflow.TicketType {
	parts := strings.Split(s, ",")
	out := make([]seatflow.TicketType, len(parts))
	for i, p := range parts {
		out[i] = seatflow.TicketType(p)
	}
	return out
}

func joinTypes(ts []seatflow.TicketType) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = string(t)
	}
	return strings.Join(parts, ",")
}

// count adds delta to the showtime's count of waiting entries in Redis (never below 0);
// a failure is the reconciler's to recount.
func (s *Service) count(ctx context.Context, showID, delta int) {
	err := countScript.Run(ctx, s.RDB, []string{s.Keys.Waitlist(showID)}, delta).Err()
	if err != nil {
		background.Failed(ctx, s.Log, background.WaitlistCount, rdb.Classify("waiting-list count", err), "showtime", showID)
	}
}

// countScript adds ARGV[1] to KEYS[1], deleting it at 0 or below.
var countScript = redis.NewScript(`
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
if n <= 0 then redis.call('DEL', KEYS[1]) end
return n`)

// announce tells every instance's watchers of the showtime's waiting list that it changed.
func (s *Service) announce(ctx context.Context, showID int) {
	_ = s.RDB.Publish(ctx, s.Keys.WaitlistEvents(showID), "1").Err()
}
