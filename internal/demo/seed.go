package demo

import (
	"context"
	"fmt"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/internal/catalog"
)

// Catalog is what seeding writes: the catalog's admin operations and opening sales.
type Catalog interface {
	CreateMovie(ctx context.Context, in catalog.MovieInput) (*seatflow.Movie, error)
	CreateHall(ctx context.Context, in catalog.HallInput) (*seatflow.Hall, error)
	CreateShowtime(ctx context.Context, in catalog.ShowtimeInput) (*seatflow.Showtime, error)
}

// Sales opens sales of a seeded showtime.
type Sales interface {
	OpenSales(ctx context.Context, showID int) (*seatflow.Showtime, error)
}

// Seeder fills an empty catalog with the demo data.
type Seeder struct {
	DB      *ent.Client
	Catalog Catalog
	Sales   Sales
	// Location is the cinema's time zone; Now the clock.
	Location *time.Location
	Now      func() time.Time
}

// Seed fills an empty catalog with demo data: four movies, two halls (one of 150 seats
// in rows A–L with premium and accessible seats, one of 80) and showtimes today and
// tomorrow, all on sale. It returns false and does nothing when movies already exist.
func (a *Seeder) Seed(ctx context.Context) (bool, error) {
	if n, err := a.DB.Movie.Query().Count(ctx); err != nil || n > 0 {
		return false, err
	}
	movies := []catalog.MovieInput{
		{Title: "The Last Projectionist", DurationMinutes: 118, Rating: ptr("PG-13"), Genres: []string{"Drama"},
			Synopsis: ptr("A small-town cinema's final night, told from the booth.")},
		{Title: "Orbit of Glass", DurationMinutes: 142, Rating: ptr("PG-13"), Genres: []string{"Sci-Fi", "Adventure"},
			Synopsis: ptr("Two engineers race to repair a failing space elevator.")},
		{Title: "Paper Lanterns", DurationMinutes: 96, Rating: ptr("G"), Genres: []string{"Animation", "Family"},
			Synopsis: ptr("A lantern maker's daughter follows a kite across the city.")},
		{Title: "Night Shift at Marlow Street", DurationMinutes: 107, Rating: ptr("R"), Genres: []string{"Thriller"},
			Synopsis: ptr("A night nurse notices the same visitor at every bedside.")},
	}
	var movieIDs []int
	for _, in := range movies {
		m, err := a.Catalog.CreateMovie(ctx, in)
		if err != nil {
			return false, fmt.Errorf("seed movie: %w", err)
		}
		movieIDs = append(movieIDs, m.ID)
	}
	// Hall 1: rows A–L, 150 seats; A has wheelchair places, G–H are premium, and the
	// front row keeps two seats back for staff.
	var rows []catalog.HallRowInput
	for i, n := range []int{10, 10, 12, 12, 12, 12, 14, 14, 14, 14, 13, 13} {
		label := string(rune('A' + i))
		row := catalog.HallRowInput{Label: label, Seats: n}
		switch label {
		case "A":
			row.Kind, row.Unsellable = ptr(seatflow.SeatAccessible), []int{5, 6}
		case "G", "H":
			row.Kind = ptr(seatflow.SeatPremium)
		}
		rows = append(rows, row)
	}
	big, err := a.Catalog.CreateHall(ctx, catalog.HallInput{Name: "Hall 1", Rows: rows})
	if err != nil {
		return false, fmt.Errorf("seed hall: %w", err)
	}
	rows = nil
	for i := 0; i < 8; i++ {
		rows = append(rows, catalog.HallRowInput{Label: string(rune('A' + i)), Seats: 10})
	}
	small, err := a.Catalog.CreateHall(ctx, catalog.HallInput{Name: "Hall 2", Rows: rows})
	if err != nil {
		return false, fmt.Errorf("seed hall: %w", err)
	}
	prices := []catalog.PriceInput{{Kind: seatflow.SeatStandard, AmountCents: 1200},
		{Kind: seatflow.SeatPremium, AmountCents: 1800}, {Kind: seatflow.SeatAccessible, AmountCents: 1000}}
	loc := a.Location
	now := a.Now().In(loc)
	tomorrow := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, loc)
	starts := []struct {
		at    time.Time
		movie int
		hall  int
	}{
		{now.Add(time.Hour).Truncate(15 * time.Minute), movieIDs[0], big.ID},
		{now.Add(time.Hour).Truncate(15 * time.Minute), movieIDs[2], small.ID},
		{now.Add(4 * time.Hour).Truncate(15 * time.Minute), movieIDs[1], big.ID},
		{tomorrow.Add(14 * time.Hour), movieIDs[2], small.ID},
		{tomorrow.Add(18 * time.Hour), movieIDs[1], big.ID},
		{tomorrow.Add(21*time.Hour + 30*time.Minute), movieIDs[3], big.ID},
	}
	for _, s := range starts {
		if !s.at.After(now) {
			s.at = s.at.Add(15 * time.Minute)
		}
		st, err := a.Catalog.CreateShowtime(ctx, catalog.ShowtimeInput{MovieID: s.movie, HallID: s.hall,
			StartsAt: s.at, Prices: prices})
		if err != nil {
			return false, fmt.Errorf("seed showtime: %w", err)
		}
		if _, err := a.Sales.OpenSales(ctx, st.ID); err != nil {
			return false, fmt.Errorf("seed: open sales: %w", err)
		}
	}
	return true, nil
}

func ptr[T any](v T) *T { return &v }
