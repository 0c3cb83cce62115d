package database

import (
	"context"
	"database/sql"
	"fmt"
)

// The purchase counts of a database from before purchase_counts existed, one row per
// customer and showtime: the customer's seat_occupancies rows for the showtime (the rule
// of internal/booking/limit.go). The WHERE is SQLite's: an upsert after a SELECT with a
// join needs one, or ON CONFLICT would read as the join's ON.
const (
	fillPurchaseCounts = `INSERT INTO purchase_counts (user_id, showtime_id, seats)
		SELECT o.user_id, so.showtime_id, COUNT(*) FROM seat_occupancies so JOIN orders o ON o.id = so.order_id
		WHERE 1 = 1 GROUP BY o.user_id, so.showtime_id `
	fillPurchaseCountsMySQL  = fillPurchaseCounts + `ON DUPLICATE KEY UPDATE seats = VALUES(seats)`
	fillPurchaseCountsSQLite = fillPurchaseCounts + `ON CONFLICT (user_id, showtime_id) DO UPDATE SET seats = excluded.seats`
)

// purchaseCounts fills purchase_counts from the occupancy when the database comes from
// before the rows existed: then every hold's transaction would start its customer's count
// from 0, and a customer holding seats from before could pass the purchase limit until the
// reconciler's sweep recounted them. The migration runs before an instance serves, so an
// upgraded database has its counts before its first hold.
//
// A database from before has occupancy rows and no purchase_counts row at all: since
// then, the transaction that inserts occupancy rows writes its customer's row too, and no
// row is ever deleted (a count that falls to 0 keeps its row). The occupancy is looked at
// first, so occupancy written since by a newer instance (with its rows) cannot pass for
// old. Idempotent: once filled, the table is never empty again, and a count that drifts
// later is the reconciler's (internal/reconcile/counts.go). The fill sets each count to
// its occupancy, also where a newer instance made the row meanwhile: on MySQL, in
// REPEATABLE READ, INSERT … SELECT reads the occupancy with locks (the latest committed
// rows, waiting for a hold that has written some), so a hold is either in the fill's count
// or adds its seats to it afterwards.
func purchaseCounts(ctx context.Context, db *sql.DB, isMySQL bool) error {
	var occupied, counted bool
	err := db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM seat_occupancies)").Scan(&occupied)
	if err == nil && occupied {
		err = db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM purchase_counts)").Scan(&counted)
	}
	if err != nil {
		return fmt.Errorf("migrate: purchase counts: %w", err)
	}
	if !occupied || counted {
		return nil
	}
	fill := fillPurchaseCountsSQLite
	if isMySQL {
		fill = fillPurchaseCountsMySQL
	}
	if _, err := db.ExecContext(ctx, fill); err != nil {
		return fmt.Errorf("migrate: fill the purchase counts from the occupancy: %w", err)
	}
	return nil
}
