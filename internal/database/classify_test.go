package database_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"seatflow"
	"seatflow/internal/database"
	"seatflow/internal/tooling/testenv"
)

// TestClassifyTransactionEndedByDeadline: a transaction whose deadline passes before its
// commit is rolled back by database/sql, and the commit's error is SERVICE_UNAVAILABLE (a
// retry may succeed), not an internal error.
func TestClassifyTransactionEndedByDeadline(t *testing.T) {
	db := testenv.MySQL(t).Client
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	tx, err := db.Tx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Movie.Query().Count(ctx); err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
	time.Sleep(50 * time.Millisecond) // database/sql rolls back once it sees the context end
	err = tx.Commit()
	if err == nil {
		t.Fatal("commit after the deadline succeeded")
	}
	t.Logf("commit after the deadline: %v", err)
	if code := seatflow.ErrorCode(database.Classify(fmt.Errorf("commit: %w", err))); code != seatflow.EUNAVAILABLE {
		t.Errorf("Classify(%v) code = %s, want %s", err, code, seatflow.EUNAVAILABLE)
	}
	if !errors.Is(database.Classify(err), err) {
		t.Errorf("Classify drops the cause %v", err)
	}
}
