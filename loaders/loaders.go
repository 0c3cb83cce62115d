// Package loaders batches the catalog reads of one GraphQL request (vikstrous/dataloadgen):
// a page of 20 showtimes with their movies and halls costs one batched read per kind, not
// one per showtime. Entries already in the catalog cache's in-process level are returned
// at once, without waiting for a batch: the window only delays keys that need Redis or
// the database. Loaders live for one request only; the catalog cache is what outlives it.
package loaders

import (
	"context"
	"net/http"
	"time"

	"github.com/vikstrous/dataloadgen"

	"seatflow"
)

// Reader is what the loaders read from: the catalog's batched, key-ordered reads, and the
// same reads answered from the cache's in-process level alone (false unless every key was
// there).
type Reader interface {
	Cinemas(ctx context.Context, ids []int) ([]*seatflow.Cinema, error)
	Movies(ctx context.Context, ids []int) ([]*seatflow.Movie, error)
	Halls(ctx context.Context, ids []int) ([]*seatflow.Hall, error)
	Showtimes(ctx context.Context, ids []int) ([]*seatflow.Showtime, error)
	ShowtimeIDsOfMovies(ctx context.Context, movieIDs []int) ([][]int, error)

	LocalCinemas(ctx context.Context, ids []int) ([]*seatflow.Cinema, bool)
	LocalMovies(ctx context.Context, ids []int) ([]*seatflow.Movie, bool)
	LocalHalls(ctx context.Context, ids []int) ([]*seatflow.Hall, bool)
	LocalShowtimes(ctx context.Context, ids []int) ([]*seatflow.Showtime, bool)
	LocalShowtimeIDsOfMovies(ctx context.Context, movieIDs []int) ([][]int, bool)
}

// Loaders are one request's dataloaders.
type Loaders struct {
	Cinema           *Loader[*seatflow.Cinema]
	Movie            *Loader[*seatflow.Movie]
	Hall             *Loader[*seatflow.Hall]
	SeatsByHall      *Loader[[]seatflow.Seat]
	Showtime         *Loader[*seatflow.Showtime]
	ShowtimesByMovie *Loader[[]int]
}

// Loader loads one kind of catalog entry by id for one request: from the local cache level
// at once when it can, otherwise through a dataloader.
type Loader[V any] struct {
	local func(ctx context.Context, ids []int) ([]V, bool)
	batch *dataloadgen.Loader[int, V]
}

// Load returns the entry of id (the zero V where none exists).
func (l *Loader[V]) Load(ctx context.Context, id int) (V, error) {
	if vs, ok := l.local(ctx, []int{id}); ok {
		return vs[0], nil
	}
	return l.batch.Load(ctx, id)
}

// LoadThunk starts loading id and returns a function that waits for it, so several
// entries can be waited for in one batch window.
func (l *Loader[V]) LoadThunk(ctx context.Context, id int) func() (V, error) {
	if vs, ok := l.local(ctx, []int{id}); ok {
		return func() (V, error) { return vs[0], nil }
	}
	return l.batch.LoadThunk(ctx, id)
}

// LoadAll returns the entries of ids, in order.
func (l *Loader[V]) LoadAll(ctx context.Context, ids []int) ([]V, error) {
	if vs, ok := l.local(ctx, ids); ok {
		return vs, nil
	}
	return l.batch.LoadAll(ctx, ids)
}

// DefaultWait is how long a loader collects keys before it fetches. Every nested level of
// a query that misses the local cache pays it once, so it is kept short: gqlgen starts the
// field resolvers of a list together, and they enqueue well within it.
const DefaultWait = 2 * time.Millisecond

// New returns fresh loaders over r.
func New(r Reader, wait time.Duration) *Loaders {
	opt := dataloadgen.WithWait(wait)
	seatsOf := func(halls []*seatflow.Hall) [][]seatflow.Seat {
		seats := make([][]seatflow.Seat, len(halls))
		for i, h := range halls {
			if h != nil {
				seats[i] = h.Seats
			}
		}
		return seats
	}
	return &Loaders{
		Cinema:   newLoader(r.LocalCinemas, r.Cinemas, opt),
		Movie:    newLoader(r.LocalMovies, r.Movies, opt),
		Hall:     newLoader(r.LocalHalls, r.Halls, opt),
		Showtime: newLoader(r.LocalShowtimes, r.Showtimes, opt),
		SeatsByHall: newLoader(func(ctx context.Context, ids []int) ([][]seatflow.Seat, bool) {
			halls, ok := r.LocalHalls(ctx, ids)
			return seatsOf(halls), ok
		}, func(ctx context.Context, ids []int) ([][]seatflow.Seat, error) {
			halls, err := r.Halls(ctx, ids)
			return seatsOf(halls), err
		}, opt),
		ShowtimesByMovie: newLoader(r.LocalShowtimeIDsOfMovies, r.ShowtimeIDsOfMovies, opt),
	}
}

func newLoader[V any](local func(context.Context, []int) ([]V, bool), read func(context.Context, []int) ([]V, error),
	opt dataloadgen.Option) *Loader[V] {
	return &Loader[V]{local: local, batch: dataloadgen.NewLoader(inOrder(read), opt)}
}

// inOrder adapts a catalog read, which already returns values in key order (nil where a
// key has no value), to dataloadgen's fetch signature, which matches by position.
func inOrder[V any](read func(context.Context, []int) ([]V, error)) func(context.Context, []int) ([]V, []error) {
	return func(ctx context.Context, ids []int) ([]V, []error) {
		vs, err := read(ctx, ids)
		if err != nil {
			return nil, []error{err}
		}
		return vs, nil
	}
}

type ctxKey struct{}

// Middleware gives every request its own loaders.
func Middleware(r Reader, wait time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		next.ServeHTTP(w, req.WithContext(With(req.Context(), New(r, wait))))
	})
}

// With returns ctx carrying l.
func With(ctx context.Context, l *Loaders) context.Context {
	return context.WithValue(ctx, ctxKey{}, l)
}

// For returns the loaders of the request ctx belongs to.
func For(ctx context.Context) *Loaders { return ctx.Value(ctxKey{}).(*Loaders) }
