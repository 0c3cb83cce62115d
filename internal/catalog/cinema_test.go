package catalog_test

import (
	"context"
	"testing"

	"seatflow"
	"seatflow/internal/catalog"
)

// TestCreatedHallJoinsTheDefaultCinema: a new database has the default cinema (the
// migration makes it), and a hall created without a cinema joins it, never a later one.
func TestCreatedHallJoinsTheDefaultCinema(t *testing.T) {
	svc, db := newCached(t)
	ctx := context.Background()
	def := db.Client.Cinema.Query().OnlyX(ctx) // exactly one: the default
	if def.Name != seatflow.DefaultCinemaName || def.TimeZone != "UTC" {
		t.Fatalf("default cinema %q in %s, want %q in UTC", def.Name, def.TimeZone, seatflow.DefaultCinemaName)
	}
	db.Client.Cinema.Create().SetName("Roxy").SetTimeZone("Pacific/Auckland").SaveX(ctx)
	h, err := svc.CreateHall(ctx, catalog.HallInput{Name: "Screen 1", Rows: []catalog.HallRowInput{{Label: "A", Seats: 4}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := db.Client.Hall.GetX(ctx, h.ID).CinemaID; got != def.ID {
		t.Fatalf("hall in cinema %d, want the default %d", got, def.ID)
	}
}
