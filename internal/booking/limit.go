package booking

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/purchasecount"
	"seatflow/ent/seatoccupancy"
	"seatflow/ent/showtime"
	"seatflow/internal/database"
)

// The purchase limit is checked twice. The hold script checks the user's count in Redis
// (the limits hash), which refuses the common case before anything is written; but that
// count is only as good as Redis: a seat hash rebuilt while a hold was between Redis and
// MySQL misses it, and a Redis that came back empty starts every count again from what
// MySQL had committed. So the hold's own transaction counts the user's seats again in
// MySQL and refuses the hold when they pass the limit.
//
// MySQL keeps that count in a row per customer and showtime (purchase_counts), which
// follows one rule: it is the number of the customer's seat_occupancies rows for the
// showtime, the seats of their active orders not refunded. Every transaction that inserts
// occupancy rows adds them to the row (occupy), every one that deletes some takes off the
// rows it deleted (vacate), in the same transaction, so the count is exact whatever order
// the transactions of one customer commit in: a late payment racing its order's expiry
// takes off what the expiry left, not what it read before. The hold reads the count back
// from the statement that adds to it (INSERT … ON DUPLICATE KEY UPDATE seats =
// LAST_INSERT_ID(seats + n)): one statement and one row lock, where counting the
// customer's order lines took a join and the locks of every line it read (holdSeats ran at
// 0.29–0.35 of the plain insert loop in `make bench` with that count). Two holds of one
// customer for one showtime wait for each other's row; holds of different customers lock
// nothing in common. The reconciler recounts the rows from the occupancy
// (reconcile/counts.go). The embedded SQLite runs one transaction at a time
// (Config.SingleWriter) and reads the count back with RETURNING.

// maxLimitRetries is how often a hold's transaction runs again after MySQL ended it as a
// deadlock; then the hold answers SERVICE_UNAVAILABLE (nothing of it stays).
const maxLimitRetries = 5

// The statements adding to a purchase count: from the customer's values, or, for a hold,
// from the showtime's row only while it is ON_SALE (no row added to or inserted
// otherwise); MySQL reads the count back through LAST_INSERT_ID, the embedded SQLite
// through RETURNING.
var (
	countInsert   = fmt.Sprintf("INSERT INTO %s (%s, %s, %s) ", purchasecount.Table, purchasecount.FieldUserID, purchasecount.FieldShowtimeID, purchasecount.FieldSeats)
	countValues   = "VALUES (?, ?, ?)"
	countIfOnSale = fmt.Sprintf("SELECT ?, %s, ? FROM %s WHERE %s = ? AND %s = ?", showtime.FieldID, showtime.Table, showtime.FieldID, showtime.FieldStatus)
	countMySQL    = fmt.Sprintf(" ON DUPLICATE KEY UPDATE %s = LAST_INSERT_ID(%s.%s + ?)", purchasecount.FieldSeats, purchasecount.Table, purchasecount.FieldSeats)
	countSQLite   = fmt.Sprintf(" ON CONFLICT (%s, %s) DO UPDATE SET %s = %s + excluded.%s RETURNING %s", purchasecount.FieldUserID,
		purchasecount.FieldShowtimeID, purchasecount.FieldSeats, purchasecount.FieldSeats, purchasecount.FieldSeats, purchasecount.FieldSeats)
)

// errNotOnSale refuses a hold of a showtime that is not on sale.
var errNotOnSale = seatflow.Errorf(seatflow.ENOTONSALE, "this showtime is not on sale")

// Purchase is seats added to a customer's purchase count for a showtime.
type Purchase struct {
	UserID     string
	ShowtimeID int
	Seats      int
	// OnSale adds them only while MySQL has the showtime ON_SALE (a hold's), else whatever
	// its state (a late payment taking its order's seats again).
	OnSale bool
}

// AddPurchase adds p to the customer's purchase count inside tx and returns the count
// after; a Purchase OnSale of a showtime not on sale adds nothing and is refused
// (NOT_ON_SALE). sqlite: the embedded database's statement. Exported for the holdSeats
// bench, whose baseline commits what a hold commits.
func AddPurchase(ctx context.Context, tx *ent.Tx, p Purchase, sqlite bool) (int, error) {
	q, args := countInsert+countValues, []any{p.UserID, p.ShowtimeID, p.Seats}
	if p.OnSale {
		q, args = countInsert+countIfOnSale, []any{p.UserID, p.Seats, p.ShowtimeID, string(seatflow.ShowtimeOnSale)}
	}
	count, err := addCount(ctx, tx, q, args, p.Seats, sqlite)
	if err != nil {
		return 0, fmt.Errorf("count the user's seats: %w", err)
	}
	if count == 0 { // nothing added: the showtime is not on sale
		return 0, errNotOnSale
	}
	return count, nil
}

// addCount runs the statement adding n seats (q, args: its insert) and returns the count
// after, 0 when it added nothing.
func addCount(ctx context.Context, tx *ent.Tx, q string, args []any, n int, sqlite bool) (int, error) {
	if sqlite {
		rows, err := tx.QueryContext(ctx, q+countSQLite, args...)
		if err != nil {
			return 0, err
		}
		defer rows.Close()
		count := 0
		if rows.Next() {
			err = rows.Scan(&count)
		}
		if err == nil {
			err = rows.Err()
		}
		return count, err
	}
	res, err := tx.ExecContext(ctx, q+countMySQL, append(args, n)...)
	if err != nil {
		return 0, err
	}
	// No row (nothing selected), one row inserted (its count is n), or one row updated (2,
	// its count the statement's LAST_INSERT_ID).
	affected, err := res.RowsAffected()
	if err != nil || affected < 2 {
		return int(affected) * n, err
	}
	count, err := res.LastInsertId()
	return int(count), err
}

// occupy inserts the seat_occupancies rows of o's seats and adds them to the user's
// purchase count, inside tx; it returns the count after. onSale: a hold's, refused
// (NOT_ON_SALE) unless MySQL has the showtime ON_SALE.
func (s *Service) occupy(ctx context.Context, tx *ent.Tx, o *ent.Order, seatIDs []int, onSale bool) (int, error) {
	err := tx.SeatOccupancy.MapCreateBulk(seatIDs, func(c *ent.SeatOccupancyCreate, i int) {
		c.SetShowtimeID(o.ShowtimeID).SetSeatID(seatIDs[i]).SetOrderID(o.ID)
	}).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("create seat occupancy: %w", err)
	}
	return AddPurchase(ctx, tx, Purchase{UserID: o.UserID, ShowtimeID: o.ShowtimeID, Seats: len(seatIDs), OnSale: onSale}, s.SingleWriter)
}

// vacate deletes o's seat_occupancies rows, those of seatIDs or all of them (nil), and
// takes the rows it deleted off the user's purchase count, inside tx: the order no
// longer holds those seats.
func (s *Service) vacate(ctx context.Context, tx *ent.Tx, o *ent.Order, seatIDs []int) error {
	del := tx.SeatOccupancy.Delete().Where(seatoccupancy.OrderID(o.ID))
	if seatIDs != nil {
		del.Where(seatoccupancy.SeatIDIn(seatIDs...))
	}
	n, err := del.Exec(ctx)
	if err != nil {
		return fmt.Errorf("delete occupancy: %w", err)
	}
	if n == 0 {
		return nil
	}
	_, err = tx.PurchaseCount.Update().Where(purchasecount.UserID(o.UserID), purchasecount.ShowtimeID(o.ShowtimeID)).
		AddSeats(-n).Save(ctx)
	if err != nil {
		return fmt.Errorf("count the user's seats: %w", err)
	}
	return nil
}

// limitExceeded is the refusal of a hold whose transaction found the user over the limit
// in MySQL; had is what the user held or bought before this hold.
type limitExceeded struct {
	err *seatflow.Error
	had int
}

func (e *limitExceeded) Error() string { return e.err.Error() }
func (e *limitExceeded) Unwrap() error { return e.err }

// checkLimit refuses a hold of fresh seats that took the user's purchase count to count,
// when that passes the showtime's limit (0 is no limit).
func checkLimit(st *seatflow.Showtime, count, fresh int) error {
	if st.PurchaseLimit <= 0 || count <= st.PurchaseLimit {
		return nil
	}
	return &limitExceeded{had: count - fresh,
		err: seatflow.Errorf(seatflow.ELIMIT, "at most %d seats per customer for this showtime (you have %d)", st.PurchaseLimit, count-fresh)}
}

// retryDeadlock runs a hold's (or an order's end's) transaction again when MySQL ended it as a deadlock, at
// most maxLimitRetries times, after a random pause that grows with each try so the racing
// holds stop meeting.
func (s *Service) retryDeadlock(ctx context.Context, fn func(tx *ent.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := s.withTx(ctx, fn)
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
