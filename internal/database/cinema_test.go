package database_test

import (
	"context"
	"testing"
	"time"

	"seatflow"
	"seatflow/ent/hall"
	"seatflow/internal/database"
	"seatflow/internal/tooling/testenv"
)

// TestMigrationPutsExistingHallsIntoTheDefaultCinema takes a database of the schema from
// before cinemas (no cinemas table, no halls.cinema_id) holding a hall, a showtime and a
// paid order, migrates it, and finds every hall in one cinema named and zoned as
// configured, with nothing lost; a second migration changes nothing, and a cinema's zone
// must be an IANA name.
func TestMigrationPutsExistingHallsIntoTheDefaultCinema(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := testenv.MySQL(t)
	now := time.Now().UTC().Truncate(time.Second)
	showID, hallID := testenv.Showtime(t, db.Client, now, testenv.ShowtimeSpec{Rows: 2, PerRow: 3})
	db.Client.Order.Create().SetUserID("u1").SetShowtimeID(showID).SetHoldToken("tok1").
		SetIdempotencyKey("k1").SetStatus(seatflow.OrderPaid).SetAmountCents(2000).
		SetExpiresAt(now.Add(time.Minute)).SetCreatedAt(now).SaveX(ctx)

	// Back to the previous schema: the migration of before cinemas made neither the column
	// nor the table.
	var fk string
	if err := db.SQL.QueryRowContext(ctx, `SELECT CONSTRAINT_NAME FROM information_schema.KEY_COLUMN_USAGE
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'halls' AND COLUMN_NAME = 'cinema_id'
		AND REFERENCED_TABLE_NAME IS NOT NULL`).Scan(&fk); err != nil {
		t.Fatalf("the halls→cinemas foreign key: %v", err)
	}
	for _, stmt := range []string{
		"ALTER TABLE halls DROP FOREIGN KEY " + fk,
		"ALTER TABLE halls DROP COLUMN cinema_id",
		"DROP TABLE cinemas",
	} {
		if _, err := db.SQL.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}

	def := database.DefaultCinema{Name: "Odeon Leicester Square", TimeZone: "Europe/London"}
	for round := range 2 {
		if err := database.Migrate(ctx, db.Client, db.SQL, def); err != nil {
			t.Fatalf("migration %d: %v", round+1, err)
		}
		cinemas := db.Client.Cinema.Query().AllX(ctx)
		if len(cinemas) != 1 || cinemas[0].Name != def.Name || cinemas[0].TimeZone != def.TimeZone {
			t.Fatalf("migration %d: cinemas %+v, want one %q in %s", round+1, cinemas, def.Name, def.TimeZone)
		}
		h := db.Client.Hall.GetX(ctx, hallID)
		if h.CinemaID != cinemas[0].ID {
			t.Fatalf("migration %d: hall in cinema %d, want %d", round+1, h.CinemaID, cinemas[0].ID)
		}
		if n := db.Client.Hall.Query().Where(hall.CinemaIDIsNil()).CountX(ctx); n != 0 {
			t.Fatalf("migration %d: %d halls without a cinema", round+1, n)
		}
		if n := db.Client.Order.Query().CountX(ctx); n != 1 {
			t.Fatalf("migration %d: %d orders, want 1", round+1, n)
		}
		if n := db.Client.Seat.Query().CountX(ctx); n != 6 {
			t.Fatalf("migration %d: %d seats, want 6", round+1, n)
		}
		if st := db.Client.Showtime.GetX(ctx, showID); st.HallID != hallID {
			t.Fatalf("migration %d: showtime in hall %d, want %d", round+1, st.HallID, hallID)
		}
	}

	// A second cinema is not the default: a later migration moves no hall into it.
	other := db.Client.Cinema.Create().SetName("Roxy").SetTimeZone("Pacific/Auckland").SaveX(ctx)
	if err := database.Migrate(ctx, db.Client, db.SQL, def); err != nil {
		t.Fatal(err)
	}
	if n := db.Client.Hall.Query().Where(hall.CinemaID(other.ID)).CountX(ctx); n != 0 {
		t.Fatalf("%d halls moved into the second cinema", n)
	}
	for _, zone := range []string{"Local", "Mars/Olympus", "", "../../etc/passwd"} {
		if _, err := db.Client.Cinema.Create().SetName("Bad").SetTimeZone(zone).Save(ctx); err == nil {
			t.Errorf("time zone %q accepted", zone)
		}
	}
}
