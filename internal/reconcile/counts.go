package reconcile

import (
	"context"
	"fmt"

	"seatflow/ent"
	"seatflow/ent/order"
	"seatflow/ent/purchasecount"
	"seatflow/ent/seatoccupancy"
	"seatflow/internal/database"
)

// recountPurchases is repair 9, the purchase counts in MySQL: a customer's purchase_counts
// row for a showtime must equal their seat_occupancies rows for it, the rule the purchase
// limit is checked by (internal/booking/limit.go). Holds, cancels, expiries and refunds
// keep the two in one transaction, so nothing SeatFlow does today sets them apart; a row
// drifts by a manual change, a bug, or a database from before the rows existed whose
// migration did not fill them (internal/database/purchasecounts.go fills them). A first
// look without locks finds the customers whose row differs from their occupancy; each is
// then recounted under its row's lock (recountPurchase). A row left with no
// occupancy is set to 0, not deleted: cancels and refunds leave their rows at 0 too, and
// the next hold of the customer locks the row instead of inserting one.
func (x *run) recountPurchases(ctx context.Context, showID int) error {
	drifted, err := x.driftedPurchases(ctx, showID)
	if err != nil {
		return err
	}
	for _, userID := range drifted {
		if x.take(kindPurchaseCounts, 1) == 0 {
			return nil
		}
		fixed, err := x.recountPurchase(ctx, showID, userID)
		switch {
		case database.Deadlock(err):
			x.c.Log.Warn("reconcile: a purchase count's recount ended as a deadlock, left for the next run",
				"showtime", showID, "user", userID)
			x.left[kindPurchaseCounts]++
		case err != nil:
			return err
		case fixed:
			x.done(kindPurchaseCounts, 1, showID)
		default: // right by the time its lock was taken (not while runs take turns): nothing written
			x.left[kindPurchaseCounts]++
		}
	}
	return nil
}

// driftedPurchases returns, in order, the customers whose purchase count for the showtime
// differs from their occupancy rows. The rows and the occupancy are read without locks in
// one transaction, so from one snapshot: every transaction that changes a customer's
// occupancy changes their row by as much, so a difference in a snapshot is drift, and
// stays until a recount (the reconcile lock lets one run at a time).
func (x *run) driftedPurchases(ctx context.Context, showID int) ([]string, error) {
	tx, err := x.r.DB.Tx(ctx)
	if err != nil {
		return nil, fmt.Errorf("purchase counts: begin: %w", err)
	}
	defer tx.Rollback() // it read only: nothing to commit
	rows, err := tx.PurchaseCount.Query().Where(purchasecount.ShowtimeID(showID)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("purchase counts: %w", err)
	}
	occupancy, err := tx.SeatOccupancy.Query().Where(seatoccupancy.ShowtimeID(showID)).
		WithOrder(func(q *ent.OrderQuery) { q.Select(order.FieldUserID) }).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("occupancy: %w", err)
	}
	counted := map[string]int{} // the rows; a missing row counts 0
	for _, r := range rows {
		counted[r.UserID] = r.Seats
	}
	occupied := map[string]int{}
	for _, o := range occupancy {
		occupied[o.Edges.Order.UserID]++
		if _, ok := counted[o.Edges.Order.UserID]; !ok {
			counted[o.Edges.Order.UserID] = 0
		}
	}
	var drifted []string
	for _, u := range sortedKeys(counted) {
		if counted[u] != occupied[u] {
			drifted = append(drifted, u)
		}
	}
	return drifted, nil
}

// recountPurchase sets the customer's purchase count for the showtime to the number of
// their occupancy rows, in one transaction of three steps, and reports whether it was off:
//
//  1. Lock the counter row, inserting it with 0 seats when it is missing: one upsert, as a
//     hold's own statement on the row (a locking read of a missing row locks a gap, and
//     two transactions that each locked the gap and then inserted the row would deadlock).
//  2. Read the row and count the customer's occupancy rows for the showtime, with plain
//     reads made after the lock is held.
//  3. Write the count when it differs (nothing is written otherwise: the transaction is
//     rolled back, and a row the lock inserted goes with it).
//
// Why a hold, cancel or refund of the same customer racing the recount is neither counted
// twice nor lost: every transaction that inserts or deletes the customer's occupancy rows
// for the showtime also writes this row, after its occupancy statements and before its
// commit (booking's occupy and vacate). On MySQL/MariaDB, in REPEATABLE READ, such a
// transaction T is either
//   - committed before the recount holds the lock: the plain reads of step 2 see T's
//     occupancy rows and T's count (InnoDB takes a transaction's read view at its first
//     plain read, not at its BEGIN, and step 1's locking statement is not one, as a
//     session on MariaDB 10.11 shows; the reads come after the lock was granted, so after
//     T's commit), and the recount writes a
//     count that includes T once; or
//   - not yet at its row: it writes the row only after the recount commits, since the
//     recount holds the row's lock. Its occupancy changes are uncommitted and not in the
//     recount's reads, and its own statement on the row then adds or takes off its seats
//     from the recounted value (a locking write reads the latest committed row): counted
//     once, after.
//
// T cannot be anywhere between: holding the row's lock it would make step 1 wait for its
// commit. So the recount must not read anything before step 1 (a plain read would take the
// read view too early and miss T's commit), and its rows must not be read by a separate
// transaction. In READ COMMITTED (a deployment's setting) each read sees what committed
// before it began, after the lock: the same holds. The embedded SQLite runs one transaction
// at a time (one connection, Config.SingleWriter of booking): nothing commits while the
// recount runs, which makes it right without any lock.
func (x *run) recountPurchase(ctx context.Context, showID int, userID string) (bool, error) {
	tx, err := x.r.DB.Tx(ctx)
	if err != nil {
		return false, fmt.Errorf("recount purchases: begin: %w", err)
	}
	fixed, err := recountIn(ctx, tx, showID, userID)
	if err != nil || !fixed {
		_ = tx.Rollback()
		return false, err
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("recount purchases: commit: %w", err)
	}
	return true, nil
}

// recountIn is recountPurchase's three steps inside tx.
func recountIn(ctx context.Context, tx *ent.Tx, showID int, userID string) (bool, error) {
	err := tx.PurchaseCount.Create().SetUserID(userID).SetShowtimeID(showID).SetSeats(0).
		OnConflictColumns(purchasecount.FieldUserID, purchasecount.FieldShowtimeID).Ignore().Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("recount purchases: lock the count: %w", err)
	}
	row, err := tx.PurchaseCount.Query().Where(purchasecount.UserID(userID), purchasecount.ShowtimeID(showID)).Only(ctx)
	if err != nil {
		return false, fmt.Errorf("recount purchases: read the count: %w", err)
	}
	occupied, err := tx.SeatOccupancy.Query().Where(seatoccupancy.ShowtimeID(showID),
		seatoccupancy.HasOrderWith(order.UserID(userID), order.ShowtimeID(showID))).Count(ctx)
	if err != nil {
		return false, fmt.Errorf("recount purchases: count the occupancy: %w", err)
	}
	if row.Seats == occupied {
		return false, nil
	}
	if err := tx.PurchaseCount.Update().Where(purchasecount.ID(row.ID)).SetSeats(occupied).Exec(ctx); err != nil {
		return false, fmt.Errorf("recount purchases: write the count: %w", err)
	}
	return true, nil
}
