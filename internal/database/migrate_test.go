package database_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"seatflow/internal/database"
	"seatflow/internal/tooling/testenv"
)

// Environment of the helper process: the database to migrate and when to start (Unix
// milliseconds), so that every instance of a round starts at the same moment.
const (
	envMigrateDSN   = "SEATFLOW_TEST_MIGRATE_DSN"
	envMigrateStart = "SEATFLOW_TEST_MIGRATE_START"
)

// TestConcurrentInstancesMigrateOneDatabase starts 4 processes, as 4 instances of the
// server would start, that migrate one empty database at the same moment; 10 rounds, each
// on a new database. Every process must succeed: without the migration lock the second
// one to create a table fails with "Error 1050: Table … already exists".
func TestConcurrentInstancesMigrateOneDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 40 processes")
	}
	const instances, rounds = 4, 10
	for round := range rounds {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		name := testenv.RandomName("sfmig_")
		if err := testenv.CreateDatabase(ctx, name); err != nil {
			cancel()
			t.Fatalf("create database (is MariaDB running? `make services`): %v", err)
		}
		t.Cleanup(func() { _ = testenv.DropDatabase(context.Background(), name) })
		start := time.Now().Add(700 * time.Millisecond).UnixMilli()
		var wg sync.WaitGroup
		outs := make([]string, instances)
		errs := make([]error, instances)
		for i := range instances {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestMigrateHelperProcess$", "-test.count=1")
				cmd.Env = append(os.Environ(), envMigrateDSN+"="+testenv.DatabaseDSN(name),
					envMigrateStart+"="+strconv.FormatInt(start, 10))
				out, err := cmd.CombinedOutput()
				outs[i], errs[i] = string(out), err
			}()
		}
		wg.Wait()
		cancel()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, instance %d: %v\n%s", round+1, i+1, err, outs[i])
			}
		}
		if n := countTables(t, name); n < 5 {
			t.Fatalf("round %d: %d tables after the migration", round+1, n)
		}
	}
}

// TestMigrateHelperProcess is one instance of TestConcurrentInstancesMigrateOneDatabase;
// it does nothing unless that test started it.
func TestMigrateHelperProcess(t *testing.T) {
	dsn := os.Getenv(envMigrateDSN)
	if dsn == "" {
		t.Skip("helper process of TestConcurrentInstancesMigrateOneDatabase")
	}
	client, db, err := database.OpenMySQL(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	startMs, _ := strconv.ParseInt(os.Getenv(envMigrateStart), 10, 64)
	time.Sleep(time.Until(time.UnixMilli(startMs)))
	if err := database.Migrate(ctx, client, db); err != nil {
		t.Fatal(err)
	}
}

func countTables(t *testing.T, name string) int {
	t.Helper()
	_, db, err := database.OpenMySQL(testenv.DatabaseDSN("information_schema"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM TABLES WHERE TABLE_SCHEMA = ?", name).Scan(&n); err != nil {
		t.Fatal(fmt.Errorf("count tables: %w", err))
	}
	return n
}
