// Package database opens SeatFlow's ent client on MySQL/MariaDB or on SQLite (embedded
// mode) and runs the schema migration. It owns connection set-up, nothing else.
package database

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"entgo.io/ent/dialect/sql/schema"
	_ "github.com/go-sql-driver/mysql" // MySQL driver
	_ "modernc.org/sqlite"             // pure-Go SQLite driver, registered as "sqlite"

	"seatflow/ent"
)

// DefaultMaxConns is the connection pool size of one instance: several instances share one
// MySQL, whose max_connections (151 by default) must cover them all.
const DefaultMaxConns = 20

// OpenMySQL opens an ent client on a MySQL/MariaDB DSN (parseTime is forced on) with a
// pool of DefaultMaxConns connections; SetMaxOpenConns on the returned *sql.DB changes it.
func OpenMySQL(dsn string, opts ...ent.Option) (*ent.Client, *sql.DB, error) {
	dsn = withParam(dsn, "parseTime", "true")
	dsn = withParam(dsn, "loc", "UTC")
	db, err := sql.Open("mysql", dsn)
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
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("open sqlite: %w", err)
	}
	// SQLite allows one writer; a single connection turns lock errors into queueing.
	db.SetMaxOpenConns(1)
	return open(dialect.SQLite, db, opts), db, nil
}

func open(name string, db *sql.DB, opts []ent.Option) *ent.Client {
	return ent.NewClient(append([]ent.Option{ent.Driver(entsql.OpenDB(name, db))}, opts...)...)
}

// Migrate creates or alters the tables to match the ent schema. It is idempotent.
func Migrate(ctx context.Context, client *ent.Client) error {
	if err := client.Schema.Create(ctx, schema.WithDropIndex(true)); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
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
