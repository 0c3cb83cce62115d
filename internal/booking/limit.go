package booking

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/order"
	"seatflow/ent/orderseat"
	"seatflow/internal/database"
)

// The purchase limit is checked twice. The hold script checks the user's count in Redis
// (the limits hash), which refuses the common case before anything is written; but that
// count is only as good as Redis: a seat hash rebuilt while a hold was between Redis and
// MySQL misses it, and a Redis that came back empty starts every count again from what
// MySQL had committed. So the hold's own transaction counts the user's seats again in
// MySQL, after writing the new order's rows, and refuses the hold when they pass the limit.
//
// The count is a locking read (MySQL/MariaDB: FOR UPDATE over the orders index on
// user_id, showtime_id): two holds of one user for one showtime that are in their
// transactions at once wait on each other's new order row; InnoDB ends one of them as a
// deadlock, and that one runs its transaction again and counts the other's committed
// seats. A hold's transaction runs in READ COMMITTED, where a locking read locks only the
// rows it matches, not the gaps beside them: in REPEATABLE READ the gap locks made holds
// of different users deadlock with each other (64 of a 5-second run of 16 buyers in the
// holdSeats bench answered SERVICE_UNAVAILABLE). So holds of different users, or of one
// user for different showtimes, lock nothing in common. The embedded SQLite runs one
// transaction at a time (Config.SingleWriter), so a plain count, in its default
// isolation, is the same guarantee there.

// maxLimitRetries is how often a hold's transaction runs again after MySQL ended it as a
// deadlock with a concurrent hold of the same user and showtime; then the hold answers
// SERVICE_UNAVAILABLE (nothing of it stays). One customer's holds racing each other are
// a double click or a script: a few retries settle the first, the rest may try again.
const maxLimitRetries = 5

// limitQuery counts the seats of a user's active orders for a showtime, the new order's
// included, less the seats refunded (no longer the user's); lockingLimitQuery is the same
// on MySQL, reading the orders through their (user_id, showtime_id) index first, then
// their lines through the (order_id, seat_id) index, and locking what it reads. Both
// indexes and the join order are forced: a plan that reached the orders through another
// index (the showtime's, say), or the lines by scanning the table (MariaDB chose that for
// a small table once the count read refunded_at, which the index does not hold), would
// lock, for a moment, the rows of other buyers, and the racing holds of different buyers
// would deadlock (3 of 1,500 a second in the holdSeats bench's loop). ent's builder is not
// used: it cannot join without an edge predicate's subquery, and MySQL does not lock the
// rows a subquery reads.
var (
	limitWhere = fmt.Sprintf("s.%s = o.%s WHERE o.%s = ? AND o.%s = ? AND o.%s IN (?, ?) AND s.%s IS NULL",
		orderseat.FieldOrderID, order.FieldID, order.FieldUserID, order.FieldShowtimeID, order.FieldStatus, orderseat.FieldRefundedAt)
	limitQuery        = fmt.Sprintf("SELECT COUNT(*) FROM %s o JOIN %s s ON %s", order.Table, orderseat.Table, limitWhere)
	lockingLimitQuery = fmt.Sprintf("SELECT COUNT(*) FROM %s o FORCE INDEX (%s) STRAIGHT_JOIN %s s FORCE INDEX (%s) ON %s FOR UPDATE",
		order.Table, limitIndex, orderseat.Table, linesIndex, limitWhere)
)

// limitIndex and linesIndex are the names ent's migration gives the orders index on
// (user_id, showtime_id) and the order_seats index on (order_id, seat_id)
// (ent/schema/order.go).
const (
	limitIndex = "order_user_id_showtime_id"
	linesIndex = "orderseat_order_id_seat_id"
)

// seatsOfUser is the number of seats the user's active orders hold or bought for the
// showtime, read inside tx (locking, unless the database runs one writer).
func (s *Service) seatsOfUser(ctx context.Context, tx *ent.Tx, userID string, showID int) (int, error) {
	return SeatsOfUser(ctx, tx, userID, showID, !s.SingleWriter)
}

// SeatsOfUser is the count a hold's transaction makes of the user's seats for the
// showtime, the new order's included: locking on MySQL (lock), plain on SQLite. Exported
// for the holdSeats bench, whose baseline commits what a hold commits.
func SeatsOfUser(ctx context.Context, tx *ent.Tx, userID string, showID int, lock bool) (int, error) {
	q := limitQuery
	if lock {
		q = lockingLimitQuery
	}
	rows, err := tx.QueryContext(ctx, q, userID, showID, string(seatflow.OrderPending), string(seatflow.OrderPaid))
	if err != nil {
		return 0, fmt.Errorf("count the user's seats: %w", err)
	}
	defer rows.Close()
	n := 0
	if rows.Next() {
		if err := rows.Scan(&n); err != nil {
			return 0, fmt.Errorf("count the user's seats: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("count the user's seats: %w", err)
	}
	return n, nil
}

// limitExceeded is the refusal of a hold whose transaction found the user over the limit
// in MySQL; had is what the user held or bought before this hold.
type limitExceeded struct {
	err *seatflow.Error
	had int
}

func (e *limitExceeded) Error() string { return e.err.Error() }
func (e *limitExceeded) Unwrap() error { return e.err }

// checkLimit refuses the hold in tx when the user's seats, the new ones included, pass
// the showtime's limit (0 is no limit).
func (s *Service) checkLimit(ctx context.Context, tx *ent.Tx, userID string, st *seatflow.Showtime, fresh int) error {
	if st.PurchaseLimit <= 0 {
		return nil
	}
	n, err := s.seatsOfUser(ctx, tx, userID, st.ID)
	if err != nil {
		return err
	}
	if n <= st.PurchaseLimit {
		return nil
	}
	return &limitExceeded{had: n - fresh,
		err: seatflow.Errorf(seatflow.ELIMIT, "at most %d seats per customer for this showtime (you have %d)", st.PurchaseLimit, n-fresh)}
}

// LimitTx are the options of a transaction that counts the purchase limit on MySQL:
// READ COMMITTED (see above).
var LimitTx = sql.TxOptions{Isolation: sql.LevelReadCommitted}

// limitTx are the options of a transaction that counts the purchase limit: LimitTx on
// MySQL, the defaults on SQLite.
func (s *Service) limitTx() *sql.TxOptions {
	if s.SingleWriter {
		return nil
	}
	return &LimitTx
}

// retryDeadlock runs a hold's transaction again when MySQL ended it as a deadlock (see
// above), at most maxLimitRetries times, after a random pause that grows with each try so
// the racing holds stop meeting.
func (s *Service) retryDeadlock(ctx context.Context, fn func(tx *ent.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := s.inTx(ctx, s.limitTx(), fn)
		if err == nil || attempt > maxLimitRetries || !database.Deadlock(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(1+rand.IntN(4*attempt)) * time.Millisecond):
		}
	}
}

// correctCount writes the user's MySQL count into the limits hash after a hold that
// Redis let through was refused by MySQL, so the next hold is refused in Redis (unless a
// hold or release changed the count meanwhile: the reconciler's recount then does it).
func (s *Service) correctCount(ctx context.Context, showID int, userID string, le *limitExceeded) {
	cur, err := s.Seats.Count(ctx, showID, userID)
	if err == nil && cur < le.had {
		_, err = s.Seats.Recount(ctx, showID, userID, cur, le.had)
	}
	if err != nil {
		s.Log.WarnContext(ctx, "booking: the limits hash was behind MySQL and could not be corrected; the reconciler will",
			"showtime", showID, "user", userID, "err", err)
	}
}
