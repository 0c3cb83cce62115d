package catalog_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"seatflow"
	"seatflow/internal/catalog"
	"seatflow/internal/keys"
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

// TestEntriesCachedBeforeCinemasAreReadAgain: while an upgrade rolls out, an instance of
// the previous version writes showtime and hall entries without their cinema. Read
// through the catalog, such an entry names its cinema all the same (it is read again from
// MySQL), and the in-process level alone does not answer with it.
func TestEntriesCachedBeforeCinemasAreReadAgain(t *testing.T) {
	svc, _ := newCached(t)
	ctx := context.Background()
	c, err := svc.CreateCinema(ctx, catalog.CinemaInput{Name: "Harbour", TimeZone: "Pacific/Auckland"})
	if err != nil {
		t.Fatal(err)
	}
	h, err := svc.CreateHall(ctx, catalog.HallInput{Name: "H", CinemaID: &c.ID, Rows: []catalog.HallRowInput{{Label: "A", Seats: 4}}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := svc.CreateMovie(ctx, catalog.MovieInput{Title: "M", DurationMinutes: 90})
	if err != nil {
		t.Fatal(err)
	}
	st, err := svc.CreateShowtime(ctx, catalog.ShowtimeInput{MovieID: m.ID, HallID: h.ID, StartsAt: svc.Now().Add(48 * time.Hour),
		Prices: []catalog.PriceInput{{Kind: seatflow.SeatStandard, AmountCents: 900}}})
	if err != nil {
		t.Fatal(err)
	}
	if st.CinemaID != c.ID {
		t.Fatalf("created showtime in cinema %d, want %d", st.CinemaID, c.ID)
	}
	// The previous version's entries: the same JSON without cinemaId.
	old := map[string][]byte{}
	for key, v := range map[string]any{keys.Showtime(st.ID): *st, keys.Hall(h.ID): *h} {
		var fields map[string]any
		b, _ := json.Marshal(v)
		_ = json.Unmarshal(b, &fields)
		delete(fields, "cinemaId")
		old[key], _ = json.Marshal(fields)
	}
	if _, err := svc.Cache.GetMany(ctx, []string{keys.Showtime(st.ID), keys.Hall(h.ID)},
		func(context.Context, []string) (map[string][]byte, error) { return old, nil }); err != nil {
		t.Fatal(err)
	}
	shows, err := svc.Showtimes(ctx, []int{st.ID})
	if err != nil || shows[0] == nil || shows[0].CinemaID != c.ID {
		t.Fatalf("showtime read over an old entry: %+v, %v; want cinema %d", shows, err, c.ID)
	}
	halls, err := svc.Halls(ctx, []int{h.ID})
	if err != nil || halls[0] == nil || halls[0].CinemaID != c.ID || len(halls[0].Seats) != 4 {
		t.Fatalf("hall read over an old entry: %+v, %v; want cinema %d", halls, err, c.ID)
	}
	if _, ok := svc.LocalShowtimes(ctx, []int{st.ID}); ok {
		t.Fatal("the in-process level answered with an entry without its cinema")
	}
	if _, ok := svc.LocalHalls(ctx, []int{h.ID}); ok {
		t.Fatal("the in-process level answered with a hall without its cinema")
	}
}
