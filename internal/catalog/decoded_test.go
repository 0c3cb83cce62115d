package catalog_test

import (
	"context"
	"testing"
	"time"

	"seatflow"
	"seatflow/internal/cache"
	"seatflow/internal/catalog"
	"seatflow/internal/tooling/testenv"
)

// newCached returns a catalog over a real two-level cache (test Redis and MySQL), as the
// server wires it: writes invalidate through the outbox.
func newCached(t *testing.T) (*catalog.Service, *testenv.DB) {
	t.Helper()
	db := testenv.MySQL(t)
	r := testenv.NewRedis(t)
	clk := testenv.NewClock(time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC))
	c := cache.New(r.Client, r.Keys, cache.Config{Now: clk.Now})
	return &catalog.Service{DB: db.Client, Cache: c, Inval: &cache.Outbox{DB: db.Client, Cache: c, Now: clk.Now},
		Now: clk.Now}, db
}

// TestDecodedValuesFollowTheirBytes: reads of unchanged cache bytes share one decoded
// value (a hall's seats are not decoded again), reads answered from the local level alone
// are the same value, and a write replaces it at once: a decoded value never outlives the
// bytes it came from.
func TestDecodedValuesFollowTheirBytes(t *testing.T) {
	svc, _ := newCached(t)
	ctx := context.Background()
	m, err := svc.CreateMovie(ctx, catalog.MovieInput{Title: "Before", DurationMinutes: 90})
	if err != nil {
		t.Fatal(err)
	}
	first, err := svc.Movie(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	second, err := svc.Movie(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if first != second {
		t.Error("two reads of the same bytes decoded twice")
	}
	local, ok := svc.LocalMovies(ctx, []int{m.ID})
	if !ok || local[0] != first {
		t.Errorf("local read: ok %v, same value %v", ok, ok && local[0] == first)
	}
	if _, ok := svc.LocalMovies(ctx, []int{m.ID, m.ID + 1000}); ok {
		t.Error("a local read with a key never read answered")
	}

	if _, err := svc.UpdateMovie(ctx, m.ID, catalog.MovieInput{Title: "After", DurationMinutes: 90}); err != nil {
		t.Fatal(err)
	}
	if _, ok := svc.LocalMovies(ctx, []int{m.ID}); ok {
		t.Error("the local level still answers for an entry the write dropped")
	}
	after, err := svc.Movie(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.Title != "After" || first.Title != "Before" {
		t.Errorf("after the update: read %q (the earlier value now %q), want After (and Before left as it was)", after.Title, first.Title)
	}
}

// TestMoviesPageFromTheCachedIDList: pages, counts and status filters come from the cached
// id lists, and a new movie or a status change is in the next page read.
func TestMoviesPageFromTheCachedIDList(t *testing.T) {
	svc, db := newCached(t)
	ctx := context.Background()
	var ids []int
	for range 5 {
		m, err := svc.CreateMovie(ctx, catalog.MovieInput{Title: "Film", DurationMinutes: 90})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	two := 2
	page, err := svc.ListMovies(ctx, catalog.MoviePageArgs{First: &two})
	if err != nil {
		t.Fatal(err)
	}
	if page.TotalCount != 5 || len(page.Movies) != 2 || !page.HasNext || page.Movies[0].ID != ids[0] {
		t.Fatalf("first page: %+v", page)
	}
	after := catalog.MovieCursor(page.Movies[1].ID)
	if _, err := svc.ListMovies(ctx, catalog.MoviePageArgs{First: &two, After: &after}); err != nil { // loads this page's movies
		t.Fatal(err)
	}
	db.Queries.Reset()
	page, err = svc.ListMovies(ctx, catalog.MoviePageArgs{First: &two, After: &after})
	if err != nil {
		t.Fatal(err)
	}
	if page.Movies[0].ID != ids[2] || page.Movies[1].ID != ids[3] || !page.HasNext || !page.HasPrevious {
		t.Fatalf("second page: %+v", page)
	}
	if n := db.Queries.Count(); n != 0 {
		t.Errorf("the second page read again cost %d SQL statements, want 0 (ids and movies cached)", n)
	}
	if _, err := svc.SetMovieStatus(ctx, ids[4], seatflow.MovieDelisted); err != nil {
		t.Fatal(err)
	}
	delisted := seatflow.MovieDelisted
	page, err = svc.ListMovies(ctx, catalog.MoviePageArgs{Status: &delisted})
	if err != nil {
		t.Fatal(err)
	}
	if page.TotalCount != 1 || page.Movies[0].ID != ids[4] || page.Movies[0].Status != seatflow.MovieDelisted {
		t.Fatalf("delisted page after the status change: %+v", page)
	}
}
