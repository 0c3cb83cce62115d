package app

import (
	"slices"
	"strings"
	"testing"
	"time"

	"seatflow/internal/nodeid"
)

const createCinemaQ = `mutation($in: CinemaInput!) { createCinema(input: $in) { id name timeZone address } }`

func (a *testApp) createCinema(name, zone string) string {
	a.t.Helper()
	var out struct{ CreateCinema struct{ ID string } }
	a.must(a.admin, createCinemaQ, map[string]any{"in": map[string]any{"name": name, "timeZone": zone}}, &out)
	return out.CreateCinema.ID
}

// createHallIn makes a hall of one row of n seats in a cinema.
func (a *testApp) createHallIn(cinemaID, name string, n int) string {
	a.t.Helper()
	var out struct{ CreateHall struct{ ID string } }
	a.must(a.admin, `mutation($in: HallInput!) { createHall(input: $in) { id } }`, map[string]any{"in": map[string]any{
		"name": name, "cinemaId": cinemaID, "rows": []map[string]any{{"label": "A", "seats": n}}}}, &out)
	return out.CreateHall.ID
}

// showtimesOn lists the ids of a day's showtimes of one cinema ("": every cinema).
func (a *testApp) showtimesOn(day, cinemaID string) []string {
	a.t.Helper()
	vars := map[string]any{"d": day}
	q := `query($d: Date!) { showtimes(date: $d) { id } }`
	if cinemaID != "" {
		vars["c"] = cinemaID
		q = `query($d: Date!, $c: ID) { showtimes(date: $d, cinemaId: $c) { id } }`
	}
	var out struct{ Showtimes []struct{ ID string } }
	a.must("", q, vars, &out)
	got := make([]string, len(out.Showtimes))
	for i, s := range out.Showtimes {
		got[i] = s.ID
	}
	return got
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestCinemasCountTheirOwnDays: two cinemas 14 hours apart (Auckland in daylight time,
// UTC+13; Los Angeles in daylight time, UTC−7). The same instant is on different dates in
// each; a showtime at 23:30 local is on that local day; every way of listing a day agrees
// (Query.showtimes with and without cinemaId, Cinema.showtimes, Movie.showtimes); and
// localStartsAt is the cinema's wall clock while startsAt stays the instant.
func TestCinemasCountTheirOwnDays(t *testing.T) {
	a := newTestApp(t)
	akl, la := a.createCinema("Harbour", "Pacific/Auckland"), a.createCinema("Boulevard", "America/Los_Angeles")
	hAKL, hLA := a.createHallIn(akl, "Harbour 1", 10), a.createHallIn(la, "Boulevard 1", 10)
	movie := a.createMovie("Two Zones", 90)

	instant := time.Date(2030, 3, 21, 12, 0, 0, 0, time.UTC) // Auckland 22 Mar 01:00, Los Angeles 21 Mar 05:00
	sAKL, sLA := a.createShowtime(movie, hAKL, instant), a.createShowtime(movie, hLA, instant)
	late := a.createShowtime(movie, hAKL, time.Date(2030, 3, 25, 23, 30, 0, 0, mustZone(t, "Pacific/Auckland")))

	for _, c := range []struct {
		day, cinema string
		want        []string
	}{
		{"2030-03-22", akl, []string{sAKL}},
		{"2030-03-21", akl, []string{}},
		{"2030-03-21", la, []string{sLA}},
		{"2030-03-22", la, []string{}},
		{"2030-03-21", "", []string{sLA}}, // every cinema, each on its own day
		{"2030-03-22", "", []string{sAKL}},
		{"2030-03-25", akl, []string{late}},
		{"2030-03-24", akl, []string{}},
		{"2030-03-26", akl, []string{}},
		{"2030-03-25", "", []string{late}},
	} {
		if got := a.showtimesOn(c.day, c.cinema); !slices.Equal(got, c.want) {
			t.Errorf("showtimes(date: %s, cinemaId: %q) = %v, want %v", c.day, c.cinema, got, c.want)
		}
	}

	var out struct {
		Cinema struct {
			Name, TimeZone string
			Halls          []struct{ ID string }
			Showtimes      []struct {
				ID, StartsAt, LocalStartsAt string
				Cinema                      struct{ ID string }
				Hall                        struct{ Cinema struct{ ID, TimeZone string } }
			}
		}
		Movie struct {
			Showtimes []struct{ ID string }
		}
	}
	a.must("", `query($c: ID!, $m: ID!) {
		cinema(id: $c) { name timeZone halls { id } showtimes(date: "2030-03-22") { id startsAt localStartsAt cinema { id } hall { cinema { id timeZone } } } }
		movie(id: $m) { showtimes(date: "2030-03-22", cinemaId: $c) { id } } }`, map[string]any{"c": akl, "m": movie}, &out)
	c := out.Cinema
	if c.Name != "Harbour" || c.TimeZone != "Pacific/Auckland" || len(c.Halls) != 1 || c.Halls[0].ID != hAKL {
		t.Fatalf("cinema = %+v", c)
	}
	if len(c.Showtimes) != 1 || c.Showtimes[0].ID != sAKL || c.Showtimes[0].StartsAt != "2030-03-21T12:00:00Z" ||
		c.Showtimes[0].LocalStartsAt != "2030-03-22T01:00:00" || c.Showtimes[0].Cinema.ID != akl ||
		c.Showtimes[0].Hall.Cinema.ID != akl || c.Showtimes[0].Hall.Cinema.TimeZone != "Pacific/Auckland" {
		t.Fatalf("Cinema.showtimes(2030-03-22) = %+v, want %s at 2030-03-21T12:00:00Z, local 2030-03-22T01:00:00", c.Showtimes, sAKL)
	}
	if s := out.Movie.Showtimes; len(s) != 1 || s[0].ID != sAKL {
		t.Fatalf("Movie.showtimes(2030-03-22, Auckland) = %+v, want [%s]", s, sAKL)
	}

	var both struct {
		Movie struct {
			Showtimes []struct{ ID, LocalStartsAt string }
		}
	}
	a.must("", `query($m: ID!) { movie(id: $m) { showtimes(date: "2030-03-21") { id localStartsAt } } }`, map[string]any{"m": movie}, &both)
	if s := both.Movie.Showtimes; len(s) != 1 || s[0].ID != sLA || s[0].LocalStartsAt != "2030-03-21T05:00:00" {
		t.Fatalf("Movie.showtimes(2030-03-21) = %+v, want only %s at 05:00 local (Los Angeles)", s, sLA)
	}
}

// TestShowtimeMovedAcrossLocalMidnightOnEveryInstance: a showtime at 23:30 in Auckland is
// on that day on two instances sharing Redis (each with its list memoised locally); moved
// an hour later through one instance, it is on the next day and gone from the old one on
// both, as the broadcast invalidation of the cinema-day lists reaches them, and moved back
// it returns. Los Angeles' list of the same dates is untouched.
func TestShowtimeMovedAcrossLocalMidnightOnEveryInstance(t *testing.T) {
	a := newTestApp(t)
	b := a.sibling()
	akl, la := a.createCinema("Harbour", "Pacific/Auckland"), a.createCinema("Boulevard", "America/Los_Angeles")
	hAKL, hLA := a.createHallIn(akl, "Harbour 1", 10), a.createHallIn(la, "Boulevard 1", 10)
	movie := a.createMovie("Midnight", 60)
	auckland := mustZone(t, "Pacific/Auckland")
	at := time.Date(2030, 3, 25, 23, 30, 0, 0, auckland)
	show := a.createShowtime(movie, hAKL, at)
	laShow := a.createShowtime(movie, hLA, time.Date(2030, 3, 25, 12, 0, 0, 0, mustZone(t, "America/Los_Angeles")))

	want := func(name string, inst *testApp, day, cinema string, ids ...string) {
		t.Helper()
		if ids == nil {
			ids = []string{}
		}
		deadline := time.Now().Add(2 * time.Second) // the local level would keep a stale list 60 s
		for {
			got := inst.showtimesOn(day, cinema)
			if slices.Equal(got, ids) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: showtimes(%s, %s) = %v, want %v", name, day, cinema, got, ids)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for _, inst := range []*testApp{a, b} {
		for range 3 { // memoised locally, and in the response cache
			want("before", inst, "2030-03-25", akl, show)
			want("before", inst, "2030-03-26", akl)
			want("before", inst, "2030-03-25", "", show, laShow) // 10:30Z, then 19:00Z
		}
	}
	move := func(to time.Time) {
		a.must(a.admin, `mutation($id: ID!, $at: Time!) { rescheduleShowtime(id: $id, startsAt: $at) { id } }`,
			map[string]any{"id": show, "at": to.UTC().Format(time.RFC3339)}, nil)
	}
	move(at.Add(time.Hour)) // 00:30 on the 26th in Auckland
	for name, inst := range map[string]*testApp{"writer": a, "sibling": b} {
		want(name+" after the move", inst, "2030-03-25", akl)
		want(name+" after the move", inst, "2030-03-26", akl, show)
		want(name+" after the move", inst, "2030-03-25", "", laShow)
		want(name+" after the move", inst, "2030-03-26", "", show)
		want(name+" after the move", inst, "2030-03-25", la, laShow)
	}
	var local struct {
		Showtime struct{ LocalStartsAt string }
	}
	b.must("", `query($id: ID!) { showtime(id: $id) { localStartsAt } }`, map[string]any{"id": show}, &local)
	if local.Showtime.LocalStartsAt != "2030-03-26T00:30:00" {
		t.Fatalf("localStartsAt after the move = %q, want 2030-03-26T00:30:00", local.Showtime.LocalStartsAt)
	}
	move(at)
	for name, inst := range map[string]*testApp{"writer": a, "sibling": b} {
		want(name+" moved back", inst, "2030-03-25", akl, show)
		want(name+" moved back", inst, "2030-03-26", akl)
	}
	// A cancelled showtime leaves its cinema's day on both.
	a.must(a.admin, `mutation($id: ID!) { cancelShowtime(id: $id) { id } }`, map[string]any{"id": show}, nil)
	for name, inst := range map[string]*testApp{"writer": a, "sibling": b} {
		want(name+" cancelled", inst, "2030-03-25", akl)
	}
}

// TestDaylightSavingDaysListExactlyTheirShowtimes: in Auckland 7 April 2030 lasts 25 hours
// (daylight time ends) and 29 September 2030 23 (it starts). Each lists exactly the
// showtimes from its local midnight to the next, one just inside each end and none of
// those just outside.
func TestDaylightSavingDaysListExactlyTheirShowtimes(t *testing.T) {
	a := newTestApp(t)
	akl := a.createCinema("Harbour", "Pacific/Auckland")
	hall := a.createHallIn(akl, "Harbour 1", 10)
	movie := a.createMovie("Short", 10)
	loc := mustZone(t, "Pacific/Auckland")
	for _, c := range []struct {
		day   string
		hours float64
	}{{"2030-04-07", 25}, {"2030-09-29", 23}} {
		start, _ := time.ParseInLocation(time.DateOnly, c.day, loc)
		end := start.AddDate(0, 0, 1)
		if got := end.Sub(start).Hours(); got != c.hours {
			t.Fatalf("%s lasts %v hours in Auckland, want %v: the zone data changed", c.day, got, c.hours)
		}
		before := a.createShowtime(movie, hall, start.Add(-10*time.Minute))
		first := a.createShowtime(movie, hall, start.Add(5*time.Minute))
		last := a.createShowtime(movie, hall, end.Add(-10*time.Minute))
		after := a.createShowtime(movie, hall, end.Add(10*time.Minute))
		if got := a.showtimesOn(c.day, akl); !slices.Equal(got, []string{first, last}) {
			t.Errorf("%s (%v hours): showtimes = %v, want [%s %s] (not %s, %s)", c.day, c.hours, got, first, last, before, after)
		}
		if got := a.showtimesOn(c.day, ""); !slices.Equal(got, []string{first, last}) {
			t.Errorf("%s across cinemas: showtimes = %v, want [%s %s]", c.day, got, first, last)
		}
		prev, next := start.AddDate(0, 0, -1).Format(time.DateOnly), end.Format(time.DateOnly)
		if got := a.showtimesOn(prev, akl); !slices.Contains(got, before) || slices.Contains(got, first) {
			t.Errorf("%s: showtimes = %v, want %s and not %s", prev, got, before, first)
		}
		if got := a.showtimesOn(next, akl); !slices.Contains(got, after) || slices.Contains(got, last) {
			t.Errorf("%s: showtimes = %v, want %s and not %s", next, got, after, last)
		}
	}
}

// TestCinemaAPI: the default cinema (the migration's, in SEATFLOW_TIMEZONE) holds halls
// created without a cinema, so clients from before cinemas keep working; cinemas list in
// the order they were added; node(id:) and nodes(ids:) fetch a cinema; updateCinema
// replaces its details and a new zone moves its showtimes' days.
func TestCinemaAPI(t *testing.T) {
	a := newTestApp(t, "-timezone", "Europe/Paris")
	legacyHall := a.createHall("Old Screen", 2, 5)
	movie := a.createMovie("Legacy", 90)
	paris := mustZone(t, "Europe/Paris")
	show := a.createShowtime(movie, legacyHall, time.Date(2030, 3, 20, 23, 30, 0, 0, paris))
	if got := a.showtimesOn("2030-03-20", ""); !slices.Equal(got, []string{show}) {
		t.Fatalf("showtimes(2030-03-20) without a cinema = %v, want [%s] (Paris' day)", got, show)
	}
	if got := a.showtimesOn("2030-03-21", ""); len(got) != 0 {
		t.Fatalf("showtimes(2030-03-21) = %v, want none yet", got)
	}
	second := a.createCinema("Second", "Asia/Tokyo")

	var list struct {
		Cinemas []struct {
			ID, Name, TimeZone, Address string
			Halls                       []struct{ ID, Name string }
		}
		Hall struct{ Cinema struct{ ID, Name string } }
	}
	a.must("", `query($h: ID!) { cinemas { id name timeZone address halls { id name } } hall: node(id: $h) { ... on Hall { cinema { id name } } } }`,
		map[string]any{"h": legacyHall}, &list)
	if len(list.Cinemas) != 2 || list.Cinemas[0].Name != "SeatFlow" || list.Cinemas[0].TimeZone != "Europe/Paris" ||
		len(list.Cinemas[0].Halls) != 1 || list.Cinemas[0].Halls[0].ID != legacyHall || list.Cinemas[1].ID != second ||
		len(list.Cinemas[1].Halls) != 0 {
		t.Fatalf("cinemas = %+v, want the default SeatFlow (Europe/Paris) with the hall, then Second", list.Cinemas)
	}
	if list.Hall.Cinema.ID != list.Cinemas[0].ID {
		t.Fatalf("the hall's cinema = %+v, want the default", list.Hall.Cinema)
	}
	def := list.Cinemas[0].ID
	if typ, _, err := nodeid.Decode(def); err != nil || typ != nodeid.Cinema {
		t.Fatalf("a cinema's id %q decodes to %s, %v", def, typ, err)
	}

	var nodes struct {
		Node  struct{ Name, TimeZone string }
		Nodes []*struct{ Name string }
	}
	a.must("", `query($id: ID!, $ids: [ID!]!) { node(id: $id) { ... on Cinema { name timeZone } } nodes(ids: $ids) { ... on Cinema { name } } }`,
		map[string]any{"id": second, "ids": []string{def, second, nodeid.Encode(nodeid.Cinema, 9999)}}, &nodes)
	if nodes.Node.Name != "Second" || nodes.Node.TimeZone != "Asia/Tokyo" || len(nodes.Nodes) != 3 ||
		nodes.Nodes[0].Name != "SeatFlow" || nodes.Nodes[1].Name != "Second" || nodes.Nodes[2] != nil {
		t.Fatalf("node/nodes of cinemas = %+v", nodes)
	}
	var missing struct{ Cinema *struct{ ID string } }
	a.must("", `query($id: ID!) { cinema(id: $id) { id } }`, map[string]any{"id": nodeid.Encode(nodeid.Cinema, 9999)}, &missing)
	if missing.Cinema != nil {
		t.Fatalf("cinema(unknown id) = %+v, want null", missing.Cinema)
	}

	// The default cinema moves to Tokyo (UTC+9): 23:30 in Paris (UTC+1) is 07:30 the next day.
	var upd struct {
		UpdateCinema struct{ Name, TimeZone, Address string }
	}
	a.must(a.admin, `mutation($id: ID!) { updateCinema(id: $id, input: {name: " Flagship ", timeZone: "Asia/Tokyo", address: "1 Main St"}) { name timeZone address } }`,
		map[string]any{"id": def}, &upd)
	if upd.UpdateCinema != (struct{ Name, TimeZone, Address string }{"Flagship", "Asia/Tokyo", "1 Main St"}) {
		t.Fatalf("updateCinema = %+v", upd.UpdateCinema)
	}
	if got := a.showtimesOn("2030-03-20", def); len(got) != 0 {
		t.Fatalf("after the zone change, 2030-03-20 = %v, want none", got)
	}
	if got := a.showtimesOn("2030-03-21", def); !slices.Equal(got, []string{show}) {
		t.Fatalf("after the zone change, 2030-03-21 = %v, want [%s]", got, show)
	}
	var local struct {
		Showtime struct{ LocalStartsAt string }
	}
	a.must("", `query($id: ID!) { showtime(id: $id) { localStartsAt } }`, map[string]any{"id": show}, &local)
	if local.Showtime.LocalStartsAt != "2030-03-21T07:30:00" {
		t.Fatalf("localStartsAt in Tokyo = %q, want 2030-03-21T07:30:00", local.Showtime.LocalStartsAt)
	}
}

// TestCinemaBadInput: a cinema's details are checked (BAD_USER_INPUT), unknown cinemas are
// NOT_FOUND wherever an id is taken, and only admins add or change cinemas.
func TestCinemaBadInput(t *testing.T) {
	a := newTestApp(t)
	cinema := a.createCinema("Harbour", "Pacific/Auckland")
	unknown := nodeid.Encode(nodeid.Cinema, 9999)
	movie := a.createMovie("M", 90)
	in := func(name, zone string) map[string]any {
		return map[string]any{"in": map[string]any{"name": name, "timeZone": zone}}
	}
	for name, vars := range map[string]map[string]any{
		"UnknownZone":    in("X", "Mars/Olympus_Mons"),
		"LocalZone":      in("X", "Local"),
		"EmptyZone":      in("X", ""),
		"ZoneTooLong":    in("X", strings.Repeat("a/", 40)),
		"EmptyName":      in("  ", "UTC"),
		"NameTooLong":    in(strings.Repeat("é", 101), "UTC"),
		"ControlInName":  in("Bad\x00Name", "UTC"),
		"AddressTooLong": {"in": map[string]any{"name": "X", "timeZone": "UTC", "address": strings.Repeat("a", 301)}},
	} {
		t.Run(name, func(t *testing.T) { a.wantCode(a.admin, createCinemaQ, vars, "BAD_USER_INPUT") })
	}
	update := `mutation($id: ID!, $in: CinemaInput!) { updateCinema(id: $id, input: $in) { id } }`
	t.Run("UpdateBadZone", func(t *testing.T) {
		a.wantCode(a.admin, update, map[string]any{"id": cinema, "in": map[string]any{"name": "X", "timeZone": "Local"}}, "BAD_USER_INPUT")
	})
	t.Run("UpdateUnknownCinema", func(t *testing.T) {
		a.wantCode(a.admin, update, map[string]any{"id": unknown, "in": map[string]any{"name": "X", "timeZone": "UTC"}}, "NOT_FOUND")
	})
	t.Run("UpdateWithAMovieID", func(t *testing.T) {
		a.wantCode(a.admin, update, map[string]any{"id": movie, "in": map[string]any{"name": "X", "timeZone": "UTC"}}, "NOT_FOUND")
	})
	hall := `mutation($in: HallInput!) { createHall(input: $in) { id } }`
	rows := []map[string]any{{"label": "A", "seats": 5}}
	t.Run("HallInUnknownCinema", func(t *testing.T) {
		a.wantCode(a.admin, hall, map[string]any{"in": map[string]any{"name": "H", "rows": rows, "cinemaId": unknown}}, "NOT_FOUND")
	})
	t.Run("HallInAMovie", func(t *testing.T) {
		a.wantCode(a.admin, hall, map[string]any{"in": map[string]any{"name": "H", "rows": rows, "cinemaId": movie}}, "NOT_FOUND")
	})
	t.Run("HallCinemaMalformed", func(t *testing.T) {
		a.wantCode(a.admin, hall, map[string]any{"in": map[string]any{"name": "H", "rows": rows, "cinemaId": "nope"}}, "BAD_USER_INPUT")
	})
	t.Run("ShowtimesOfUnknownCinema", func(t *testing.T) {
		a.wantCode("", `query($c: ID) { showtimes(date: "2030-03-20", cinemaId: $c) { id } }`, map[string]any{"c": unknown}, "NOT_FOUND")
	})
	t.Run("MovieShowtimesOfUnknownCinema", func(t *testing.T) {
		a.wantCode("", `query($m: ID!, $c: ID) { movie(id: $m) { showtimes(cinemaId: $c) { id } } }`, map[string]any{"m": movie, "c": unknown}, "NOT_FOUND")
	})
	for _, c := range []struct{ name, token, code string }{
		{"Anonymous", "", "UNAUTHENTICATED"},
		{"Customer", a.token("alice", "customer"), "FORBIDDEN"},
		{"Staff", a.token("door", "staff"), "FORBIDDEN"},
	} {
		t.Run("Create"+c.name, func(t *testing.T) { a.wantCode(c.token, createCinemaQ, in("X", "UTC"), c.code) })
		t.Run("Update"+c.name, func(t *testing.T) {
			a.wantCode(c.token, update, map[string]any{"id": cinema, "in": map[string]any{"name": "X", "timeZone": "UTC"}}, c.code)
		})
	}
	var after struct{ Cinemas []struct{ Name string } }
	a.must("", `{ cinemas { name } }`, nil, &after)
	if len(after.Cinemas) != 2 || after.Cinemas[1].Name != "Harbour" {
		t.Fatalf("cinemas after refused writes = %+v, want the default and Harbour unchanged", after.Cinemas)
	}
}
