package app

import (
	"context"
	"fmt"
	"testing"
	"time"

	"seatflow/internal/nodeid"
)

// TestDemoSeedKeepsAWeekScheduled: the demo data stays alive. Seeded on day 1, then started
// again 3 days later (the injected clock), every day of the coming week has showtimes
// on sale, the days that had some are left as they were, and an order of day 1 is intact.
// The cinema is in Tokyo, so its days are not UTC's. The seeding rules themselves are
// shown in internal/demo (TestSeedKeepsAWeekScheduled).
func TestDemoSeedKeepsAWeekScheduled(t *testing.T) {
	a := newTestApp(t, "-timezone", "Asia/Tokyo")
	ctx := context.Background()
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	type show struct{ ID, Status, StartsAt string }
	day := func(d time.Time) []show {
		t.Helper()
		var out struct{ Showtimes []show }
		a.must("", `query($d: Date!) { showtimes(date: $d) { id status startsAt } }`, map[string]any{"d": d.Format("2006-01-02")}, &out)
		return out.Showtimes
	}
	week := func() map[string]int {
		t.Helper()
		counts := map[string]int{}
		now := a.clock.Now().In(tokyo)
		for d := range 7 {
			date := now.AddDate(0, 0, d)
			shows := day(date)
			if len(shows) == 0 {
				t.Fatalf("no showtimes on %s (day %d of the week from %s)", date.Format("2006-01-02"), d, now)
			}
			for _, s := range shows {
				// The sales closer (on the instance's clock, at its own pace) closes the sales of
				// the day's showtimes that have started.
				started, _ := time.Parse(time.RFC3339, s.StartsAt)
				if s.Status == "CLOSED" && started.Before(a.clock.Now()) {
					continue
				}
				if s.Status != "ON_SALE" {
					t.Errorf("showtime %s on %s is %s, want ON_SALE", s.ID, date.Format("2006-01-02"), s.Status)
				}
			}
			counts[date.Format("2006-01-02")] = len(shows)
		}
		return counts
	}

	rep, err := a.Seeder().Seed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Catalog || rep.Days != 7 || rep.Showtimes == 0 {
		t.Fatalf("first seed: %+v, want the catalog and 7 days of showtimes", rep)
	}
	before := week()

	// Two cinemas in two zones, each with showtimes on every coming day of its own zone.
	var cinemas struct {
		Cinemas []struct {
			ID, Name, TimeZone string
			Halls              []struct{ Name string }
		}
	}
	a.must("", `{ cinemas { id name timeZone halls { name } } }`, nil, &cinemas)
	if len(cinemas.Cinemas) != 2 || cinemas.Cinemas[0].TimeZone != "Asia/Tokyo" || cinemas.Cinemas[1].TimeZone != "Pacific/Auckland" ||
		len(cinemas.Cinemas[0].Halls) != 2 || len(cinemas.Cinemas[1].Halls) != 1 {
		t.Fatalf("demo cinemas = %+v, want the default one (Tokyo) with 2 halls and one in Auckland with 1", cinemas.Cinemas)
	}
	for _, c := range cinemas.Cinemas {
		loc, _ := time.LoadLocation(c.TimeZone)
		for d := 1; d < 7; d++ {
			date := a.clock.Now().In(loc).AddDate(0, 0, d).Format("2006-01-02")
			var out struct {
				Cinema struct {
					Showtimes []struct {
						LocalStartsAt string
						Cinema        struct{ ID string }
					}
				}
			}
			a.must("", `query($c: ID!, $d: Date!) { cinema(id: $c) { showtimes(date: $d) { localStartsAt cinema { id } } } }`,
				map[string]any{"c": c.ID, "d": date}, &out)
			if len(out.Cinema.Showtimes) == 0 {
				t.Fatalf("%s has no showtimes on %s (its zone)", c.Name, date)
			}
			for _, s := range out.Cinema.Showtimes {
				if s.Cinema.ID != c.ID || s.LocalStartsAt[:10] != date {
					t.Fatalf("%s on %s lists a showtime of cinema %s at %s local", c.Name, date, s.Cinema.ID, s.LocalStartsAt)
				}
			}
		}
	}

	// The README's examples hold on a new database: showtime 1 is in Hall 1, whose seats 61
	// and 62 are F5 and F6, standard.
	var one struct {
		Showtime struct {
			Hall struct {
				Name  string
				Seats []struct {
					ID, Row, Kind string
					Number        int
				}
			}
		}
	}
	a.must("", `query($id: ID!) { showtime(id: $id) { hall { name seats { id row number kind } } } }`,
		map[string]any{"id": nodeid.Encode(nodeid.Showtime, 1)}, &one)
	if h := one.Showtime.Hall; h.Name != "Hall 1" || len(h.Seats) != 150 || h.Seats[60].ID != nodeid.Encode(nodeid.Seat, 61) ||
		h.Seats[61].ID != nodeid.Encode(nodeid.Seat, 62) ||
		h.Seats[60].Row+fmt.Sprint(h.Seats[60].Number) != "F5" || h.Seats[61].Kind != "STANDARD" {
		t.Fatalf("showtime 1 of a new database: %+v, want Hall 1 with seats 61, 62 = F5, F6 standard", h)
	}

	// A customer buys a seat of the first showtime.
	first := day(a.clock.Now().In(tokyo))[0].ID
	var seats struct {
		Showtime struct {
			Hall struct{ Seats []struct{ ID string } }
		}
	}
	a.must("", `query($id: ID!) { showtime(id: $id) { hall { seats { id } } } }`, map[string]any{"id": first}, &seats)
	alice := a.token("alice", "customer")
	order := a.hold(alice, first, []string{seats.Showtime.Hall.Seats[20].ID}, "seed-test")
	a.must(alice, `mutation($id: ID!) { payOrder(orderId: $id, paymentRef: "psp-1") { status } }`, map[string]any{"id": order.ID}, nil)

	a.clock.Advance(3 * 24 * time.Hour)
	rep, err = a.Seeder().Seed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Catalog || rep.Days != 3 {
		t.Fatalf("seed 3 days later: %+v, want showtimes on the 3 new days and no new catalog", rep)
	}
	after := week()
	for date, n := range after {
		if m, ok := before[date]; ok && m != n {
			t.Errorf("%s had %d showtimes, now %d: a day with showtimes must be left alone", date, m, n)
		}
	}
	var got struct {
		Order struct {
			Status string
			Seats  []struct{ ID string }
		}
	}
	a.must(alice, `query($id: ID!) { order(id: $id) { status seats { id } } }`, map[string]any{"id": order.ID}, &got)
	if got.Order.Status != "PAID" || len(got.Order.Seats) != 1 || got.Order.Seats[0].ID != seats.Showtime.Hall.Seats[20].ID {
		t.Fatalf("day 1's order after the new seed: %+v, want PAID with its seat", got.Order)
	}
	var movies struct {
		Movies struct {
			Edges []struct{ Node struct{ ID string } }
		}
	}
	a.must("", `{ movies(first: 50) { edges { node { id } } } }`, nil, &movies)
	if n := len(movies.Movies.Edges); n != 4 {
		t.Fatalf("%d movies after seeding twice, want the 4 demo movies", n)
	}

	if rep, err := a.Seeder().Seed(ctx); err != nil || rep.Showtimes != 0 {
		t.Fatalf("seeding a complete week again: %+v, %v; want nothing added", rep, err)
	}
}
