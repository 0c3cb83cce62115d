package demo

import (
	"context"
	"fmt"
	"slices"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/hall"
	"seatflow/ent/movie"
	"seatflow/ent/showtime"
	"seatflow/internal/catalog"
)

// Catalog is what seeding writes: the catalog's admin operations and opening sales.
type Catalog interface {
	CreateMovie(ctx context.Context, in catalog.MovieInput) (*seatflow.Movie, error)
	CreateCinema(ctx context.Context, in catalog.CinemaInput) (*seatflow.Cinema, error)
	CreateHall(ctx context.Context, in catalog.HallInput) (*seatflow.Hall, error)
	CreateShowtime(ctx context.Context, in catalog.ShowtimeInput) (*seatflow.Showtime, error)
}

// Sales opens sales of a seeded showtime.
type Sales interface {
	OpenSales(ctx context.Context, showID int) (*seatflow.Showtime, error)
}

// Seeder adds the demo data: the catalog to an empty database, and showtimes to the days
// of the coming week that have none, so the demo stays alive however long it runs.
type Seeder struct {
	DB      *ent.Client
	Catalog Catalog
	Sales   Sales
	Now     seatflow.ClockFunc // the clock
}

// SeedReport says what Seed added.
type SeedReport struct {
	// Catalog is true when the demo movies and halls were created.
	Catalog bool
	// Showtimes is the number of showtimes added (and put on sale), over Days days.
	Showtimes, Days int
	// NotDemo is true when the catalog has movies but not the demo's: nothing is scheduled.
	NotDemo bool
}

func (r SeedReport) String() string {
	switch {
	case r.NotDemo:
		return "the catalog is not the demo's (no demo movies or halls): nothing seeded"
	case r.Catalog:
		return fmt.Sprintf("demo catalog seeded: 4 movies, 2 cinemas, 3 halls, %d showtimes over %d days", r.Showtimes, r.Days)
	case r.Showtimes > 0:
		return fmt.Sprintf("added %d demo showtimes over %d days that had none", r.Showtimes, r.Days)
	}
	return "demo data already complete: every day of the coming week has showtimes"
}

// Week is how many days, today included, Seed keeps scheduled.
const Week = 7

// The demo catalog's names: Seed finds the demo movies and halls by them in a database it
// seeded before.
var (
	demoMovies = []catalog.MovieInput{
		{Title: "The Last Projectionist", DurationMinutes: 118, Rating: ptr("PG-13"), Genres: []string{"Drama"},
			Synopsis: ptr("A small-town cinema's final night, told from the booth.")},
		{Title: "Orbit of Glass", DurationMinutes: 142, Rating: ptr("PG-13"), Genres: []string{"Sci-Fi", "Adventure"},
			Synopsis: ptr("Two engineers race to repair a failing space elevator.")},
		{Title: "Paper Lanterns", DurationMinutes: 96, Rating: ptr("G"), Genres: []string{"Animation", "Family"},
			Synopsis: ptr("A lantern maker's daughter follows a kite across the city.")},
		{Title: "Night Shift at Marlow Street", DurationMinutes: 107, Rating: ptr("R"), Genres: []string{"Thriller"},
			Synopsis: ptr("A night nurse notices the same visitor at every bedside.")},
	}
	demoHalls = []string{"Hall 1", "Hall 2", "Harbour 1"}
	// The second demo cinema, in another time zone than the default one's; Harbour 1 is in it.
	secondCinema = "SeatFlow Harbour"
)

// secondZone is the second demo cinema's time zone: far from the default cinema's, so the
// two count their days differently.
func secondZone(defaultZone string) string {
	if defaultZone == "Pacific/Auckland" {
		return "America/Los_Angeles"
	}
	return "Pacific/Auckland"
}

// daySchedule is one demo day: start times (the local time of the hall's cinema) per hall.
// Slots of a hall are 4 hours apart, longer than the longest demo movie, so any movie fits
// any slot.
var daySchedule = []struct {
	hall         int // index in demoHalls
	hour, minute int
}{
	{0, 13, 0}, {1, 14, 30}, {2, 15, 0}, {0, 17, 0}, {1, 18, 30}, {2, 19, 0}, {0, 21, 0}, {1, 22, 30}, {2, 23, 0},
}

// Seed creates the demo catalog when the database has no movies (four movies; in the
// default cinema Hall 1 of 150 seats in rows A–L with premium and accessible seats and
// Hall 2 of 80; a second cinema in another time zone with Harbour 1 of 80), then schedules
// the demo day on each day from today to six days ahead (in each cinema's time zone) that
// has no showtime in that cinema, with sales open. Today gets only the slots still ahead.
// It never changes or removes anything, so orders and an admin's own showtimes stay as
// they are (a demo database from before the second cinema gets it added).
func (a *Seeder) Seed(ctx context.Context) (SeedReport, error) {
	var rep SeedReport
	n, err := a.DB.Movie.Query().Count(ctx)
	if err != nil {
		return rep, err
	}
	if n == 0 {
		if err := a.createCatalog(ctx); err != nil {
			return rep, err
		}
		rep.Catalog = true
	}
	movies, halls, err := a.demoCatalog(ctx)
	if err != nil {
		return rep, err
	}
	if movies == nil {
		rep.NotDemo = true
		return rep, nil
	}
	var plan []plannedShow
	for _, c := range cinemasOf(halls) {
		loc := c.Location()
		now := a.Now.Now().In(loc)
		for d := range Week {
			day := time.Date(now.Year(), now.Month(), now.Day()+d, 0, 0, 0, 0, loc)
			shows, err := a.planDay(ctx, c, day, now, movies, halls)
			if err != nil {
				return rep, err
			}
			plan = append(plan, shows...)
		}
	}
	// Hall 1's showtimes first: on a new database showtime 1 is then the next one in the
	// 150-seat hall, whatever the hour, so the README's examples (seats "61", "62" of
	// showtime "1") hold.
	slices.SortStableFunc(plan, func(x, y plannedShow) int { return x.hall - y.hall })
	days := map[string]bool{}
	prices := []catalog.PriceInput{{Kind: seatflow.SeatStandard, AmountCents: 1200},
		{Kind: seatflow.SeatPremium, AmountCents: 1800}, {Kind: seatflow.SeatAccessible, AmountCents: 1000},
		{Kind: seatflow.SeatCompanion, AmountCents: 1000}}
	for _, p := range plan {
		st, err := a.Catalog.CreateShowtime(ctx, catalog.ShowtimeInput{MovieID: p.movie.ID, HallID: halls[p.hall].ID,
			StartsAt: p.at, Prices: prices})
		if seatflow.ErrorCode(err) == seatflow.EINVALID {
			continue // the hall is taken by an admin's showtime from the day before, or the movie was delisted
		} else if err != nil {
			return rep, fmt.Errorf("seed showtime: %w", err)
		}
		if _, err := a.Sales.OpenSales(ctx, st.ID); err != nil {
			return rep, fmt.Errorf("seed: open sales: %w", err)
		}
		rep.Showtimes++
		days[p.day] = true
	}
	rep.Days = len(days)
	return rep, nil
}

// plannedShow is a demo showtime to create; day tells its day (in its cinema's zone) from
// the others.
type plannedShow struct {
	at    time.Time
	day   string
	hall  int
	movie *ent.Movie
}

// cinemasOf returns the cinemas of the demo halls (read with their cinema), each once.
func cinemasOf(halls []*ent.Hall) []*seatflow.Cinema {
	var out []*seatflow.Cinema
	for _, h := range halls {
		c := h.Edges.Cinema
		if !slices.ContainsFunc(out, func(o *seatflow.Cinema) bool { return o.ID == c.ID }) {
			out = append(out, &seatflow.Cinema{ID: c.ID, Name: c.Name, TimeZone: c.TimeZone})
		}
	}
	return out
}

// planDay returns the demo day's showtimes of cinema c's halls for day (in c's time zone),
// or none when c has a showtime that day already. Today gets only the slots still ahead.
func (a *Seeder) planDay(ctx context.Context, c *seatflow.Cinema, day, now time.Time, movies []*ent.Movie, halls []*ent.Hall) ([]plannedShow, error) {
	loc := c.Location()
	next := time.Date(day.Year(), day.Month(), day.Day()+1, 0, 0, 0, 0, loc)
	n, err := a.DB.Showtime.Query().Where(showtime.HasHallWith(hall.CinemaID(c.ID)),
		showtime.StartsAtGTE(day.UTC()), showtime.StartsAtLT(next.UTC())).Count(ctx)
	if err != nil || n > 0 {
		return nil, err
	}
	var out []plannedShow
	for i, slot := range daySchedule {
		if halls[slot.hall].CinemaID != c.ID {
			continue
		}
		at := time.Date(day.Year(), day.Month(), day.Day(), slot.hour, slot.minute, 0, 0, loc)
		if at.Before(now.Add(5 * time.Minute)) {
			continue // too late to sell
		}
		// Movies rotate by day, so each day's programme differs.
		out = append(out, plannedShow{at: at, day: day.Format(time.DateOnly), hall: slot.hall,
			movie: movies[(i+day.YearDay())%len(movies)]})
	}
	return out, nil
}

// demoCatalog finds the demo movies and halls (with their cinemas); nil when any demo
// movie or hall of the default cinema is missing. A demo database from before the second
// cinema gets it, with its hall.
func (a *Seeder) demoCatalog(ctx context.Context) ([]*ent.Movie, []*ent.Hall, error) {
	var movies []*ent.Movie
	for _, in := range demoMovies {
		m, err := a.DB.Movie.Query().Where(movie.Title(in.Title)).Order(ent.Asc(movie.FieldID)).First(ctx)
		if ent.IsNotFound(err) {
			return nil, nil, nil
		} else if err != nil {
			return nil, nil, err
		}
		movies = append(movies, m)
	}
	var halls []*ent.Hall
	for i, name := range demoHalls {
		h, err := a.DB.Hall.Query().Where(hall.Name(name)).WithCinema().Order(ent.Asc(hall.FieldID)).First(ctx)
		if ent.IsNotFound(err) && i == len(demoHalls)-1 {
			if err := a.createSecondCinema(ctx, halls[0].Edges.Cinema.TimeZone); err != nil {
				return nil, nil, err
			}
			h, err = a.DB.Hall.Query().Where(hall.Name(name)).WithCinema().Order(ent.Asc(hall.FieldID)).First(ctx)
		}
		if ent.IsNotFound(err) {
			return nil, nil, nil
		} else if err != nil {
			return nil, nil, err
		}
		if h.Edges.Cinema == nil {
			return nil, nil, fmt.Errorf("seed: hall %q has no cinema (the database is not migrated)", name)
		}
		halls = append(halls, h)
	}
	return movies, halls, nil
}

// createSecondCinema adds the second demo cinema, in a zone other than defaultZone, with
// Harbour 1 (80 seats).
func (a *Seeder) createSecondCinema(ctx context.Context, defaultZone string) error {
	c, err := a.Catalog.CreateCinema(ctx, catalog.CinemaInput{Name: secondCinema, TimeZone: secondZone(defaultZone),
		Address: ptr("1 Quay Street")})
	if err != nil {
		return fmt.Errorf("seed cinema: %w", err)
	}
	if _, err := a.Catalog.CreateHall(ctx, catalog.HallInput{Name: demoHalls[2], Rows: tenByEight(), CinemaID: &c.ID}); err != nil {
		return fmt.Errorf("seed hall: %w", err)
	}
	return nil
}

// tenByEight is a hall of rows A–H of 10 standard seats.
func tenByEight() []catalog.HallRowInput {
	var rows []catalog.HallRowInput
	for i := 0; i < 8; i++ {
		rows = append(rows, catalog.HallRowInput{Label: string(rune('A' + i)), Seats: 10})
	}
	return rows
}

// createCatalog creates the demo movies and the default cinema's halls (demoCatalog then
// adds the second cinema).
func (a *Seeder) createCatalog(ctx context.Context) error {
	for _, in := range demoMovies {
		if _, err := a.Catalog.CreateMovie(ctx, in); err != nil {
			return fmt.Errorf("seed movie: %w", err)
		}
	}
	// Hall 1: rows A–L, 150 seats; A has four wheelchair spaces (1, 2, 9, 10) with their
	// companion seats beside them (3, 4, 7, 8), G–H are premium, and the front row keeps
	// two seats back for staff.
	var rows []catalog.HallRowInput
	for i, n := range []int{10, 10, 12, 12, 12, 12, 14, 14, 14, 14, 13, 13} {
		label := string(rune('A' + i))
		row := catalog.HallRowInput{Label: label, Seats: n}
		switch label {
		case "A":
			row.Accessible, row.Companion, row.Unsellable = []int{1, 2, 9, 10}, []int{3, 4, 7, 8}, []int{5, 6}
		case "G", "H":
			row.Kind = ptr(seatflow.SeatPremium)
		}
		rows = append(rows, row)
	}
	if _, err := a.Catalog.CreateHall(ctx, catalog.HallInput{Name: demoHalls[0], Rows: rows}); err != nil {
		return fmt.Errorf("seed hall: %w", err)
	}
	if _, err := a.Catalog.CreateHall(ctx, catalog.HallInput{Name: demoHalls[1], Rows: tenByEight()}); err != nil {
		return fmt.Errorf("seed hall: %w", err)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
