// Package database opens SeatFlow's ent client on MySQL/MariaDB or on SQLite (embedded
// mode) and runs the schema migration. It owns connection set-up (with a span per
// statement and per transaction when traces are recorded), nothing else.
package database

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"entgo.io/ent/dialect/sql/schema"
	"github.com/go-sql-driver/mysql"
	_ "modernc.org/sqlite" // pure-Go SQLite driver, registered as "sqlite"

	"seatflow/ent"
)

// DefaultMaxConns is the connection pool size of one instance: several instances share one
// MySQL, whose max_connections (151 by default) must cover them all.
const DefaultMaxConns = 20

// OpenMySQL opens an ent client on a MySQL/MariaDB DSN (parseTime is forced on) with a
// pool of DefaultMaxConns connections; SetMaxOpenConns on the returned *sql.DB changes it.
//
// Statements with arguments are sent with their arguments in (interpolateParams, unless
// the DSN says otherwise): without it the driver prepares each one on the server, runs it
// and closes it, two round trips and a third packet where one does. Every statement of
// ent has arguments, so a hold or a payment made twice the round trips it needs; under a
// slow network (the fault suite's 200 ms) that was what kept a staff refund past its
// deadline. In a CPU profile of a hold and its cancel, preparing and closing statements
// were 15 % of the CPU; with the arguments in, a hold and a cancel took 26 % less time
// (BenchmarkTracingCostHold in internal/app).
func OpenMySQL(dsn string, opts ...ent.Option) (*ent.Client, *sql.DB, error) {
	dsn = withParam(dsn, "parseTime", "true")
	dsn = withParam(dsn, "loc", "UTC")
	if !strings.Contains(dsn, "interpolateParams=") {
		dsn = withParam(dsn, "interpolateParams", "true")
	}
	db, err := sqlOpen("mysql", dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("open mysql: %w", err)
	}
	db.SetMaxOpenConns(DefaultMaxConns)
	db.SetMaxIdleConns(DefaultMaxConns)
	db.SetConnMaxLifetime(30 * time.Minute)
	return open(dialect.MySQL, db, opts), db, nil
}

// OpenSQLite opens an ent client on a SQLite file (or "file:NAME?mode=memory&cache=shared").
func OpenSQLite(path string, opts ...ent.Option) (*ent.Client, *sql.DB, error) {
	dsn := path
	if !strings.HasPrefix(dsn, "file:") {
		dsn = "file:" + dsn
	}
	for _, p := range []string{"foreign_keys(1)", "busy_timeout(10000)", "journal_mode(WAL)", "synchronous(NORMAL)"} {
		dsn = withParam(dsn, "_pragma", p)
	}
	db, err := sqlOpen("sqlite", dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("open sqlite: %w", err)
	}
	// SQLite allows one writer; a single connection turns lock errors into queueing.
	db.SetMaxOpenConns(1)
	return open(dialect.SQLite, db, opts), db, nil
}

func open(name string, db *sql.DB, opts []ent.Option) *ent.Client {
	return ent.NewClient(append([]ent.Option{ent.Driver(traced(entsql.OpenDB(name, db)))}, opts...)...)
}

// MigrationLockWait is how long Migrate waits for another instance's migration of the same
// database to finish before it gives up.
const MigrationLockWait = 2 * time.Minute

// migrateMu lets one migration at a time run in a process: ent's migration works on the
// package-level table definitions of ent/migrate.
var migrateMu sync.Mutex

// Migrate creates or alters the tables to match the ent schema. It is idempotent, and safe
// when several instances start together on one database: on MySQL/MariaDB it runs under a
// named lock (GET_LOCK) held on a connection of db, so the second instance waits and then
// finds the schema up to date instead of failing on "table already exists". SQLite
// (embedded mode, one process) needs no lock. Halls of a database from before cinemas
// existed join the default cinema (def, at most one: assignDefaultCinema), and the index
// of one payment per order goes (dropOnePaymentPerOrder); prices from before ticket types
// become ADULT prices and the seats of orders from then get their amounts (prices.go); the
// purchase counts of a database from before them are filled from the occupancy
// (purchasecounts.go); payments' whole refunds become refunds rows (refunds.go).
func Migrate(ctx context.Context, client *ent.Client, db *sql.DB, def ...DefaultCinema) error {
	migrateMu.Lock()
	defer migrateMu.Unlock()
	_, traced := tracedMySQL.Load(db)
	_, isMySQL := db.Driver().(*mysql.MySQLDriver)
	isMySQL = isMySQL || traced
	if isMySQL {
		release, err := lockMigration(ctx, db, MigrationLockWait)
		if err != nil {
			return err
		}
		defer release()
	}
	if err := client.Schema.Create(ctx, schema.WithDropIndex(true)); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := dropOnePaymentPerOrder(ctx, db, isMySQL); err != nil {
		return err
	}
	if err := adultPrices(ctx, db); err != nil {
		return err
	}
	if err := lineAmounts(ctx, db); err != nil {
		return err
	}
	if err := purchaseCounts(ctx, db, isMySQL); err != nil {
		return err
	}
	if err := wholeRefunds(ctx, db); err != nil {
		return err
	}
	var d DefaultCinema
	if len(def) > 0 {
		d = def[0]
	}
	return assignDefaultCinema(ctx, client, d)
}

// lockMigration takes the database's migration lock on a connection of its own (a named
// lock belongs to the session that took it, and MySQL drops it if that session dies, so a
// crashed instance cannot leave it behind). The name includes the database, so instances
// of other databases on the same server do not wait for each other.
func lockMigration(ctx context.Context, db *sql.DB, wait time.Duration) (release func(), err error) {
	if db.Stats().MaxOpenConnections == 1 {
		// The lock holds one connection while the migration needs another.
		return nil, fmt.Errorf("migrate: needs a pool of at least 2 MySQL connections (SEATFLOW_MYSQL_MAX_CONNS)")
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	var name string
	var got sql.NullInt64
	// A lock name is at most 64 characters.
	err = conn.QueryRowContext(ctx, "SELECT LEFT(CONCAT('seatflow.migrate.', DATABASE()), 64)").Scan(&name)
	if err == nil {
		err = conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, ?)", name, int(wait.Seconds())).Scan(&got)
	}
	switch {
	case err != nil:
		conn.Close()
		return nil, fmt.Errorf("migrate: take the migration lock: %w", err)
	case !got.Valid || got.Int64 != 1:
		conn.Close()
		return nil, fmt.Errorf("migrate: another instance has held the migration lock %q for %s; "+
			"is a migration stuck? (SELECT IS_USED_LOCK('%s') names its connection)", name, wait, name)
	}
	return func() {
		// A fresh context: the lock must be released even when ctx has ended.
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = conn.ExecContext(rctx, "DO RELEASE_LOCK(?)", name)
		conn.Close()
	}, nil
}

func withParam(dsn, key, value string) string {
	if strings.Contains(dsn, key+"="+value) {
		return dsn
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + key + "=" + value
}
