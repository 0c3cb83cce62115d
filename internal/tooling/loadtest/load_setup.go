package loadtest

import (
	"context"
	"fmt"
	"sort"
	"time"

	"seatflow/internal/tooling/gqlclient"
)

// call is a plain GraphQL request for setup and the final reconciles (not load traffic).
func (l *loadRun) call(ctx context.Context, addr, token, query string, vars map[string]any, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	return gqlclient.New("http://"+addr, nil).Do(ctx, token, query, vars, out)
}

// setupCatalog creates the premiere's catalog through the admin API: movies, halls of 200
// seats, showtimes tomorrow and the day after, all on sale. The 18:00 shows are hot.
func (l *loadRun) setupCatalog(ctx context.Context) error {
	addr := l.o.Instances[0]
	movies := []struct {
		title string
		dur   int
	}{{"Premiere: The Last Reel", 150}, {"Night Owls", 110}, {"Paper Moons", 95}}
	for i, m := range movies {
		var out struct{ CreateMovie struct{ ID string } }
		err := l.call(ctx, addr, l.admin, `mutation($in: MovieInput!) { createMovie(input: $in) { id } }`,
			map[string]any{"in": map[string]any{"title": fmt.Sprintf("%s (%s)", m.title, l.runTag), "durationMinutes": m.dur,
				"genres": []string{"Drama"}, "rating": "PG-13", "synopsis": fmt.Sprintf("load test movie %d", i)}}, &out)
		if err != nil {
			return fmt.Errorf("createMovie: %w", err)
		}
		l.movieIDs = append(l.movieIDs, out.CreateMovie.ID)
	}
	const halls = 4
	type seat struct {
		ID       string
		Row      string
		Number   int
		Sellable bool
	}
	var hallSeats [][]seat
	var hallIDs []string
	for h := 0; h < halls; h++ {
		rows := []map[string]any{}
		for r := 0; r < 10; r++ {
			row := map[string]any{"label": string(rune('A' + r)), "seats": 20}
			switch {
			case r == 0:
				row["kind"] = "ACCESSIBLE"
				row["unsellable"] = []int{10, 11}
			case r >= 8:
				row["kind"] = "PREMIUM"
			}
			rows = append(rows, row)
		}
		var out struct {
			CreateHall struct {
				ID    string
				Seats []seat
			}
		}
		err := l.call(ctx, addr, l.admin, `mutation($in: HallInput!) { createHall(input: $in) { id seats { id row number sellable } } }`,
			map[string]any{"in": map[string]any{"name": fmt.Sprintf("Load hall %d (%s)", h+1, l.runTag), "rows": rows}}, &out)
		if err != nil {
			return fmt.Errorf("createHall: %w", err)
		}
		hallIDs = append(hallIDs, out.CreateHall.ID)
		hallSeats = append(hallSeats, out.CreateHall.Seats)
	}
	tomorrow := time.Now().UTC().AddDate(0, 0, 1)
	day := func(d time.Time, hour int) time.Time {
		return time.Date(d.Year(), d.Month(), d.Day(), hour, 0, 0, 0, time.UTC)
	}
	l.dates = []string{tomorrow.Format("2006-01-02"), tomorrow.AddDate(0, 0, 1).Format("2006-01-02")}
	prices := []map[string]any{{"kind": "STANDARD", "amountCents": 1200}, {"kind": "PREMIUM", "amountCents": 1800},
		{"kind": "ACCESSIBLE", "amountCents": 1000}}
	for h := 0; h < halls; h++ {
		for _, slot := range []struct {
			at  time.Time
			hot bool
		}{{day(tomorrow, 18), true}, {day(tomorrow, 13), false}, {day(tomorrow.AddDate(0, 0, 1), 18), false}} {
			var out struct{ CreateShowtime struct{ ID string } }
			err := l.call(ctx, addr, l.admin, `mutation($in: ShowtimeInput!) { createShowtime(input: $in) { id } }`,
				map[string]any{"in": map[string]any{"movieId": l.movieIDs[h%len(l.movieIDs)], "hallId": hallIDs[h],
					"startsAt": slot.at.Format(time.RFC3339), "prices": prices, "purchaseLimit": 6}}, &out)
			if err != nil {
				return fmt.Errorf("createShowtime: %w", err)
			}
			id := out.CreateShowtime.ID
			if err := l.call(ctx, addr, l.admin, `mutation($id: ID!) { openSales(showtimeId: $id) { id status } }`,
				map[string]any{"id": id}, nil); err != nil {
				return fmt.Errorf("openSales: %w", err)
			}
			l.showIDs = append(l.showIDs, id)
			if slot.hot {
				hs := hotShow{id: id}
				byRow := map[string][]seat{}
				for _, s := range hallSeats[h] {
					if s.Sellable {
						byRow[s.Row] = append(byRow[s.Row], s)
					}
				}
				labels := make([]string, 0, len(byRow))
				for r := range byRow {
					labels = append(labels, r)
				}
				sort.Strings(labels)
				for _, r := range labels {
					ss := byRow[r]
					sort.Slice(ss, func(i, j int) bool { return ss[i].Number < ss[j].Number })
					ids := make([]string, len(ss))
					for i, s := range ss {
						ids[i] = s.ID
					}
					hs.rows = append(hs.rows, ids)
				}
				l.hot = append(l.hot, hs)
			}
		}
	}
	l.logf("catalog: %d movies, %d halls of 200 seats, %d showtimes on sale (%d hot)", len(l.movieIDs), halls, len(l.showIDs), len(l.hot))
	return nil
}
