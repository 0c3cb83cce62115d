package loaders_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"seatflow"
	"seatflow/internal/catalog"
	"seatflow/internal/tooling/testenv"
	"seatflow/loaders"
)

// wait is the loaders' collection window in these tests: long enough that 20 goroutines
// released together all enqueue their keys in it, even on a busy machine under -race.
const wait = 300 * time.Millisecond

// page is a page of showtimes as a GraphQL query lists them: each with its own movie
// and hall, hall i having i+1 seats, so a value given to the wrong key shows.
type page struct {
	db      *testenv.DB
	catalog *catalog.Service
	shows   []int
	movieOf map[int]int // showtime id → movie id
	hallOf  map[int]int // showtime id → hall id
	titleOf map[int]string
	seatsOf map[int]int // hall id → seats
	missing int         // an id no movie, hall or showtime has
}

func newPage(t *testing.T, n int) *page {
	t.Helper()
	db := testenv.MySQL(t)
	ctx := context.Background()
	p := &page{db: db, catalog: &catalog.Service{DB: db.Client}, movieOf: map[int]int{}, hallOf: map[int]int{},
		titleOf: map[int]string{}, seatsOf: map[int]int{}, missing: 1_000_000}
	now := time.Now()
	for i := range n {
		show, hall := testenv.Showtime(t, db.Client, now, testenv.ShowtimeSpec{Rows: 1, PerRow: i + 1})
		st := db.Client.Showtime.GetX(ctx, show)
		title := fmt.Sprintf("Film %d", i)
		db.Client.Movie.UpdateOneID(st.MovieID).SetTitle(title).ExecX(ctx)
		p.shows = append(p.shows, show)
		p.movieOf[show], p.hallOf[show] = st.MovieID, hall
		p.titleOf[st.MovieID], p.seatsOf[hall] = title, i+1
	}
	return p
}

// concurrently runs fn for every showtime of the page in its own goroutine, all released
// at once, as gqlgen resolves the fields of a list, and returns the SQL statements the
// loaders sent meanwhile.
func (p *page) concurrently(t *testing.T, fn func(showID int) error) int64 {
	t.Helper()
	p.db.Queries.Reset()
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, len(p.shows))
	for _, show := range p.shows {
		wg.Go(func() {
			<-start
			if err := fn(show); err != nil {
				errs <- fmt.Errorf("showtime %d: %w", show, err)
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	return p.db.Queries.Count()
}

func (p *page) checkMovie(show int, m *seatflow.Movie) error {
	if m == nil {
		return fmt.Errorf("movie %d: got nil", p.movieOf[show])
	}
	if got, want := m.ID, p.movieOf[show]; got != want {
		return fmt.Errorf("movie id = %d, want %d", got, want)
	}
	if got, want := m.Title, p.titleOf[m.ID]; got != want {
		return fmt.Errorf("movie %d title = %q, want %q", m.ID, got, want)
	}
	return nil
}

func (p *page) checkHall(show int, h *seatflow.Hall) error {
	if h == nil {
		return fmt.Errorf("hall %d: got nil", p.hallOf[show])
	}
	if got, want := h.ID, p.hallOf[show]; got != want {
		return fmt.Errorf("hall id = %d, want %d", got, want)
	}
	return p.checkSeats(h.ID, h.Seats)
}

func (p *page) checkSeats(hallID int, seats []seatflow.Seat) error {
	if got, want := len(seats), p.seatsOf[hallID]; got != want {
		return fmt.Errorf("hall %d has %d seats, want %d", hallID, got, want)
	}
	for _, s := range seats {
		if s.HallID != hallID {
			return fmt.Errorf("hall %d lists seat %d of hall %d", hallID, s.ID, s.HallID)
		}
	}
	return nil
}

// TestBatchCostsOneStatementPerKind: 20 showtimes' movies and halls, loaded from 20
// goroutines, cost one batched read per kind (a hall with its seats is two statements:
// the halls, then all their seats), not one per showtime.
func TestBatchCostsOneStatementPerKind(t *testing.T) {
	p := newPage(t, 20)
	ctx := context.Background()

	cases := []struct {
		name string
		// want is the statements of one batch: Cache is nil, so every read goes to MySQL.
		want int64
		load func(l *loaders.Loaders, show int) error
	}{
		{"ShowtimesOneStatement", 1, func(l *loaders.Loaders, show int) error {
			st, err := l.Showtime.Load(ctx, show)
			if err == nil && (st == nil || st.ID != show) {
				err = fmt.Errorf("showtime = %+v, want id %d", st, show)
			}
			return err
		}},
		{"MoviesOneStatement", 1, func(l *loaders.Loaders, show int) error {
			m, err := l.Movie.Load(ctx, p.movieOf[show])
			if err != nil {
				return err
			}
			return p.checkMovie(show, m)
		}},
		{"HallsTwoStatements", 2, func(l *loaders.Loaders, show int) error {
			h, err := l.Hall.Load(ctx, p.hallOf[show])
			if err != nil {
				return err
			}
			return p.checkHall(show, h)
		}},
		{"SeatsByHallTwoStatements", 2, func(l *loaders.Loaders, show int) error {
			seats, err := l.SeatsByHall.Load(ctx, p.hallOf[show])
			if err != nil {
				return err
			}
			return p.checkSeats(p.hallOf[show], seats)
		}},
		{"ShowtimesByMovieOneStatement", 1, func(l *loaders.Loaders, show int) error {
			ids, err := l.ShowtimesByMovie.Load(ctx, p.movieOf[show])
			if err == nil && (len(ids) != 1 || ids[0] != show) {
				err = fmt.Errorf("showtimes of movie %d = %v, want [%d]", p.movieOf[show], ids, show)
			}
			return err
		}},
		// A page's nesting: showtimes, then each showtime's movie and hall together.
		{"NestedPageFourStatements", 1 + 1 + 2, func(l *loaders.Loaders, show int) error {
			st, err := l.Showtime.Load(ctx, show)
			if err != nil {
				return err
			}
			movie, hall := l.Movie.LoadThunk(ctx, st.MovieID), l.Hall.LoadThunk(ctx, st.HallID)
			m, err := movie()
			if err != nil {
				return err
			}
			h, err := hall()
			if err != nil {
				return err
			}
			if err := p.checkMovie(show, m); err != nil {
				return err
			}
			return p.checkHall(show, h)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := loaders.New(p.catalog, wait)
			got := p.concurrently(t, func(show int) error { return c.load(l, show) })
			if got != c.want {
				t.Errorf("%d showtimes cost %d SQL statements, want %d", len(p.shows), got, c.want)
			}
		})
	}
}

// TestResultsInKeyOrder: a batch's values come back in the order of its keys, whatever
// order MySQL returns rows in, with nil for an id that does not exist.
func TestResultsInKeyOrder(t *testing.T) {
	p := newPage(t, 4)
	ctx := context.Background()
	// Reversed, with a missing id in the middle and a repeated key.
	order := []int{p.shows[3], p.shows[2], p.missing, p.shows[0], p.shows[1], p.shows[3]}
	movies, halls := make([]int, len(order)), make([]int, len(order))
	for i, show := range order {
		movies[i], halls[i] = p.movieOf[show], p.hallOf[show]
		if show == p.missing {
			movies[i], halls[i] = p.missing, p.missing
		}
	}

	t.Run("Showtimes", func(t *testing.T) {
		got, err := loaders.New(p.catalog, time.Millisecond).Showtime.LoadAll(ctx, order)
		if err != nil {
			t.Fatal(err)
		}
		for i, st := range got {
			switch {
			case order[i] == p.missing && st != nil:
				t.Errorf("key %d (missing): got showtime %d, want nil", i, st.ID)
			case order[i] != p.missing && (st == nil || st.ID != order[i]):
				t.Errorf("key %d: got %+v, want showtime %d", i, st, order[i])
			}
		}
	})
	t.Run("Movies", func(t *testing.T) {
		got, err := loaders.New(p.catalog, time.Millisecond).Movie.LoadAll(ctx, movies)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range got {
			if order[i] == p.missing {
				if m != nil {
					t.Errorf("key %d (missing): got movie %d, want nil", i, m.ID)
				}
				continue
			}
			if err := p.checkMovie(order[i], m); err != nil {
				t.Errorf("key %d: %v", i, err)
			}
		}
	})
	t.Run("Halls", func(t *testing.T) {
		got, err := loaders.New(p.catalog, time.Millisecond).Hall.LoadAll(ctx, halls)
		if err != nil {
			t.Fatal(err)
		}
		for i, h := range got {
			if order[i] == p.missing {
				if h != nil {
					t.Errorf("key %d (missing): got hall %d, want nil", i, h.ID)
				}
				continue
			}
			if err := p.checkHall(order[i], h); err != nil {
				t.Errorf("key %d: %v", i, err)
			}
		}
	})
	t.Run("SeatsByHall", func(t *testing.T) {
		got, err := loaders.New(p.catalog, time.Millisecond).SeatsByHall.LoadAll(ctx, halls)
		if err != nil {
			t.Fatal(err)
		}
		for i, seats := range got {
			if order[i] == p.missing {
				if seats != nil {
					t.Errorf("key %d (missing): got %d seats, want nil", i, len(seats))
				}
				continue
			}
			if err := p.checkSeats(halls[i], seats); err != nil {
				t.Errorf("key %d: %v", i, err)
			}
		}
	})
	t.Run("ShowtimesByMovie", func(t *testing.T) {
		got, err := loaders.New(p.catalog, time.Millisecond).ShowtimesByMovie.LoadAll(ctx, movies)
		if err != nil {
			t.Fatal(err)
		}
		for i, ids := range got {
			want := []int{order[i]}
			if order[i] == p.missing {
				want = nil
			}
			if fmt.Sprint(ids) != fmt.Sprint(want) && !(len(ids) == 0 && len(want) == 0) {
				t.Errorf("key %d: showtimes of movie %d = %v, want %v", i, movies[i], ids, want)
			}
		}
	})
}
