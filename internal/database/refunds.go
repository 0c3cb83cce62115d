package database

import (
	"context"
	"database/sql"
	"fmt"
)

// wholeRefunds copies the whole refunds of a database from before they were refunds rows:
// then a payment's whole refund was its payments row's refund_status, refund_reference,
// refund_attempts and refund_reason. Each payment with a refund status and no whole row
// gets its refunds row (whole) with those, its amount what the payment's refunds of some
// seats left of it (as internal/booking's requireRefund writes it), created_by empty, and
// the payment's updated_at as its times (when the refund last changed, so the reconciler
// sends a due one again after the same grace). The payments' columns stay as they were
// and are read no more. Idempotent: a payment with its whole row is skipped.
const fillWholeRefunds = `INSERT INTO refunds (order_id, payment_id, amount_cents, currency, status, reference, attempts,
		reason, created_by, whole, created_at, updated_at)
	SELECT p.order_id, p.id,
		CASE WHEN p.amount_cents > COALESCE(s.parts, 0) THEN p.amount_cents - COALESCE(s.parts, 0) ELSE 0 END,
		p.currency, p.refund_status, p.refund_reference, p.refund_attempts, p.refund_reason, '', TRUE, p.updated_at, p.updated_at
	FROM payments p LEFT JOIN (SELECT r.payment_id AS payment_id, SUM(r.amount_cents) AS parts FROM refunds r
		WHERE NOT r.whole GROUP BY r.payment_id) s ON s.payment_id = p.id
	WHERE p.refund_status IS NOT NULL
		AND NOT EXISTS (SELECT 1 FROM refunds r WHERE r.payment_id = p.id AND r.whole)`

// wholeRefunds runs fillWholeRefunds.
func wholeRefunds(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, fillWholeRefunds); err != nil {
		return fmt.Errorf("migrate: copy the payments' refunds to refunds rows: %w", err)
	}
	return nil
}
