package database_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"seatflow/internal/database"
	"seatflow/internal/tooling/testenv"
)

// TestStatementsSentWithTheirArguments: a statement with arguments is one round trip, not
// a server-side PREPARE, EXECUTE and CLOSE (interpolateParams, unless the DSN says
// otherwise).
func TestStatementsSentWithTheirArguments(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		dsn      string
		prepared bool
	}{{"", false}, {"interpolateParams=false", true}} {
		dsn := testenv.MySQL(t).DSN
		if c.dsn != "" {
			dsn += map[bool]string{true: "&", false: "?"}[strings.Contains(dsn, "?")] + c.dsn
		}
		_, db, err := database.OpenMySQL(dsn)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		before := prepares(t, conn)
		var n int
		if err := conn.QueryRowContext(ctx, "SELECT ? + 1", 41).Scan(&n); err != nil || n != 42 {
			t.Fatalf("SELECT ? + 1: %d, %v", n, err)
		}
		if got := prepares(t, conn) > before; got != c.prepared {
			t.Errorf("DSN options %q: statement prepared on the server %v, want %v", c.dsn, got, c.prepared)
		}
		conn.Close()
		db.Close()
	}
}

// prepares is the session's count of server-side prepared statements.
func prepares(t *testing.T, conn *sql.Conn) int {
	t.Helper()
	var name string
	var n int
	if err := conn.QueryRowContext(context.Background(), "SHOW SESSION STATUS LIKE 'Com_stmt_prepare'").Scan(&name, &n); err != nil {
		t.Fatal(err)
	}
	return n
}
