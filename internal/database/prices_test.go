package database_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/orderseat"
	"seatflow/internal/database"
	"seatflow/internal/tooling/testenv"
)

// TestMigrationMakesPricesAdult takes a database of the schema from before ticket types
// (showtimes.prices an object of prices by seat kind; order_seats without ticket_type and
// amount_cents; tickets without ticket_type) holding a showtime with prices and orders,
// migrates it, and finds nothing lost: the prices are the showtime's ADULT prices, every
// order's lines are ADULT and add up to its amount (each seat's price when they match it,
// the amount split evenly when the prices changed since). A second migration changes
// nothing.
func TestMigrationMakesPricesAdult(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := testenv.MySQL(t)
	now := time.Now().UTC().Truncate(time.Second)
	showID, hallID := testenv.Showtime(t, db.Client, now, testenv.ShowtimeSpec{Rows: 2, PerRow: 3, PremiumFirstRow: true})
	seatsOf := map[string]int{}
	for _, s := range db.Client.Seat.Query().AllX(ctx) {
		if s.HallID == hallID {
			seatsOf[s.RowLabel+string(rune('0'+s.Number))] = s.ID
		}
	}

	// Back to the previous schema: its migration made none of these columns.
	for _, stmt := range []string{
		"ALTER TABLE order_seats DROP COLUMN ticket_type",
		"ALTER TABLE order_seats DROP COLUMN amount_cents",
		"ALTER TABLE tickets DROP COLUMN ticket_type",
		`UPDATE showtimes SET prices = '{"PREMIUM":1500,"STANDARD":1000}' WHERE id = ` + strconv.Itoa(showID),
	} {
		if _, err := db.SQL.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	// Orders as the previous code wrote them: a paid one at today's prices (A1 PREMIUM, B1
	// and B2 STANDARD: 3500), and two held before a price change: a pending one (1001 for
	// A2 and B3, now 2500) and a cancelled one (1000 for A3, now 1500).
	type oldOrder struct {
		status seatflow.OrderStatus
		amount int
		seats  []string
	}
	olds := []oldOrder{
		{seatflow.OrderPaid, 3500, []string{"A1", "B1", "B2"}},
		{seatflow.OrderPending, 1001, []string{"A2", "B3"}},
		{seatflow.OrderCancelled, 1000, []string{"A3"}},
	}
	orderIDs := make([]int, len(olds))
	for i, o := range olds {
		created := db.Client.Order.Create().SetUserID("u").SetShowtimeID(showID).SetHoldToken("tok" + strconv.Itoa(i)).
			SetIdempotencyKey("k" + strconv.Itoa(i)).SetStatus(o.status).SetAmountCents(o.amount).
			SetExpiresAt(now.Add(time.Minute)).SetCreatedAt(now).SaveX(ctx)
		orderIDs[i] = created.ID
		for _, label := range o.seats {
			if _, err := db.SQL.ExecContext(ctx, "INSERT INTO order_seats (order_id, seat_id) VALUES (?, ?)", created.ID, seatsOf[label]); err != nil {
				t.Fatal(err)
			}
		}
	}

	for round := range 2 {
		if err := database.Migrate(ctx, db.Client, db.SQL); err != nil {
			t.Fatalf("migration %d: %v", round+1, err)
		}
		st := db.Client.Showtime.GetX(ctx, showID)
		want := seatflow.PriceList{{Kind: seatflow.SeatStandard, TicketType: seatflow.TicketAdult, AmountCents: 1000},
			{Kind: seatflow.SeatPremium, TicketType: seatflow.TicketAdult, AmountCents: 1500}}
		if !slices.Equal(st.Prices, want) {
			t.Fatalf("migration %d: prices %+v, want %+v", round+1, st.Prices, want)
		}
		var raw string
		if err := db.SQL.QueryRowContext(ctx, "SELECT prices FROM showtimes WHERE id = ?", showID).Scan(&raw); err != nil || raw[0] != '[' {
			t.Fatalf("migration %d: stored prices %q, %v: want the list", round+1, raw, err)
		}
		if n := db.Client.Order.Query().CountX(ctx); n != len(olds) {
			t.Fatalf("migration %d: %d orders, want %d", round+1, n, len(olds))
		}
		wantAmounts := [][]int{{1500, 1000, 1000}, {501, 500}, {1000}}
		for i, id := range orderIDs {
			lines := db.Client.OrderSeat.Query().Where(orderseat.OrderID(id)).Order(ent.Asc(orderseat.FieldSeatID)).AllX(ctx)
			if len(lines) != len(olds[i].seats) {
				t.Fatalf("migration %d: order %d has %d lines, want %d", round+1, id, len(lines), len(olds[i].seats))
			}
			var got []int
			for _, l := range lines {
				if l.TicketType != seatflow.TicketAdult || l.AmountCents == nil {
					t.Fatalf("migration %d: line %+v, want ADULT with an amount", round+1, l)
				}
				got = append(got, *l.AmountCents)
			}
			if !slices.Equal(got, wantAmounts[i]) {
				t.Errorf("migration %d: order %d line amounts %v, want %v", round+1, id, got, wantAmounts[i])
			}
		}
	}
}
