package database_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"seatflow/internal/database"
	"seatflow/internal/tooling/testenv"
)

// TestTransactionsTimed: a committed and a rolled-back transaction are each observed once
// under their outcome (a rollback after the commit is not counted again).
func TestTransactionsTimed(t *testing.T) {
	db := testenv.MySQL(t)
	client, _, err := database.OpenMySQL(db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	count := func(outcome string) uint64 {
		families, err := prometheus.DefaultGatherer.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() != "seatflow_db_transaction_duration_seconds" {
				continue
			}
			for _, m := range f.GetMetric() {
				if m.GetLabel()[0].GetValue() == outcome {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
		return 0
	}
	commits, rollbacks := count("commit"), count("rollback")
	ctx := context.Background()
	tx, err := client.Tx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	tx.Rollback()
	if tx, err = client.Tx(ctx); err != nil {
		t.Fatal(err)
	}
	tx.Rollback()
	if got := count("commit") - commits; got != 1 {
		t.Errorf("commits observed = %d, want 1", got)
	}
	if got := count("rollback") - rollbacks; got != 1 {
		t.Errorf("rollbacks observed = %d, want 1", got)
	}
}
