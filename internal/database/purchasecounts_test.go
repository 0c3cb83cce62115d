package database_test

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"testing"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/internal/database"
	"seatflow/internal/tooling/testenv"
)

// TestMigrationFillsPurchaseCounts takes a database whose orders were made before the
// purchase counts existed (occupancy rows, no purchase_counts row), migrates it, and finds
// every customer's count for every showtime equal to their occupancy, on MySQL and on
// the embedded SQLite. Migrating again changes nothing, not even a count that drifted
// since: once the table has rows, drift is the reconciler's to repair.
func TestMigrationFillsPurchaseCounts(t *testing.T) {
	onMySQLAndSQLite(t, testFillPurchaseCounts)
}

func testFillPurchaseCounts(t *testing.T, client *ent.Client, db *sql.DB) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	show1, hall1 := testenv.Showtime(t, client, now, testenv.ShowtimeSpec{Rows: 1, PerRow: 6})
	show2, hall2 := testenv.Showtime(t, client, now, testenv.ShowtimeSpec{Rows: 1, PerRow: 6})
	seatsOf := map[int][]int{}
	for _, s := range client.Seat.Query().AllX(ctx) {
		seatsOf[s.HallID] = append(seatsOf[s.HallID], s.ID)
	}
	// Orders as the code before the counts wrote them: occupancy rows for the active ones.
	orders := []struct {
		user   string
		show   int
		status seatflow.OrderStatus
		seats  []int
	}{
		{"alice", show1, seatflow.OrderPending, seatsOf[hall1][0:2]},
		{"alice", show1, seatflow.OrderPaid, seatsOf[hall1][2:3]},
		{"bob", show1, seatflow.OrderPaid, seatsOf[hall1][3:4]},
		{"alice", show2, seatflow.OrderPaid, seatsOf[hall2][0:1]},
		{"carol", show1, seatflow.OrderCancelled, nil},
	}
	for i, o := range orders {
		created := client.Order.Create().SetUserID(o.user).SetShowtimeID(o.show).SetHoldToken(fmt.Sprint("tok", i)).
			SetIdempotencyKey(fmt.Sprint("k", i)).SetStatus(o.status).SetAmountCents(1000 * len(o.seats)).
			SetExpiresAt(now.Add(time.Minute)).SetCreatedAt(now).SaveX(ctx)
		for _, seat := range o.seats {
			client.SeatOccupancy.Create().SetShowtimeID(o.show).SetSeatID(seat).SetOrderID(created.ID).ExecX(ctx)
		}
	}
	type key struct {
		user string
		show int
	}
	counts := func() map[key]int {
		out := map[key]int{}
		for _, r := range client.PurchaseCount.Query().AllX(ctx) {
			out[key{r.UserID, r.ShowtimeID}] = r.Seats
		}
		return out
	}
	if got := counts(); len(got) != 0 {
		t.Fatalf("counts before the migration: %v, want none", got)
	}

	want := map[key]int{{"alice", show1}: 3, {"bob", show1}: 1, {"alice", show2}: 1}
	for round := range 2 {
		if err := database.Migrate(ctx, client, db); err != nil {
			t.Fatalf("migration %d: %v", round+1, err)
		}
		if got := counts(); !maps.Equal(got, want) {
			t.Fatalf("counts after migration %d: %v, want %v", round+1, got, want)
		}
	}
	client.PurchaseCount.Update().SetSeats(9).ExecX(ctx)
	if err := database.Migrate(ctx, client, db); err != nil {
		t.Fatal(err)
	}
	for k, n := range counts() {
		if n != 9 {
			t.Errorf("count of %v = %d after a migration of a filled table, want the 9 it had", k, n)
		}
	}
}
