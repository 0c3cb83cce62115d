package cache

import (
	"context"
	"strconv"
	"testing"
	"time"

	"seatflow/ent"
	"seatflow/ent/cacheoutbox"
	"seatflow/internal/tooling/testenv"
)

func TestOutbox(t *testing.T) {
	ctx := context.Background()
	r := testenv.NewRedis(t)
	m := newMovies(t)
	clk := newClock()
	c := New(r.Client, r.Keys, testConfig(clk))
	o := &Outbox{DB: m.db.Client, Cache: c, Now: clk.Now}
	id := m.create(t, "Old")
	key := "movie:" + strconv.Itoa(id)

	// write renames the movie and records its key in one transaction.
	write := func(t *testing.T, title string) (*ent.Tx, int) {
		t.Helper()
		tx, err := m.db.Client.Tx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Movie.UpdateOneID(id).SetTitle(title).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		row, err := o.Record(ctx, tx, key)
		if err != nil {
			t.Fatal(err)
		}
		return tx, row
	}
	unprocessed := func(t *testing.T) int {
		t.Helper()
		n, err := m.db.Client.CacheOutbox.Query().Where(cacheoutbox.ProcessedAtIsNil()).Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	t.Run("DeliverAfterCommit", func(t *testing.T) {
		getTitle(t, c, key, m.load)
		tx, row := write(t, "Delivered")
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := o.Deliver(ctx, row, []string{key}); err != nil {
			t.Fatal(err)
		}
		if got := getTitle(t, c, key, m.load); got != "Delivered" {
			t.Errorf("got %q, want Delivered", got)
		}
		if n := unprocessed(t); n != 0 {
			t.Errorf("unprocessed rows: got %d, want 0", n)
		}
	})

	t.Run("CrashBeforeDeliverIsRelayed", func(t *testing.T) {
		getTitle(t, c, key, m.load)
		tx, _ := write(t, "Relayed")
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		// The process dies here: Deliver never runs.
		if got := getTitle(t, c, key, m.load); got != "Delivered" {
			t.Fatalf("before relay: got %q, want the stale Delivered", got)
		}
		if n, err := o.Relay(ctx, time.Minute); err != nil || n != 0 {
			t.Errorf("relay of a young row: got %d, %v; want 0, nil (its writer may still deliver it)", n, err)
		}
		clk.Advance(2 * time.Minute)
		if n, err := o.Relay(ctx, time.Minute); err != nil || n != 1 {
			t.Fatalf("relay: got %d, %v; want 1, nil", n, err)
		}
		if got := getTitle(t, c, key, m.load); got != "Relayed" {
			t.Errorf("after relay: got %q, want Relayed", got)
		}
		if n, err := o.Relay(ctx, time.Minute); err != nil || n != 0 {
			t.Errorf("second relay: got %d, %v; want 0, nil", n, err)
		}
	})

	t.Run("RollbackInvalidatesNothing", func(t *testing.T) {
		getTitle(t, c, key, m.load)
		sent := c.Stats().InvalidationsSent
		rows, _ := m.db.Client.CacheOutbox.Query().Count(ctx)
		tx, _ := write(t, "RolledBack")
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		clk.Advance(2 * time.Minute)
		if n, err := o.Relay(ctx, time.Minute); err != nil || n != 0 {
			t.Errorf("relay: got %d, %v; want 0, nil", n, err)
		}
		if n, _ := m.db.Client.CacheOutbox.Query().Count(ctx); n != rows {
			t.Errorf("outbox rows: got %d, want %d", n, rows)
		}
		if got := c.Stats().InvalidationsSent; got != sent {
			t.Errorf("invalidations sent: got %d, want %d", got, sent)
		}
		if e := readEnvelope(t, r, key); e == nil {
			t.Error("envelope deleted by a rolled-back write")
		}
		if got := getTitle(t, c, key, m.load); got != "Relayed" {
			t.Errorf("got %q, want Relayed", got)
		}
	})

	t.Run("RedisDownLeavesRowForRelay", func(t *testing.T) {
		client := testenv.NewRedisClient(t)
		down := &Outbox{DB: m.db.Client, Cache: New(client, r.Keys, testConfig(clk)), Now: clk.Now}
		client.Close()
		tx, row := write(t, "Later")
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := down.Deliver(ctx, row, []string{key}); err == nil {
			t.Fatal("Deliver with Redis gone: got nil, want an error")
		}
		if n := unprocessed(t); n != 1 {
			t.Fatalf("unprocessed rows: got %d, want 1", n)
		}
		clk.Advance(2 * time.Minute)
		if n, err := o.Relay(ctx, time.Minute); err != nil || n != 1 {
			t.Fatalf("relay: got %d, %v; want 1, nil", n, err)
		}
		if got := getTitle(t, c, key, m.load); got != "Later" {
			t.Errorf("after relay: got %q, want Later", got)
		}
	})
}
