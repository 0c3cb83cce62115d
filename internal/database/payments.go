package database

import (
	"context"
	"database/sql"
	"fmt"
)

// dropOnePaymentPerOrder removes the unique index on payments.order_id that the schema of
// one payment per order made: an order keeps every payment it receives now. ent's
// migration leaves a column's own unique index in place when the column stops being
// unique, so this drops it by the name it was given (MySQL/MariaDB: the column's name;
// SQLite: payments_order_id_key). It runs after the schema migration, which has made the
// unique (order_id, provider, reference) index that then serves the foreign key to
// orders. Idempotent: without the old index it does nothing.
func dropOnePaymentPerOrder(ctx context.Context, db *sql.DB, mysql bool) error {
	var n int
	var find, drop string
	if mysql {
		find = `SELECT COUNT(*) FROM information_schema.STATISTICS
			WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'payments' AND INDEX_NAME = 'order_id'`
		drop = "ALTER TABLE `payments` DROP INDEX `order_id`"
	} else {
		find = `SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'payments_order_id_key'`
		drop = "DROP INDEX `payments_order_id_key`"
	}
	if err := db.QueryRowContext(ctx, find).Scan(&n); err != nil {
		return fmt.Errorf("migrate: find the index of one payment per order: %w", err)
	}
	if n == 0 {
		return nil
	}
	if _, err := db.ExecContext(ctx, drop); err != nil {
		return fmt.Errorf("migrate: drop the index of one payment per order: %w", err)
	}
	return nil
}
