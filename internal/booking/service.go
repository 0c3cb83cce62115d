package booking

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/go-sql-driver/mysql"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/order"
	"seatflow/ent/orderseat"
	"seatflow/ent/predicate"
	"seatflow/ent/seatoccupancy"
	"seatflow/ent/showtime"
	"seatflow/internal/catalog"
	"seatflow/internal/keys"
	"seatflow/internal/seats"
)

// DefaultHoldTTL is how long a hold lasts before it expires unless paid or extended.
const DefaultHoldTTL = 15 * time.Minute

// DefaultHoldRate is a per-user hold rate that a person never reaches but that stops one
// client from sweeping a hall.
var DefaultHoldRate = redis_rate.PerMinute(20)

// maxIdempotencyKey and maxPaymentRef are the column sizes of the orders table.
const (
	maxIdempotencyKey = 128
	maxPaymentRef     = 191
)

// Idempotency marker values and lifetimes: inFlight while the first request runs (the TTL
// bounds how long a crashed request can block its key), then the order id for a day.
const (
	inFlight      = "in-flight"
	inFlightTTL   = 30 * time.Second
	rememberedTTL = 24 * time.Hour
)

// Catalog is what booking reads from the catalog: halls (their seat templates) and
// showtimes. Cached reads are fine here; whether a showtime is on sale is read from MySQL.
type Catalog interface {
	Showtime(ctx context.Context, id int) (*catalog.Showtime, error)
	Hall(ctx context.Context, id int) (*catalog.Hall, error)
	// SetShowtimeStatus changes a showtime's status and invalidates its cache entries.
	SetShowtimeStatus(ctx context.Context, id int, from []string, to string) (*catalog.Showtime, error)
}

// Service creates and changes orders. Seats change only through Seats; every state change
// of an order is a conditional update, so concurrent requests need no row locks.
type Service struct {
	DB      *ent.Client
	Seats   *seats.Store
	RDB     redis.UniversalClient
	Keys    keys.Keys
	Catalog Catalog
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// HoldTTL is the life of a hold; DefaultHoldTTL when zero.
	HoldTTL time.Duration
	// Limiter, HoldRate and OrderRate limit holds and order changes (pay, cancel, extend)
	// per user; no limit when unset.
	Limiter   *redis_rate.Limiter
	HoldRate  redis_rate.Limit
	OrderRate redis_rate.Limit

	layouts sync.Map // hall id → *seats.Layout; halls never change once created
}

// layout returns the prepared seat template of a hall, built once per hall: a hold then
// costs no decoding and no sorting of the hall's seats.
func (s *Service) layout(ctx context.Context, hallID int) (*seats.Layout, error) {
	if l, ok := s.layouts.Load(hallID); ok {
		return l.(*seats.Layout), nil
	}
	hall, err := s.Catalog.Hall(ctx, hallID)
	if err != nil {
		return nil, err
	}
	l, _ := s.layouts.LoadOrStore(hallID, seats.NewLayout(hall))
	return l.(*seats.Layout), nil
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Service) ttl() time.Duration {
	if s.HoldTTL > 0 {
		return s.HoldTTL
	}
	return DefaultHoldTTL
}

// unavailable reports a Redis failure outside package seats as SERVICE_UNAVAILABLE.
func unavailable(op string, err error) error {
	return fmt.Errorf("%s: %w: %w", op, seatflow.Errorf(seatflow.EUNAVAILABLE, "service temporarily unavailable"), err)
}

var errNotFound = seatflow.Errorf(seatflow.ENOTFOUND, "order not found")

// HoldSeats holds seats of an on-sale showtime for the user and creates a pending order.
// The same idempotency key returns the user's first order with that key (whatever the
// rest of the input); a duplicate arriving while the first is in flight gets IN_PROGRESS.
// A failure after the seats were held releases them at once and is not remembered, so a
// retry really retries.
func (s *Service) HoldSeats(ctx context.Context, userID string, in HoldSeatsInput) (*Order, error) {
	if err := validateHold(userID, in); err != nil {
		return nil, err
	}
	// The idempotency marker: inFlight while the first request runs, then the id of the order it
	// made (for a day), so a repeat finds its order without a database lookup.
	marker := s.Keys.Idempotency(userID, in.IdempotencyKey)
	first, err := s.RDB.SetNX(ctx, marker, inFlight, inFlightTTL).Result()
	if err != nil {
		return nil, unavailable("hold seats: mark in flight", err)
	}
	if !first {
		return s.repeated(ctx, userID, in.IdempotencyKey, marker)
	}
	cleanup := context.WithoutCancel(ctx)
	// Rate-limited after the marker, so duplicates of one request do not use up the budget.
	if err := s.allow(ctx, userID); err != nil {
		s.RDB.Del(cleanup, marker)
		return nil, err
	}
	o, err := s.hold(ctx, userID, in)
	if err != nil {
		s.RDB.Del(cleanup, marker) // failures are not remembered: a retry really retries
		// An order with this key older than the marker's day may hold these very seats; only
		// a user who holds seats here can have one, so a rush of lost races costs no lookup.
		if code := seatflow.ErrorCode(err); code == seatflow.ESEATSUNAVAILABLE || code == seatflow.ELIMIT {
			if n, _ := s.Seats.Count(ctx, in.ShowtimeID, userID); n > 0 {
				if earlier, _ := s.byIdempotencyKey(ctx, userID, in.IdempotencyKey); earlier != nil {
					return earlier, nil
				}
			}
		}
		return nil, err
	}
	// One round trip: the order joins the expiry queue and the marker remembers it. A lost
	// enqueue is caught by the reconciler's expired-order scan.
	_, _ = s.RDB.Pipelined(cleanup, func(p redis.Pipeliner) error {
		p.ZAdd(cleanup, s.Keys.OrdersExpiry(), redis.Z{Score: float64(o.ExpiresAt.UnixMilli()), Member: strconv.Itoa(o.ID)})
		p.Set(cleanup, marker, strconv.Itoa(o.ID), rememberedTTL)
		return nil
	})
	return o, nil
}

// repeated answers a request whose idempotency marker exists: the order the first request
// made, or IN_PROGRESS while it still runs.
func (s *Service) repeated(ctx context.Context, userID, key, marker string) (*Order, error) {
	inProgress := seatflow.Errorf(seatflow.EINPROGRESS, "the same request is already being processed")
	v, err := s.RDB.Get(ctx, marker).Result()
	if errors.Is(err, redis.Nil) || v == inFlight {
		return nil, inProgress
	} else if err != nil {
		return nil, unavailable("hold seats: read idempotency marker", err)
	}
	if id, err := strconv.Atoi(v); err == nil {
		o, err := s.DB.Order.Query().Where(order.ID(id), order.UserID(userID), order.IdempotencyKey(key)).Only(ctx)
		if err == nil {
			return s.withSeats(ctx, o)
		}
	}
	// The marker names no order of this user and key: look the key up, else it is in flight.
	if o, err := s.byIdempotencyKey(ctx, userID, key); o != nil || err != nil {
		return o, err
	}
	return nil, inProgress
}

func validateHold(userID string, in HoldSeatsInput) error {
	switch {
	case userID == "":
		return seatflow.Errorf(seatflow.EUNAUTHENTICATED, "sign in to hold seats")
	case len(in.SeatIDs) == 0:
		return seatflow.Errorf(seatflow.EINVALID, "choose at least one seat")
	case len(in.SeatIDs) > MaxSeatsPerHold:
		return seatflow.Errorf(seatflow.EINVALID, "at most %d seats per request", MaxSeatsPerHold)
	case in.IdempotencyKey == "" || len(in.IdempotencyKey) > maxIdempotencyKey:
		return seatflow.Errorf(seatflow.EINVALID, "idempotencyKey must be 1 to %d characters", maxIdempotencyKey)
	}
	seen := map[int]bool{}
	for _, id := range in.SeatIDs {
		if seen[id] {
			return seatflow.Errorf(seatflow.EINVALID, "seat %d is listed twice", id)
		}
		seen[id] = true
	}
	return nil
}

func (s *Service) allow(ctx context.Context, userID string) error {
	return s.rateLimit(ctx, "hold", userID, s.HoldRate)
}

// rateLimit spends one request of the user's budget for kind (hold, order); a zero rate
// is no limit.
func (s *Service) rateLimit(ctx context.Context, kind, userID string, rate redis_rate.Limit) error {
	if s.Limiter == nil || rate.IsZero() {
		return nil
	}
	res, err := s.Limiter.Allow(ctx, s.Keys.RateLimit()+kind+":"+userID, rate)
	if err != nil {
		return unavailable(kind+" rate limit", err)
	}
	if res.Allowed == 0 {
		e := seatflow.Errorf(seatflow.ERATELIMITED, "too many requests, try again in %s", res.RetryAfter.Round(time.Second))
		e.Extensions = map[string]any{"retryAfterMs": res.RetryAfter.Milliseconds()}
		return e
	}
	return nil
}

func (s *Service) byIdempotencyKey(ctx context.Context, userID, key string) (*Order, error) {
	o, err := s.DB.Order.Query().Where(order.UserID(userID), order.IdempotencyKey(key)).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("find order by idempotency key: %w", err)
	}
	return s.withSeats(ctx, o)
}

func (s *Service) hold(ctx context.Context, userID string, in HoldSeatsInput) (*Order, error) {
	// On sale is read from MySQL, never the cache: a closed sale must stop holds at once.
	st, err := s.DB.Showtime.Get(ctx, in.ShowtimeID)
	if ent.IsNotFound(err) {
		return nil, seatflow.Errorf(seatflow.ENOTFOUND, "showtime not found")
	} else if err != nil {
		return nil, fmt.Errorf("hold seats: load showtime: %w", err)
	}
	if st.Status != showtime.StatusON_SALE {
		return nil, seatflow.Errorf(seatflow.ENOTONSALE, "this showtime is not on sale")
	}
	layout, err := s.layout(ctx, st.HallID)
	if err != nil {
		return nil, fmt.Errorf("hold seats: load hall: %w", err)
	}
	amount := 0
	for _, id := range in.SeatIDs {
		kind, ok := layout.Kind(id)
		if !ok {
			return nil, seatflow.Errorf(seatflow.EINVALID, "seat %d is not in this showtime's hall", id)
		}
		price, ok := st.Prices[kind]
		if !ok {
			return nil, seatflow.Errorf(seatflow.ESEATSUNAVAILABLE, "seat %d is not for sale at this showtime", id)
		}
		amount += price
	}

	token := uuid.NewString()
	req := seats.HoldRequest{ShowtimeID: st.ID, Layout: layout, SeatIDs: in.SeatIDs, Token: token,
		UserID: userID, Limit: st.PurchaseLimit, AllowGaps: st.AllowSeatGaps}
	// Not cancelled with the request: a hold applied in Redis must also reach MySQL or be
	// released below, whenever the client goes away.
	ctx = context.WithoutCancel(ctx)
	err = s.Seats.Hold(ctx, req)
	if errors.Is(err, seats.ErrNoSeatMap) {
		// The showtime is on sale but Redis lost its seats (a restart): rebuild them from
		// MySQL now rather than wait for the reconciler, then try once more.
		if _, initErr := s.InitSeats(ctx, st.ID, st.HallID); initErr == nil {
			err = s.Seats.Hold(ctx, req)
		}
	}
	if err != nil {
		return nil, err
	}

	now := s.now()
	var created *ent.Order
	err = s.withTx(ctx, func(tx *ent.Tx) error {
		var err error
		created, err = tx.Order.Create().SetUserID(userID).SetShowtimeID(st.ID).SetHoldToken(token).
			SetIdempotencyKey(in.IdempotencyKey).SetStatus(order.StatusPENDING_PAYMENT).SetAmountCents(amount).
			SetCurrency(st.Currency).SetExpiresAt(now.Add(s.ttl())).SetCreatedAt(now).Save(ctx)
		if err != nil {
			return fmt.Errorf("create order: %w", err)
		}
		if err := tx.OrderSeat.MapCreateBulk(in.SeatIDs, func(c *ent.OrderSeatCreate, i int) {
			c.SetOrderID(created.ID).SetSeatID(in.SeatIDs[i])
		}).Exec(ctx); err != nil {
			return fmt.Errorf("create order seats: %w", err)
		}
		if err := insertOccupancy(ctx, tx, created, in.SeatIDs); err != nil {
			if seatTaken(err) {
				return seatflow.Errorf(seatflow.ESEATSUNAVAILABLE, "some of these seats were just taken")
			}
			return err
		}
		return nil
	})
	if err != nil {
		// Give the seats back at once, even if the request was cancelled meanwhile.
		_, _ = s.Seats.Release(context.WithoutCancel(ctx), st.ID, token, userID, in.SeatIDs)
		if ent.IsConstraintError(err) { // the same key committed by a request whose marker expired
			if o, _ := s.byIdempotencyKey(ctx, userID, in.IdempotencyKey); o != nil {
				return o, nil
			}
		}
		return nil, fmt.Errorf("hold seats: %w", err)
	}
	return toOrder(created, in.SeatIDs), nil
}

// seatTaken reports whether inserting occupancy failed because another order has (or is
// committing) one of the seats: the unique (showtime, seat) clash, or the deadlock MySQL
// may resolve two such concurrent inserts with.
func seatTaken(err error) bool {
	var me *mysql.MySQLError
	return ent.IsConstraintError(err) || (errors.As(err, &me) && me.Number == 1213)
}

func insertOccupancy(ctx context.Context, tx *ent.Tx, o *ent.Order, seatIDs []int) error {
	err := tx.SeatOccupancy.MapCreateBulk(seatIDs, func(c *ent.SeatOccupancyCreate, i int) {
		c.SetShowtimeID(o.ShowtimeID).SetSeatID(seatIDs[i]).SetOrderID(o.ID)
	}).Exec(ctx)
	if err != nil {
		return fmt.Errorf("create seat occupancy: %w", err)
	}
	return nil
}

func (s *Service) withTx(ctx context.Context, fn func(tx *ent.Tx) error) error {
	tx, err := s.DB.Tx(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
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
		return nil, fmt.Errorf("load order: %w", err)
	}
	return o, nil
}

// Order returns one of the user's orders.
func (s *Service) Order(ctx context.Context, userID string, id int) (*Order, error) {
	o, err := s.own(ctx, userID, id)
	if err != nil {
		return nil, err
	}
	return s.withSeats(ctx, o)
}

// MyOrders returns the user's orders, newest first.
func (s *Service) MyOrders(ctx context.Context, userID string) ([]*Order, error) {
	rows, err := s.DB.Order.Query().Where(order.UserID(userID)).Order(ent.Desc(order.FieldCreatedAt), ent.Desc(order.FieldID)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("my orders: %w", err)
	}
	ids := make([]int, len(rows))
	for i, o := range rows {
		ids[i] = o.ID
	}
	seatRows, err := s.DB.OrderSeat.Query().Where(orderseat.OrderIDIn(ids...)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("my orders: seats: %w", err)
	}
	seatsOf := map[int][]int{}
	for _, r := range seatRows {
		seatsOf[r.OrderID] = append(seatsOf[r.OrderID], r.SeatID)
	}
	out := make([]*Order, len(rows))
	for i, o := range rows {
		slices.Sort(seatsOf[o.ID])
		out[i] = toOrder(o, seatsOf[o.ID])
	}
	return out, nil
}

func (s *Service) seatIDs(ctx context.Context, orderID int) ([]int, error) {
	rows, err := s.DB.OrderSeat.Query().Where(orderseat.OrderID(orderID)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("load order seats: %w", err)
	}
	ids := make([]int, len(rows))
	for i, r := range rows {
		ids[i] = r.SeatID
	}
	slices.Sort(ids)
	return ids, nil
}

func (s *Service) withSeats(ctx context.Context, o *ent.Order) (*Order, error) {
	ids, err := s.seatIDs(ctx, o.ID)
	if err != nil {
		return nil, err
	}
	return toOrder(o, ids), nil
}

func (s *Service) reload(ctx context.Context, id int) (*Order, error) {
	o, err := s.DB.Order.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("reload order: %w", err)
	}
	return s.withSeats(ctx, o)
}

func toOrder(o *ent.Order, seatIDs []int) *Order {
	out := &Order{ID: o.ID, UserID: o.UserID, ShowtimeID: o.ShowtimeID, HoldToken: o.HoldToken, Status: string(o.Status),
		AmountCents: o.AmountCents, Currency: o.Currency, PaidAt: o.PaidAt, CreatedAt: o.CreatedAt,
		RefundRequired: o.RefundRequired, SeatIDs: seatIDs}
	// Paid and cancelled orders have no expiry to show.
	if o.Status == order.StatusPENDING_PAYMENT || o.Status == order.StatusEXPIRED {
		exp := o.ExpiresAt
		out.ExpiresAt = &exp
	}
	return out
}

// ExtendHold pushes a pending order's expiry out by HoldTTL, but never past twice HoldTTL
// after the order was created, so a hold cannot be kept forever.
func (s *Service) ExtendHold(ctx context.Context, userID string, orderID int) (*Order, error) {
	if err := s.rateLimit(ctx, "order", userID, s.OrderRate); err != nil {
		return nil, err
	}
	o, err := s.own(ctx, userID, orderID)
	if err != nil {
		return nil, err
	}
	now := s.now()
	if err := pendingNotExpired(o, now); err != nil {
		return nil, err
	}
	exp := now.Add(s.ttl())
	if limit := o.CreatedAt.Add(2 * s.ttl()); exp.After(limit) {
		exp = limit
	}
	n, err := s.DB.Order.Update().Where(order.ID(o.ID), order.StatusEQ(order.StatusPENDING_PAYMENT), order.ExpiresAtGT(now)).
		SetExpiresAt(exp).Save(ctx)
	if err != nil {
		return nil, fmt.Errorf("extend hold: %w", err)
	}
	if n == 0 { // paid, cancelled or expired meanwhile
		if o, err = s.own(ctx, userID, orderID); err != nil {
			return nil, err
		}
		if err := pendingNotExpired(o, now); err != nil {
			return nil, err
		}
		return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "the order changed meanwhile, try again")
	}
	_ = s.RDB.ZAdd(ctx, s.Keys.OrdersExpiry(), redis.Z{Score: float64(exp.UnixMilli()), Member: strconv.Itoa(o.ID)}).Err()
	return s.reload(ctx, o.ID)
}

func pendingNotExpired(o *ent.Order, now time.Time) error {
	if o.Status != order.StatusPENDING_PAYMENT {
		return seatflow.Errorf(seatflow.EINVALIDSTATE, "the order is %s", o.Status)
	}
	if !o.ExpiresAt.After(now) {
		return seatflow.Errorf(seatflow.EORDEREXPIRED, "the hold has expired")
	}
	return nil
}

// PayOrder records the payment of a pending order and marks its seats sold. Paying again
// with the same paymentRef returns the paid order. A payment arriving after the hold
// expired first tries to take the same seats again; if another buyer has them it fails
// with ORDER_EXPIRED and the order is marked refundRequired.
func (s *Service) PayOrder(ctx context.Context, userID string, orderID int, paymentRef string) (*Order, error) {
	if paymentRef == "" || len(paymentRef) > maxPaymentRef {
		return nil, seatflow.Errorf(seatflow.EINVALID, "paymentRef must be 1 to %d characters", maxPaymentRef)
	}
	if err := s.rateLimit(ctx, "order", userID, s.OrderRate); err != nil {
		return nil, err
	}
	// Two rounds at most: a conditional update that lost a race is decided on a reload.
	for range 2 {
		o, err := s.own(ctx, userID, orderID)
		if err != nil {
			return nil, err
		}
		now := s.now()
		switch {
		case o.Status == order.StatusPAID:
			if o.PaymentRef == paymentRef {
				return s.withSeats(ctx, o)
			}
			return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "the order is already paid")
		case o.Status == order.StatusCANCELLED:
			return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "the order was cancelled")
		case o.Status == order.StatusEXPIRED && o.RefundRequired:
			return nil, expiredErr()
		}
		if err := s.stillShowing(ctx, o.ShowtimeID); err != nil {
			return nil, err
		}
		switch {
		case o.Status == order.StatusEXPIRED || !o.ExpiresAt.After(now):
			return s.payLate(ctx, o, paymentRef)
		}
		n, err := s.DB.Order.Update().Where(order.ID(o.ID), order.StatusEQ(order.StatusPENDING_PAYMENT),
			order.HoldToken(o.HoldToken), order.ExpiresAtGT(now)).
			SetStatus(order.StatusPAID).SetPaidAt(now).SetPaymentRef(paymentRef).Save(ctx)
		if err != nil {
			return nil, fmt.Errorf("pay order: %w", err)
		}
		if n == 0 {
			continue
		}
		return s.afterPaid(ctx, o.ID, o.ShowtimeID, o.HoldToken)
	}
	return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "the order changed meanwhile, try again")
}

// afterPaid marks a paid order's seats sold. The payment is committed, so a Redis failure
// here is not the customer's: the reconciler's paid-seat repair finishes the job.
func (s *Service) afterPaid(ctx context.Context, orderID, showID int, token string) (*Order, error) {
	ctx = context.WithoutCancel(ctx) // the payment is committed: finish whatever the client does
	o, err := s.reload(ctx, orderID)
	if err != nil {
		return nil, err
	}
	_, _ = s.Seats.Confirm(ctx, showID, token, o.SeatIDs)
	_ = s.RDB.ZRem(ctx, s.Keys.OrdersExpiry(), strconv.Itoa(orderID)).Err()
	return o, nil
}

func expiredErr() error {
	return seatflow.Errorf(seatflow.EORDEREXPIRED, "the hold expired and the seats went to another buyer; the payment will be refunded")
}

var errChanged = errors.New("order changed meanwhile")

// payLate rescues a payment that arrived after the hold expired. The seats move to a fresh
// hold token (taking over the old token's seats if they are still held): the expiry path
// releases by the old token after its commit, and with a new token that late release
// cannot free the seats just paid for.
func (s *Service) payLate(ctx context.Context, o *ent.Order, paymentRef string) (*Order, error) {
	st, err := s.DB.Showtime.Get(ctx, o.ShowtimeID)
	if err != nil {
		return nil, fmt.Errorf("pay order: load showtime: %w", err)
	}
	layout, err := s.layout(ctx, st.HallID)
	if err != nil {
		return nil, fmt.Errorf("pay order: load hall: %w", err)
	}
	seatIDs, err := s.seatIDs(ctx, o.ID)
	if err != nil {
		return nil, err
	}
	token := uuid.NewString()
	ctx = context.WithoutCancel(ctx) // a re-hold applied in Redis must reach MySQL or be released
	// No limit and no gap rule: the customer had these seats and has paid for them.
	err = s.Seats.Hold(ctx, seats.HoldRequest{ShowtimeID: o.ShowtimeID, Layout: layout, SeatIDs: seatIDs, Token: token,
		UserID: o.UserID, AllowGaps: true, TakeOver: o.HoldToken})
	if seatflow.ErrorCode(err) == seatflow.ESEATSUNAVAILABLE {
		return s.refund(ctx, o, paymentRef)
	} else if err != nil {
		return nil, err
	}
	now := s.now()
	err = s.withTx(ctx, func(tx *ent.Tx) error {
		// Not if a concurrent late payment of the same order already gave up on it.
		n, err := tx.Order.Update().Where(order.ID(o.ID), order.HoldToken(o.HoldToken),
			order.StatusIn(order.StatusPENDING_PAYMENT, order.StatusEXPIRED), order.RefundRequired(false)).
			SetStatus(order.StatusPAID).SetHoldToken(token).SetPaidAt(now).SetPaymentRef(paymentRef).Save(ctx)
		if err != nil {
			return fmt.Errorf("mark paid: %w", err)
		}
		if n == 0 {
			return errChanged
		}
		// Expiry deleted the occupancy; a still-pending order keeps its rows: rewrite them.
		if _, err := tx.SeatOccupancy.Delete().Where(seatoccupancy.OrderID(o.ID)).Exec(ctx); err != nil {
			return fmt.Errorf("delete occupancy: %w", err)
		}
		return insertOccupancy(ctx, tx, o, seatIDs)
	})
	if err != nil {
		_, _ = s.Seats.Release(context.WithoutCancel(ctx), o.ShowtimeID, token, o.UserID, seatIDs)
		switch {
		case ent.IsConstraintError(err): // MySQL has another active order on a seat
			return s.refund(ctx, o, paymentRef)
		case errors.Is(err, errChanged):
			return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "the order changed meanwhile, try again")
		}
		return nil, fmt.Errorf("pay order late: %w", err)
	}
	return s.afterPaid(ctx, o.ID, o.ShowtimeID, token)
}

// stillShowing refuses payments for a showtime that was cancelled: its seats are not for
// sale any more, whatever the order's state.
func (s *Service) stillShowing(ctx context.Context, showID int) error {
	st, err := s.DB.Showtime.Query().Where(showtime.ID(showID)).Select(showtime.FieldStatus).Only(ctx)
	if err != nil {
		return fmt.Errorf("pay order: load showtime: %w", err)
	}
	if st.Status == showtime.StatusCANCELLED {
		return seatflow.Errorf(seatflow.EINVALIDSTATE, "the showtime was cancelled; the order cannot be paid")
	}
	return nil
}

// refund ends an order whose seats went to someone else while its payment was on the way.
func (s *Service) refund(ctx context.Context, o *ent.Order, paymentRef string) (*Order, error) {
	if o.Status == order.StatusPENDING_PAYMENT {
		if _, err := s.finish(ctx, o, order.StatusEXPIRED); err != nil {
			return nil, err
		}
	}
	n, err := s.DB.Order.Update().Where(order.ID(o.ID), order.StatusEQ(order.StatusEXPIRED)).
		SetRefundRequired(true).SetPaymentRef(paymentRef).Save(ctx)
	if err != nil {
		return nil, fmt.Errorf("mark refund required: %w", err)
	}
	if n == 0 { // paid by a concurrent retry of the same payment
		if p, err := s.reload(ctx, o.ID); err == nil && p.Status == OrderPaid {
			return p, nil
		}
	}
	return nil, expiredErr()
}

// CancelOrder cancels a pending order and frees its seats. A paid order cannot be
// cancelled by the customer (INVALID_STATE): refunds are handled by staff, and its seats
// stay sold until then. Cancelling an order that is no longer pending is INVALID_STATE.
func (s *Service) CancelOrder(ctx context.Context, userID string, orderID int) (*Order, error) {
	if err := s.rateLimit(ctx, "order", userID, s.OrderRate); err != nil {
		return nil, err
	}
	o, err := s.own(ctx, userID, orderID)
	if err != nil {
		return nil, err
	}
	if o.Status != order.StatusPENDING_PAYMENT {
		return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "the order is %s and cannot be cancelled", o.Status)
	}
	done, err := s.finish(ctx, o, order.StatusCANCELLED)
	if err != nil {
		return nil, err
	}
	if !done {
		o, err := s.own(ctx, userID, orderID)
		if err != nil {
			return nil, err
		}
		return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "the order is %s and cannot be cancelled", o.Status)
	}
	return s.reload(ctx, orderID)
}

// Expire ends a pending order whose hold has run out (status EXPIRED) and frees its seats.
// It reports false when the order is not pending or not yet due (it was paid, cancelled
// or extended meanwhile). The expiry worker and the reconciler call it.
func (s *Service) Expire(ctx context.Context, orderID int) (bool, error) {
	o, err := s.DB.Order.Get(ctx, orderID)
	if ent.IsNotFound(err) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("expire order: %w", err)
	}
	if o.Status != order.StatusPENDING_PAYMENT || o.ExpiresAt.After(s.now()) {
		return false, nil
	}
	return s.finish(ctx, o, order.StatusEXPIRED)
}

// finish moves a pending order to CANCELLED or EXPIRED and deletes its occupancy in one
// transaction, then releases its seats. It reports false when the conditional update
// matched nothing. A failed release is left to the reconciler's orphan-hold repair: the
// order's end is already committed.
func (s *Service) finish(ctx context.Context, o *ent.Order, to order.Status) (bool, error) {
	where := []predicate.Order{order.ID(o.ID), order.StatusEQ(order.StatusPENDING_PAYMENT), order.HoldToken(o.HoldToken)}
	if to == order.StatusEXPIRED {
		where = append(where, order.ExpiresAtLTE(s.now()))
	}
	err := s.withTx(ctx, func(tx *ent.Tx) error {
		n, err := tx.Order.Update().Where(where...).SetStatus(to).Save(ctx)
		if err != nil {
			return fmt.Errorf("mark %s: %w", to, err)
		}
		if n == 0 {
			return errChanged
		}
		if _, err := tx.SeatOccupancy.Delete().Where(seatoccupancy.OrderID(o.ID)).Exec(ctx); err != nil {
			return fmt.Errorf("delete occupancy: %w", err)
		}
		return nil
	})
	if errors.Is(err, errChanged) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("end order: %w", err)
	}
	ctx = context.WithoutCancel(ctx)
	if ids, err := s.seatIDs(ctx, o.ID); err == nil {
		_, _ = s.Seats.Release(ctx, o.ShowtimeID, o.HoldToken, o.UserID, ids)
	}
	_ = s.RDB.ZRem(ctx, s.Keys.OrdersExpiry(), strconv.Itoa(o.ID)).Err()
	return true, nil
}
