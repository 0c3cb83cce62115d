package app

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"seatflow/internal/nodeid"
)

func TestCatalogQueries(t *testing.T) {
	a := newTestApp(t)
	dune := a.createMovie("Dune", 155)
	heat := a.createMovie("Heat", 170)
	hall := a.createHall("Hall 1", 3, 8)
	day1 := testNow.Add(24 * time.Hour).Truncate(24 * time.Hour) // 2030-03-11 00:00
	s1 := a.createShowtime(dune, hall, day1.Add(18*time.Hour))
	s2 := a.createShowtime(heat, hall, day1.Add(21*time.Hour))
	s3 := a.createShowtime(dune, hall, day1.Add(42*time.Hour)) // next day 18:00

	t.Run("MoviesConnectionPages", func(t *testing.T) {
		var out struct {
			Movies struct {
				TotalCount int
				Edges      []struct {
					Cursor string
					Node   struct{ ID, Title string }
				}
				PageInfo struct {
					HasNextPage bool
					EndCursor   string
				}
			}
		}
		a.must("", `{ movies(first: 1) { totalCount edges { cursor node { id title } } pageInfo { hasNextPage endCursor } } }`, nil, &out)
		if out.Movies.TotalCount != 2 || len(out.Movies.Edges) != 1 || !out.Movies.PageInfo.HasNextPage || out.Movies.Edges[0].Node.Title != "Dune" {
			t.Fatalf("first page = %+v", out.Movies)
		}
		a.must("", `query($after: String) { movies(first: 5, after: $after) { totalCount edges { cursor node { id title } } pageInfo { hasNextPage endCursor } } }`,
			map[string]any{"after": out.Movies.PageInfo.EndCursor}, &out)
		if len(out.Movies.Edges) != 1 || out.Movies.PageInfo.HasNextPage || out.Movies.Edges[0].Node.Title != "Heat" {
			t.Fatalf("second page = %+v", out.Movies)
		}
	})

	t.Run("MoviesFilteredByStatus", func(t *testing.T) {
		a.must(a.admin, `mutation($id: ID!) { setMovieStatus(id: $id, status: DELISTED) { status } }`, map[string]any{"id": heat}, nil)
		var out struct {
			Movies struct {
				Edges []struct {
					Node struct{ Title, Status string }
				}
			}
		}
		a.must("", `{ movies(status: LISTED) { edges { node { title status } } } }`, nil, &out)
		if len(out.Movies.Edges) != 1 || out.Movies.Edges[0].Node.Title != "Dune" {
			t.Fatalf("listed movies = %+v", out.Movies.Edges)
		}
		a.must("", `{ movies(status: DELISTED) { edges { node { title status } } } }`, nil, &out)
		if len(out.Movies.Edges) != 1 || out.Movies.Edges[0].Node.Status != "DELISTED" {
			t.Fatalf("delisted movies = %+v", out.Movies.Edges)
		}
	})

	t.Run("ShowtimeWithMovieAndHall", func(t *testing.T) {
		var out struct {
			Showtime struct {
				ID, StartsAt, EndsAt, Status string
				PurchaseLimit                int
				Prices                       []struct {
					Kind        string
					AmountCents int
				}
				Movie struct{ Title string }
				Hall  struct {
					Name  string
					Seats []struct {
						Row          string
						Number, X, Y int
						Kind         string
					}
				}
			}
		}
		a.must("", `query($id: ID!) { showtime(id: $id) { id startsAt endsAt status purchaseLimit prices { kind amountCents }
			movie { title } hall { name seats { row number x y kind } } } }`, map[string]any{"id": s1}, &out)
		st := out.Showtime
		if st.Movie.Title != "Dune" || st.Hall.Name != "Hall 1" || len(st.Hall.Seats) != 24 || st.Status != "SCHEDULED" || st.PurchaseLimit != 6 {
			t.Fatalf("showtime = %+v", st)
		}
		if st.StartsAt != "2030-03-11T18:00:00Z" || st.EndsAt != "2030-03-11T20:35:00Z" {
			t.Fatalf("times = %s – %s, want 18:00 – 20:35 (155 min)", st.StartsAt, st.EndsAt)
		}
		if seat := st.Hall.Seats[8]; seat.Row != "B" || seat.Number != 1 || seat.Kind != "PREMIUM" || seat.Y != 1 {
			t.Fatalf("seat 9 = %+v, want B1 premium on y=1", seat)
		}
	})

	t.Run("MissingIsNull", func(t *testing.T) {
		var out struct{ Showtime, Movie *struct{ ID string } }
		a.must("", `query($s: ID!, $m: ID!) { showtime(id: $s) { id } movie(id: $m) { id } }`,
			map[string]any{"s": nodeid.Encode(nodeid.Showtime, 999999), "m": nodeid.Encode(nodeid.Movie, 999999)}, &out)
		if out.Showtime != nil || out.Movie != nil {
			t.Fatalf("missing ids gave %+v", out)
		}
	})

	t.Run("ShowtimesByDateAndMovie", func(t *testing.T) {
		var out struct{ Showtimes []struct{ ID string } }
		a.must("", `{ showtimes(date: "2030-03-11") { id } }`, nil, &out)
		if got := ids(out.Showtimes); got != s1+","+s2 {
			t.Fatalf("showtimes on 11th = %s, want %s,%s", got, s1, s2)
		}
		a.must("", `query($m: ID) { showtimes(date: "2030-03-11", movieId: $m) { id } }`, map[string]any{"m": heat}, &out)
		if got := ids(out.Showtimes); got != s2 {
			t.Fatalf("heat on 11th = %s, want %s", got, s2)
		}
		a.must("", `{ showtimes(date: "2030-03-12") { id } }`, nil, &out)
		if got := ids(out.Showtimes); got != s3 {
			t.Fatalf("showtimes on 12th = %s, want %s", got, s3)
		}
	})

	t.Run("MovieShowtimesWithDate", func(t *testing.T) {
		var out struct {
			Movie struct {
				All   []struct{ ID string } `json:"all"`
				OnDay []struct{ ID string } `json:"onDay"`
			}
		}
		a.must("", `query($id: ID!) { movie(id: $id) { all: showtimes { id } onDay: showtimes(date: "2030-03-12") { id } } }`, map[string]any{"id": dune}, &out)
		if ids(out.Movie.All) != s1+","+s3 || ids(out.Movie.OnDay) != s3 {
			t.Fatalf("dune showtimes = %+v", out.Movie)
		}
	})

	t.Run("RescheduleMovesBetweenDays", func(t *testing.T) {
		// Fill the cache-facing lists of both days first, then move s2 to the 12th.
		a.must("", `{ a: showtimes(date: "2030-03-11") { id } b: showtimes(date: "2030-03-12") { id } }`, nil, nil)
		var out struct {
			RescheduleShowtime struct{ StartsAt, EndsAt string }
		}
		a.must(a.admin, `mutation($id: ID!, $at: Time!) { rescheduleShowtime(id: $id, startsAt: $at) { startsAt endsAt } }`,
			map[string]any{"id": s2, "at": "2030-03-12T21:00:00Z"}, &out)
		if out.RescheduleShowtime.EndsAt != "2030-03-12T23:50:00Z" {
			t.Fatalf("rescheduled = %+v", out.RescheduleShowtime)
		}
		var days struct{ A, B []struct{ ID string } }
		a.must("", `{ a: showtimes(date: "2030-03-11") { id } b: showtimes(date: "2030-03-12") { id } }`, nil, &days)
		if ids(days.A) != s1 || ids(days.B) != s3+","+s2 {
			t.Fatalf("after reschedule: 11th=%s 12th=%s", ids(days.A), ids(days.B))
		}
	})

	t.Run("CancelledLeavesLists", func(t *testing.T) {
		var out struct{ CancelShowtime struct{ Status string } }
		a.must(a.admin, `mutation($id: ID!) { cancelShowtime(id: $id) { status } }`, map[string]any{"id": s3}, &out)
		if out.CancelShowtime.Status != "CANCELLED" {
			t.Fatalf("status = %s", out.CancelShowtime.Status)
		}
		var days struct{ Showtimes []struct{ ID string } }
		a.must("", `{ showtimes(date: "2030-03-12") { id } }`, nil, &days)
		if ids(days.Showtimes) != s2 {
			t.Fatalf("12th after cancel = %s, want %s", ids(days.Showtimes), s2)
		}
		a.wantCode(a.admin, `mutation($id: ID!) { cancelShowtime(id: $id) { status } }`, map[string]any{"id": s3}, "INVALID_STATE")
		a.wantCode(a.admin, `mutation($id: ID!) { rescheduleShowtime(id: $id, startsAt: "2030-04-01T10:00:00Z") { status } }`, map[string]any{"id": s3}, "INVALID_STATE")
	})

	t.Run("UpdateMovie", func(t *testing.T) {
		var out struct {
			UpdateMovie struct {
				Title           string
				Genres          []string
				DurationMinutes int
			}
		}
		a.must(a.admin, `mutation($id: ID!) { updateMovie(id: $id, input: {title: "  Dune: Part One ", durationMinutes: 156, genres: ["Sci-Fi"]}) { title genres durationMinutes } }`,
			map[string]any{"id": dune}, &out)
		if out.UpdateMovie.Title != "Dune: Part One" || out.UpdateMovie.DurationMinutes != 156 || len(out.UpdateMovie.Genres) != 1 {
			t.Fatalf("updated = %+v", out.UpdateMovie)
		}
	})
}

func ids(list []struct{ ID string }) string {
	var out []string
	for _, x := range list {
		out = append(out, x.ID)
	}
	return strings.Join(out, ",")
}

func TestCatalogBadInput(t *testing.T) {
	a := newTestApp(t)
	movie := a.createMovie("Alien", 117)
	hall := a.createHall("Hall 1", 2, 5)
	future := testNow.Add(48 * time.Hour).Format(time.RFC3339)
	movieIn := func(title string, minutes int) map[string]any {
		return map[string]any{"in": map[string]any{"title": title, "durationMinutes": minutes}}
	}
	hallIn := func(rows ...map[string]any) map[string]any {
		if rows == nil {
			rows = []map[string]any{}
		}
		return map[string]any{"in": map[string]any{"name": "H", "rows": rows}}
	}
	showIn := func(movieID, hallID, at string, prices any) map[string]any {
		return map[string]any{"in": map[string]any{"movieId": movieID, "hallId": hallID, "startsAt": at, "prices": prices}}
	}
	cases := []struct {
		name, query string
		vars        map[string]any
		code, msg   string
	}{
		{"EmptyTitle", createMovieQ, movieIn("   ", 90), "BAD_USER_INPUT", "title must not be empty"},
		{"ZeroDuration", createMovieQ, movieIn("X", 0), "BAD_USER_INPUT", "durationMinutes"},
		{"BadPosterURL", createMovieQ, map[string]any{"in": map[string]any{"title": "X", "durationMinutes": 90, "posterUrl": "javascript:alert(1)"}}, "BAD_USER_INPUT", "posterUrl"},
		{"UpdateUnknownMovie", `mutation($id: ID!) { updateMovie(id: $id, input: {title: "X", durationMinutes: 9}) { id } }`,
			map[string]any{"id": nodeid.Encode(nodeid.Movie, 424242)}, "NOT_FOUND", "movie 424242 does not exist"},
		{"IDOfAnotherType", `mutation($id: ID!) { updateMovie(id: $id, input: {title: "X", durationMinutes: 9}) { id } }`,
			map[string]any{"id": hall}, "NOT_FOUND", "no movie has the id"},
		{"DatabaseIDRefused", `mutation { setMovieStatus(id: "1", status: LISTED) { id } }`, nil, "BAD_USER_INPUT", "not a valid id"},
		{"MalformedID", `mutation { setMovieStatus(id: "abc", status: LISTED) { id } }`, nil, "BAD_USER_INPUT", "not a valid id"},
		{"HallWithNoRows", createHallQ, hallIn(), "BAD_USER_INPUT", "at least one row"},
		{"HallRowWithZeroSeats", createHallQ, hallIn(map[string]any{"label": "A", "seats": 0}), "BAD_USER_INPUT", "seats must be between"},
		{"HallDuplicateRows", createHallQ, hallIn(map[string]any{"label": "A", "seats": 3}, map[string]any{"label": "a", "seats": 3}), "BAD_USER_INPUT", "used twice"},
		{"HallUnsellableOutsideRow", createHallQ, hallIn(map[string]any{"label": "A", "seats": 3, "unsellable": []int{4}}), "BAD_USER_INPUT", "not a seat of the row"},
		{"HallAllUnsellable", createHallQ, hallIn(map[string]any{"label": "A", "seats": 2, "unsellable": []int{1, 2}}), "BAD_USER_INPUT", "at least one sellable"},
		{"ShowtimeUnknownMovie", createShowtimeQ, showIn(nodeid.Encode(nodeid.Movie, 777777), hall, future, allPrices), "NOT_FOUND", "movie 777777 does not exist"},
		{"ShowtimeUnknownHall", createShowtimeQ, showIn(movie, nodeid.Encode(nodeid.Hall, 777777), future, allPrices), "NOT_FOUND", "hall 777777 does not exist"},
		{"ShowtimeInThePast", createShowtimeQ, showIn(movie, hall, testNow.Add(-time.Minute).Format(time.RFC3339), allPrices), "BAD_USER_INPUT", "in the past"},
		{"ShowtimeBadTime", createShowtimeQ, showIn(movie, hall, "tomorrow at 8", allPrices), "BAD_USER_INPUT", "RFC 3339"},
		{"ShowtimePriceMissingKind", createShowtimeQ, showIn(movie, hall, future, []map[string]any{{"kind": "STANDARD", "amountCents": 900}}), "BAD_USER_INPUT", "prices miss PREMIUM"},
		{"ShowtimeNegativePrice", createShowtimeQ, showIn(movie, hall, future, []map[string]any{{"kind": "STANDARD", "amountCents": -1}, {"kind": "PREMIUM", "amountCents": 1}}), "BAD_USER_INPUT", "between 0 and"},
		{"ShowtimesBadDate", `{ showtimes(date: "2030-13-45") { id } }`, nil, "BAD_USER_INPUT", "YYYY-MM-DD"},
		{"MoviesFirstTooLarge", `{ movies(first: 1000) { totalCount } }`, nil, "BAD_USER_INPUT", "first must be"},
		{"MoviesBadCursor", `{ movies(after: "nonsense") { totalCount } }`, nil, "BAD_USER_INPUT", "cursor"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := a.wantCode(a.admin, c.query, c.vars, c.code)
			if !strings.Contains(r.Errors[0].Message, c.msg) {
				t.Fatalf("message = %q, want it to mention %q", r.Errors[0].Message, c.msg)
			}
		})
	}

	t.Run("OverlappingShowtimeInHall", func(t *testing.T) {
		a.createShowtime(movie, hall, testNow.Add(72*time.Hour))
		r := a.wantCode(a.admin, createShowtimeQ, showIn(movie, hall, testNow.Add(73*time.Hour).Format(time.RFC3339), allPrices), "BAD_USER_INPUT")
		if !strings.Contains(r.Errors[0].Message, "hall is busy") {
			t.Fatalf("message = %q", r.Errors[0].Message)
		}
	})

	t.Run("DelistedMovieGetsNoShowtimes", func(t *testing.T) {
		m := a.createMovie("Old", 90)
		a.must(a.admin, `mutation($id: ID!) { setMovieStatus(id: $id, status: DELISTED) { id } }`, map[string]any{"id": m}, nil)
		a.wantCode(a.admin, createShowtimeQ, showIn(m, hall, testNow.Add(200*time.Hour).Format(time.RFC3339), allPrices), "BAD_USER_INPUT")
	})

	t.Run("NothingWrittenOnRejection", func(t *testing.T) {
		n, err := a.DB.Hall.Query().Count(t.Context())
		if err != nil || n != 1 {
			t.Fatalf("halls = %d (%v), want only the fixture", n, err)
		}
	})
}

func TestAuthOnAdminMutations(t *testing.T) {
	a := newTestApp(t)
	q := `mutation { createMovie(input: {title: "X", durationMinutes: 90}) { id } }`
	expired, _ := (&App{}).authWith(a, -time.Hour)
	cases := []struct{ name, token, code string }{
		{"NoToken", "", "UNAUTHENTICATED"},
		{"GarbageToken", "not-a-jwt", "UNAUTHENTICATED"},
		{"ExpiredToken", expired, "UNAUTHENTICATED"},
		{"Customer", a.token("alice", "customer"), "FORBIDDEN"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { a.wantCode(c.token, q, nil, c.code) })
	}
	t.Run("AdminAllowed", func(t *testing.T) { a.must(a.admin, q, nil, nil) })
	t.Run("PublicReadsNeedNoToken", func(t *testing.T) { a.must("", `{ movies { totalCount } }`, nil, nil) })
	t.Run("InvalidTokenRefusedEvenForPublicReads", func(t *testing.T) {
		r := a.wantCode("garbage", `{ movies { totalCount } }`, nil, "UNAUTHENTICATED")
		if r.Status != 401 {
			t.Fatalf("status = %d, want 401", r.Status)
		}
	})
}

// authWith issues an admin token valid for ttl (negative: already expired).
func (*App) authWith(a *testApp, ttl time.Duration) (string, error) {
	return a.Auth.Issue("admin-1", "admin", ttl)
}

func TestInternalErrorsLeakNothing(t *testing.T) {
	a := newTestApp(t)
	a.createMovie("X", 90)
	if _, err := a.SQL.Exec("DROP TABLE showtimes"); err != nil {
		t.Fatal(err)
	}
	r := a.wantCode("", `{ showtimes(date: "2030-03-11") { id } }`, nil, "INTERNAL")
	if r.Errors[0].Message != "internal error" {
		t.Fatalf("message = %q, want a message that reveals nothing", r.Errors[0].Message)
	}
	if !strings.Contains(a.logBuf.String(), "showtimes") {
		t.Fatalf("the cause was not logged: %s", a.logBuf.String())
	}
}

// TestLoaderQueryCount proves a page of showtimes with their movie and hall costs a
// constant number of SQL statements, and that each showtime gets its own movie. The
// catalog cache is off, so every request reaches MySQL and only the loaders batch.
func TestLoaderQueryCount(t *testing.T) {
	// A wide batch window: on a busy machine the 20 field resolvers of the page may need
	// more than the default 2 ms to enqueue, and a split batch would cost one more query.
	a := newTestApp(t, "-cache=false", "-loader-wait", "50ms")
	hall := a.createHall("Hall 1", 2, 4)
	day := testNow.Add(24 * time.Hour).Truncate(24 * time.Hour)
	var want []string
	for i := 0; i < 20; i++ {
		title := fmt.Sprintf("Movie %02d", i)
		m := a.createMovie(title, 30)
		a.createShowtime(m, hall, day.Add(time.Duration(i)*40*time.Minute))
		want = append(want, title)
	}
	query := `{ showtimes(date: "2030-03-11") { id movie { title } hall { name seats { id } } } }`
	count := func() (int64, []string) {
		a.db.Queries.Reset()
		var out struct {
			Showtimes []struct {
				Movie struct{ Title string }
				Hall  struct{ Name string }
			}
		}
		a.must("", query, nil, &out)
		var titles []string
		for _, s := range out.Showtimes {
			titles = append(titles, s.Movie.Title)
		}
		return a.db.Queries.Count(), titles
	}
	n20, titles := count()
	if strings.Join(titles, ",") != strings.Join(want, ",") {
		t.Fatalf("titles = %v\nwant     %v", titles, want)
	}
	// 1 cinema list + 1 day list (every cinema's) + 1 showtimes + 1 movies + 1 halls (+ its
	// seats) — independent of the page size.
	if n20 != 6 {
		t.Fatalf("20 showtimes cost %d SQL statements, want 6", n20)
	}
	var one struct{ Showtimes []struct{ ID string } }
	a.db.Queries.Reset()
	a.must("", `{ showtimes(date: "2030-03-11") { id movie { title } hall { name seats { id } } } }`, nil, &one)
	if n := a.db.Queries.Count(); n != n20 {
		t.Fatalf("query cost %d statements the second time, %d the first: not constant", n, n20)
	}
}

// TestCachedPageCostsNoSQL: with the cache on, the same page a second time costs nothing.
func TestCachedPageCostsNoSQL(t *testing.T) {
	a := newTestApp(t)
	hall := a.createHall("Hall 1", 2, 4)
	for i := 0; i < 5; i++ {
		a.createShowtime(a.createMovie(fmt.Sprint("M", i), 30), hall, testNow.Add(time.Duration(24+i)*time.Hour))
	}
	query := `{ showtimes(date: "2030-03-11") { id movie { title } hall { name seats { id } } } }`
	a.must("", query, nil, nil)
	a.db.Queries.Reset()
	a.must("", query, nil, nil)
	if n := a.db.Queries.Count(); n != 0 {
		t.Fatalf("a cached page cost %d SQL statements, want 0", n)
	}
}
