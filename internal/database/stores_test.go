package database_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"seatflow/ent"
	"seatflow/internal/database"
	"seatflow/internal/tooling/testenv"
)

// onMySQLAndSQLite runs check as the subtests MySQL (a migrated test database) and SQLite
// (the embedded store, migrated in a file of its own): a migration is shown on both.
func onMySQLAndSQLite(t *testing.T, check func(t *testing.T, client *ent.Client, db *sql.DB)) {
	t.Run("MySQL", func(t *testing.T) {
		db := testenv.MySQL(t)
		check(t, db.Client, db.SQL)
	})
	t.Run("SQLite", func(t *testing.T) {
		client, db, err := database.OpenSQLite(filepath.Join(t.TempDir(), "seatflow.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { client.Close() })
		if err := database.Migrate(context.Background(), client, db); err != nil {
			t.Fatal(err)
		}
		check(t, client, db)
	})
}
