package database_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/payment"
	"seatflow/internal/database"
	"seatflow/internal/tooling/testenv"
)

// oldPayments is the payments table as the schema of one payment per order made it on
// MariaDB (SHOW CREATE TABLE after that schema's migration): order_id unique, and the
// foreign key of the edge Order.payment.
const oldPayments = "CREATE TABLE `payments` (" +
	"`id` bigint(20) NOT NULL AUTO_INCREMENT, `provider` varchar(16) NOT NULL, `reference` varchar(255) NOT NULL," +
	"`status` enum('PENDING','SUCCEEDED','FAILED','CANCELED','MISMATCH') NOT NULL," +
	"`amount_cents` bigint(20) NOT NULL, `currency` varchar(3) NOT NULL," +
	"`refund_status` enum('REQUIRED','PENDING','SUCCEEDED','FAILED') DEFAULT NULL," +
	"`refund_reference` varchar(255) NOT NULL DEFAULT '', `refund_attempts` bigint(20) NOT NULL DEFAULT 0," +
	"`refund_reason` varchar(255) NOT NULL DEFAULT '', `created_at` datetime(6) NOT NULL, `updated_at` datetime(6) NOT NULL," +
	"`order_id` bigint(20) NOT NULL, PRIMARY KEY (`id`), UNIQUE KEY `order_id` (`order_id`)," +
	"KEY `payment_provider_reference` (`provider`,`reference`), KEY `payment_refund_status_updated_at` (`refund_status`,`updated_at`)," +
	"CONSTRAINT `payments_orders_payment` FOREIGN KEY (`order_id`) REFERENCES `orders` (`id`) ON DELETE NO ACTION" +
	") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"

// oldPaymentsSQLite is the same table as that schema made it on SQLite (embedded mode).
var oldPaymentsSQLite = []string{"CREATE TABLE `payments` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, " +
	"`provider` text NOT NULL, `reference` text NOT NULL, `status` text NOT NULL, `amount_cents` integer NOT NULL, " +
	"`currency` text NOT NULL, `refund_status` text NULL, `refund_reference` text NOT NULL DEFAULT (''), " +
	"`refund_attempts` integer NOT NULL DEFAULT (0), `refund_reason` text NOT NULL DEFAULT (''), " +
	"`created_at` datetime NOT NULL, `updated_at` datetime NOT NULL, `order_id` integer NOT NULL, " +
	"CONSTRAINT `payments_orders_payment` FOREIGN KEY (`order_id`) REFERENCES `orders` (`id`) ON DELETE NO ACTION)",
	"CREATE UNIQUE INDEX `payments_order_id_key` ON `payments` (`order_id`)",
	"CREATE INDEX `payment_provider_reference` ON `payments` (`provider`, `reference`)",
	"CREATE INDEX `payment_refund_status_updated_at` ON `payments` (`refund_status`, `updated_at`)"}

// TestMigrationKeepsEveryPaymentOfAnOrder upgrades a database from the schema of one
// payment per order (order_id unique) holding a paid order and its payment, on MariaDB and
// on SQLite: after the migration (twice) the payment is still there, the order takes a
// second payment, the same payment of an order cannot be recorded twice, and a payment
// still needs its order.
func TestMigrationKeepsEveryPaymentOfAnOrder(t *testing.T) {
	t.Run("MySQL", func(t *testing.T) {
		db := testenv.MySQL(t)
		upgradeOnePaymentPerOrder(t, db.Client, db.SQL, []string{oldPayments})
	})
	t.Run("SQLite", func(t *testing.T) {
		client, db, err := database.OpenSQLite(filepath.Join(t.TempDir(), "seatflow.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		if err := database.Migrate(context.Background(), client, db); err != nil {
			t.Fatal(err)
		}
		upgradeOnePaymentPerOrder(t, client, db, oldPaymentsSQLite)
	})
}

func upgradeOnePaymentPerOrder(t *testing.T, client *ent.Client, db *sql.DB, oldTable []string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := time.Now().UTC().Truncate(time.Second)
	showID, _ := testenv.Showtime(t, client, now, testenv.ShowtimeSpec{Rows: 1, PerRow: 2})
	o := client.Order.Create().SetUserID("u1").SetShowtimeID(showID).SetHoldToken("tok1").
		SetIdempotencyKey("k1").SetStatus(seatflow.OrderPaid).SetAmountCents(2000).SetPaymentRef("pi_1").
		SetExpiresAt(now.Add(time.Minute)).SetCreatedAt(now).SaveX(ctx)
	stmts := append([]string{"DROP TABLE payments"}, oldTable...)
	for _, stmt := range stmts {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%.40s: %v", stmt, err)
		}
	}
	add := func(orderID int, ref string) error {
		return client.Payment.Create().SetOrderID(orderID).SetProvider("stripe").SetReference(ref).
			SetStatus(seatflow.PaymentSucceeded).SetAmountCents(2000).SetCurrency("USD").
			SetCreatedAt(now).SetUpdatedAt(now).Exec(ctx)
	}
	if err := add(o.ID, "pi_1"); err != nil {
		t.Fatal(err)
	}
	if err := add(o.ID, "pi_2"); !ent.IsConstraintError(err) {
		t.Fatalf("the old schema took a second payment of an order (%v): the test does not start from it", err)
	}

	for round := range 2 {
		if err := database.Migrate(ctx, client, db); err != nil {
			t.Fatalf("migration %d: %v", round+1, err)
		}
	}
	ps := client.Payment.Query().Where(payment.OrderID(o.ID)).AllX(ctx)
	if len(ps) != 1 || ps[0].Reference != "pi_1" || ps[0].Status != seatflow.PaymentSucceeded {
		t.Fatalf("payments after the migration: %+v, want the one from before", ps)
	}
	if err := add(o.ID, "pi_2"); err != nil {
		t.Fatalf("a second payment of the order: %v", err)
	}
	if err := add(o.ID, "pi_2"); !ent.IsConstraintError(err) {
		t.Fatalf("the same payment of the order recorded twice: %v", err)
	}
	if err := add(o.ID+1000, "pi_3"); !ent.IsConstraintError(err) {
		t.Fatalf("a payment of no order: %v", err)
	}
	if n := client.Order.GetX(ctx, o.ID).QueryPayments().CountX(ctx); n != 2 {
		t.Fatalf("the order has %d payments, want 2", n)
	}
}
