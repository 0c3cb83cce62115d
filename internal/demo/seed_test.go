package demo_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/internal/catalog"
	"seatflow/internal/demo"
	"seatflow/internal/sales"
	"seatflow/internal/seats"
	"seatflow/internal/tooling/testenv"
)

// TestSeedKeepsAWeekScheduled: the daily demo data. The first seed makes the catalog (two
// cinemas in two time zones) and showtimes on sale for each of the coming demo.Week days of
// each cinema's own zone, today only where a slot is still ahead; seeding again adds
// nothing; three days later it schedules the three new days and leaves the others alone.
func TestSeedKeepsAWeekScheduled(t *testing.T) {
	t.Parallel()
	db := testenv.MySQL(t).Client
	r := testenv.NewRedis(t)
	// 03:00 UTC is 16:00 in the second cinema's zone (Pacific/Auckland): both cinemas
	// are on the same date, so the week is 7 dates.
	clk := testenv.NewClock(time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC))
	cat := &catalog.Service{DB: db, Now: clk.Now}
	store := &seats.Store{RDB: r.Client, Keys: r.Keys, Now: clk.Now}
	seeder := &demo.Seeder{DB: db, Catalog: cat, Now: clk.Now,
		Sales: &sales.Service{DB: db, Seats: store, RDB: r.Client, Keys: r.Keys, Catalog: cat, Now: clk.Now}}
	ctx := context.Background()

	rep, err := seeder.Seed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Catalog || rep.Days != demo.Week || rep.Showtimes == 0 || rep.NotDemo {
		t.Fatalf("first seed: %+v, want the catalog and %d days of showtimes", rep, demo.Week)
	}
	before := scheduled(t, db, clk.Now())
	if n := db.Cinema.Query().CountX(ctx); n != 2 || len(before) != 2 {
		t.Fatalf("%d cinemas, %d with showtimes; want 2 in two zones", n, len(before))
	}

	again, err := seeder.Seed(ctx)
	if err != nil || again.Showtimes != 0 || again.Catalog || !strings.Contains(again.String(), "already complete") {
		t.Fatalf("seeding again at once: %+v (%v), want nothing added", again, err)
	}

	clk.Advance(3 * 24 * time.Hour)
	later, err := seeder.Seed(ctx)
	if err != nil || later.Catalog || later.Days != 3 {
		t.Fatalf("seeding 3 days later: %+v (%v), want the 3 new days only", later, err)
	}
	after := scheduled(t, db, clk.Now())
	for cinema, days := range after {
		for day, n := range days {
			if m, ok := before[cinema][day]; ok && m != n {
				t.Errorf("cinema %s had %d showtimes on %s, now %d: a day with showtimes is left alone", cinema, m, day, n)
			}
		}
	}
}

// TestSeedLeavesAnotherCatalogAlone: a database whose movies are not the demo's gets
// nothing.
func TestSeedLeavesAnotherCatalogAlone(t *testing.T) {
	t.Parallel()
	db := testenv.MySQL(t).Client
	clk := testenv.NewClock(time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC))
	testenv.Showtime(t, db, clk.Now(), testenv.ShowtimeSpec{Rows: 1, PerRow: 2})
	rep, err := (&demo.Seeder{DB: db, Catalog: &catalog.Service{DB: db, Now: clk.Now}, Now: clk.Now}).Seed(context.Background())
	if err != nil || !rep.NotDemo || rep.Showtimes != 0 || rep.Catalog {
		t.Fatalf("seed over another catalog: %+v (%v), want NotDemo and nothing added", rep, err)
	}
	if n := db.Showtime.Query().CountX(context.Background()); n != 1 {
		t.Fatalf("%d showtimes, want the one there was", n)
	}
}

// scheduled counts the showtimes of each cinema (by name) per day of its own zone, and
// fails unless each of the demo.Week days from now has some, all ON_SALE and none
// starting within 5 minutes of now or earlier.
func scheduled(t *testing.T, db *ent.Client, now time.Time) map[string]map[string]int {
	t.Helper()
	shows := db.Showtime.Query().WithHall(func(q *ent.HallQuery) { q.WithCinema() }).AllX(context.Background())
	out := map[string]map[string]int{}
	zones := map[string]*time.Location{}
	for _, s := range shows {
		c := s.Edges.Hall.Edges.Cinema
		loc, err := time.LoadLocation(c.TimeZone)
		if err != nil {
			t.Fatal(err)
		}
		zones[c.Name] = loc
		if out[c.Name] == nil {
			out[c.Name] = map[string]int{}
		}
		out[c.Name][s.StartsAt.In(loc).Format(time.DateOnly)]++
		if s.Status != seatflow.ShowtimeOnSale {
			t.Errorf("showtime %d is %s, want ON_SALE", s.ID, s.Status)
		}
		if s.StartsAt.Before(now.Add(5*time.Minute)) && s.CreatedAt.Equal(now) {
			t.Errorf("showtime %d seeded at %s starts at %s: too late to sell", s.ID, now, s.StartsAt)
		}
	}
	for name, days := range out {
		for d := range demo.Week {
			day := now.In(zones[name]).AddDate(0, 0, d).Format(time.DateOnly)
			if days[day] == 0 {
				t.Errorf("cinema %s has no showtimes on %s (day %d of the week from %s, its zone)", name, day, d, now.In(zones[name]))
			}
		}
	}
	return out
}
