// Package booking owns orders: holdSeats, extendHold, payOrder, cancelOrder, expiry,
// purchase limits, rate limits and idempotency, and their payments: starting one with the
// provider, applying the provider's confirmations once each, refunds. It writes orders and
// payments in MySQL and changes seats only through package seats; it is the only code that
// creates or changes an order or a payment record.
package booking

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/order"
	"seatflow/ent/orderseat"
	"seatflow/internal/database"
	"seatflow/internal/keys"
	"seatflow/internal/payments"
	"seatflow/internal/rdb"
	"seatflow/internal/seats"
)

// DefaultHoldTTL is how long a hold lasts before it expires unless paid or extended.
const DefaultHoldTTL = 15 * time.Minute

// Catalog is what booking reads from the catalog.
type Catalog interface {
	// FreshShowtime reads a showtime from MySQL, never from a cache: whether a showtime is
	// on sale or cancelled must be current.
	FreshShowtime(ctx context.Context, id int) (*seatflow.Showtime, error)
	// Showtime reads a showtime through the catalog's cache: a hold takes its hall, prices
	// and limit from there, and its transaction checks in MySQL that it is on sale.
	Showtime(ctx context.Context, id int) (*seatflow.Showtime, error)
}

// SeatHashes builds a showtime's seat hash when Redis has none (package sales).
type SeatHashes interface {
	InitSeats(ctx context.Context, showID, hallID int) (bool, error)
}

// Tickets makes and takes back the tickets of orders inside booking's transactions
// (package tickets): they exist exactly while an order is PAID, and never come back.
type Tickets interface {
	// IssueIn makes the tickets of an order becoming PAID, in the transaction that does it.
	// lines are the order's, each seat's ticket with its type.
	IssueIn(ctx context.Context, tx *ent.Tx, orderID, showID int, lines []seatflow.OrderLine) error
	// RevokeOrderIn revokes an order's tickets in the transaction that refunds it.
	RevokeOrderIn(ctx context.Context, tx *ent.Tx, orderID int) error
	// RevokeSeatsIn revokes the tickets of some seats of an order in the transaction that
	// refunds them; it revokes nothing and returns the seats whose ticket was checked in,
	// if any (lock: a locking read, for MySQL).
	RevokeSeatsIn(ctx context.Context, tx *ent.Tx, orderID int, seatIDs []int, lock bool) (checkedIn []int, err error)
}

// Deps are the stores and services a Service works with.
type Deps struct {
	DB      *ent.Client
	Seats   *seats.Store
	Layouts *seats.Layouts
	Hashes  SeatHashes
	RDB     redis.UniversalClient
	Keys    keys.Keys
	Catalog Catalog
	// Provider takes payments and refunds; without one, payOrder and startPayment refuse.
	Provider payments.Provider
	// Tickets issues and revokes tickets; none are made when nil.
	Tickets Tickets
	// Admissions verifies and ends the on-sale queues' passes; when nil, a showtime whose
	// queue gates holds refuses every hold (NOT_ADMITTED).
	Admissions Admissions
}

// Config is how a Service behaves; New gives each zero field its default.
type Config struct {
	// Now is the clock; time.Now by default.
	Now seatflow.ClockFunc
	// HoldTTL is the life of a hold; DefaultHoldTTL by default.
	HoldTTL time.Duration
	// LateWindow is how long after its expiry an order's payment may still take its seats;
	// DefaultLateWindow by default. A later payment is refunded.
	LateWindow time.Duration
	// SalesCloseAfter is how long after its start a showtime's sales close by themselves
	// (Showtime.SalesEnded); seatflow.DefaultSalesCloseAfter by default. Then no hold is
	// made, and a payment is refunded instead of taking the seats.
	SalesCloseAfter time.Duration
	// HoldRate and OrderRate limit holds and order changes (pay, cancel, extend) per user,
	// in Redis; a zero rate is no limit.
	HoldRate  redis_rate.Limit
	OrderRate redis_rate.Limit
	// SingleWriter says the database runs one transaction at a time (the embedded
	// SQLite): the purchase limit's count in a hold's transaction then needs no row lock
	// (limit.go).
	SingleWriter bool
	// Log receives what a customer's request cannot report (a refund the provider did not
	// take yet, a payment a person must look at); slog.Default() by default.
	Log *slog.Logger
}

// Service creates and changes orders. Seats change only through Seats; every state change
// of an order is a conditional update, so concurrent requests need no row locks; the one
// locking read is the purchase limit's count in a hold's transaction (limit.go). Build
// one with New.
type Service struct {
	Deps
	Config
	limiter *redis_rate.Limiter // the rate limits' counters, in RDB
}

// New returns the service over d, with c's settings and the defaults of those c leaves
// zero.
func New(d Deps, c Config) *Service {
	if c.HoldTTL <= 0 {
		c.HoldTTL = DefaultHoldTTL
	}
	if c.LateWindow <= 0 {
		c.LateWindow = DefaultLateWindow
	}
	if c.SalesCloseAfter <= 0 {
		c.SalesCloseAfter = seatflow.DefaultSalesCloseAfter
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	return &Service{Deps: d, Config: c, limiter: rdb.NewLimiter(d.RDB)}
}

var errNotFound = seatflow.Errorf(seatflow.ENOTFOUND, "order not found")

// salesClosed is NOT_ON_SALE when st's sales have closed by themselves, nil before.
func (s *Service) salesClosed(st *seatflow.Showtime) error {
	if !st.SalesEnded(s.Now.Now(), s.SalesCloseAfter) {
		return nil
	}
	return seatflow.Errorf(seatflow.ENOTONSALE, "this showtime's sales closed at %s, %s after it started",
		st.SalesCloseAt(s.SalesCloseAfter).UTC().Format(time.RFC3339), s.SalesCloseAfter)
}

// queue is the delay queue of pending orders' expiries.
func (s *Service) queue() *ExpiryQueue {
	return &ExpiryQueue{RDB: s.RDB, Key: s.Keys.OrdersExpiry()}
}

func (s *Service) withTx(ctx context.Context, fn func(tx *ent.Tx) error) error {
	return s.inTx(ctx, nil, fn)
}

// inTx is withTx with the transaction's options (nil: the database's defaults).
func (s *Service) inTx(ctx context.Context, opts *sql.TxOptions, fn func(tx *ent.Tx) error) error {
	var tx *ent.Tx
	var err error
	if opts == nil {
		tx, err = s.DB.Tx(ctx)
	} else {
		tx, err = s.DB.BeginTx(ctx, opts)
	}
	if err != nil {
		return fmt.Errorf("begin: %w", database.Classify(err))
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", database.Classify(err))
	}
	return nil
}

// own loads an order of the user; someone else's order is NOT_FOUND, like a missing one,
// so order ids cannot be probed.
func (s *Service) own(ctx context.Context, userID string, id int) (*ent.Order, error) {
	o, err := s.DB.Order.Query().Where(order.ID(id), order.UserID(userID)).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, errNotFound
	} else if err != nil {
		return nil, fmt.Errorf("load order: %w", database.Classify(err))
	}
	return o, nil
}

// OrderByID returns any order (staff at the door see the order of a ticket they scan).
func (s *Service) OrderByID(ctx context.Context, id int) (*seatflow.Order, error) {
	o, err := s.DB.Order.Get(ctx, id)
	if ent.IsNotFound(err) {
		return nil, errNotFound
	} else if err != nil {
		return nil, fmt.Errorf("load order: %w", database.Classify(err))
	}
	return s.withSeats(ctx, o)
}

// issueIn makes a paid order's tickets inside its pay transaction.
func (s *Service) issueIn(ctx context.Context, tx *ent.Tx, orderID, showID int, lines []seatflow.OrderLine) error {
	if s.Tickets == nil {
		return nil
	}
	return s.Tickets.IssueIn(ctx, tx, orderID, showID, lines)
}

// Order returns one of the user's orders.
func (s *Service) Order(ctx context.Context, userID string, id int) (*seatflow.Order, error) {
	o, err := s.own(ctx, userID, id)
	if err != nil {
		return nil, err
	}
	return s.withSeats(ctx, o)
}

// MyOrders returns the user's orders, newest first.
func (s *Service) MyOrders(ctx context.Context, userID string) ([]*seatflow.Order, error) {
	rows, err := s.DB.Order.Query().Where(order.UserID(userID)).Order(ent.Desc(order.FieldCreatedAt), ent.Desc(order.FieldID)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("my orders: %w", database.Classify(err))
	}
	return s.withSeatsOf(ctx, rows)
}

// Orders returns the user's orders of ids in id order, nil where the user has none (a
// missing order or someone else's: the same to the caller), with one query, and one more
// for their seats when any was found.
func (s *Service) Orders(ctx context.Context, userID string, ids []int) ([]*seatflow.Order, error) {
	rows, err := s.DB.Order.Query().Where(order.IDIn(ids...), order.UserID(userID)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("orders: %w", database.Classify(err))
	}
	found, err := s.withSeatsOf(ctx, rows)
	if err != nil {
		return nil, err
	}
	byID := make(map[int]*seatflow.Order, len(found))
	for _, o := range found {
		byID[o.ID] = o
	}
	out := make([]*seatflow.Order, len(ids))
	for i, id := range ids {
		out[i] = byID[id]
	}
	return out, nil
}

// withSeatsOf returns rows as orders with their lines, read in one query.
func (s *Service) withSeatsOf(ctx context.Context, rows []*ent.Order) ([]*seatflow.Order, error) {
	out := make([]*seatflow.Order, len(rows))
	if len(rows) == 0 {
		return out, nil
	}
	ids := make([]int, len(rows))
	showOf := make(map[int]int, len(rows))
	for i, o := range rows {
		ids[i] = o.ID
		showOf[o.ID] = o.ShowtimeID
	}
	seatRows, err := s.DB.OrderSeat.Query().Where(orderseat.OrderIDIn(ids...)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("orders: seats: %w", database.Classify(err))
	}
	linesOf := map[int][]seatflow.OrderLine{}
	for _, r := range seatRows {
		linesOf[r.OrderID] = append(linesOf[r.OrderID], toLine(r, showOf[r.OrderID]))
	}
	for i, o := range rows {
		out[i] = toOrder(o, sortLines(linesOf[o.ID]))
	}
	return out, nil
}

// orderLines reads an order's lines, in seat order.
func (s *Service) orderLines(ctx context.Context, orderID, showID int) ([]seatflow.OrderLine, error) {
	rows, err := s.DB.OrderSeat.Query().Where(orderseat.OrderID(orderID)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("load order seats: %w", database.Classify(err))
	}
	lines := make([]seatflow.OrderLine, len(rows))
	for i, r := range rows {
		lines[i] = toLine(r, showID)
	}
	return sortLines(lines), nil
}

func (s *Service) seatIDs(ctx context.Context, orderID int) ([]int, error) {
	lines, err := s.orderLines(ctx, orderID, 0)
	if err != nil {
		return nil, err
	}
	return lineSeats(lines), nil
}

func (s *Service) withSeats(ctx context.Context, o *ent.Order) (*seatflow.Order, error) {
	lines, err := s.orderLines(ctx, o.ID, o.ShowtimeID)
	if err != nil {
		return nil, err
	}
	return toOrder(o, lines), nil
}

func (s *Service) reload(ctx context.Context, id int) (*seatflow.Order, error) {
	o, err := s.DB.Order.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("reload order: %w", database.Classify(err))
	}
	return s.withSeats(ctx, o)
}

// toLine is an order_seats row as the line of an order of showtime showID.
func toLine(r *ent.OrderSeat, showID int) seatflow.OrderLine {
	l := seatflow.OrderLine{ShowtimeID: showID, SeatID: r.SeatID, TicketType: r.TicketType, RefundedAt: r.RefundedAt}
	if r.AmountCents != nil {
		l.AmountCents = *r.AmountCents
	}
	return l
}

func sortLines(lines []seatflow.OrderLine) []seatflow.OrderLine {
	slices.SortFunc(lines, func(a, b seatflow.OrderLine) int { return a.SeatID - b.SeatID })
	return lines
}

// lineSeats are the seats of lines, in their order.
func lineSeats(lines []seatflow.OrderLine) []int {
	ids := make([]int, len(lines))
	for i, l := range lines {
		ids[i] = l.SeatID
	}
	return ids
}

func toOrder(o *ent.Order, lines []seatflow.OrderLine) *seatflow.Order {
	if lines == nil {
		lines = []seatflow.OrderLine{}
	}
	out := &seatflow.Order{ID: o.ID, UserID: o.UserID, ShowtimeID: o.ShowtimeID, HoldToken: o.HoldToken, Status: o.Status,
		AmountCents: o.AmountCents, Currency: o.Currency, PaidAt: o.PaidAt, CreatedAt: o.CreatedAt,
		RefundRequired: o.RefundRequired, SeatIDs: lineSeats(lines), Lines: lines}
	// Paid and cancelled orders have no expiry to show.
	if o.Status == seatflow.OrderPending || o.Status == seatflow.OrderExpired {
		exp := o.ExpiresAt
		out.ExpiresAt = &exp
	}
	return out
}

// seatsReachable refuses a customer's pay or cancel, or staff's refund of a paid order
// (SERVICE_UNAVAILABLE), while the instance cannot reach the seat Redis: the order would
// change in MySQL with its seats left as they were until the reconciler repairs them (a
// cancelled order's seats would stay held for the orphan-hold grace period, a refunded
// one's sold). Redis may still fail after this check;
// the reconciler covers that narrower window.
func (s *Service) seatsReachable(ctx context.Context, showID int) error {
	_, err := s.Seats.Version(ctx, showID)
	return err
}
