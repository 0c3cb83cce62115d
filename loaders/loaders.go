// Package loaders batches the catalog reads of one GraphQL request (vikstrous/dataloadgen):
// a page of 20 showtimes with their movies and halls costs one batched read per kind,
// not one per showtime. Loaders live for one request only; the catalog cache is what
// outlives it.
package loaders

import (
	"context"
	"net/http"
	"time"

	"seatflow"

	"github.com/vikstrous/dataloadgen"
)

// Reader is what the loaders read from: the catalog's batched, key-ordered reads.
type Reader interface {
	Movies(ctx context.Context, ids []int) ([]*seatflow.Movie, error)
	Halls(ctx context.Context, ids []int) ([]*seatflow.Hall, error)
	Showtimes(ctx context.Context, ids []int) ([]*seatflow.Showtime, error)
	ShowtimeIDsOfMovies(ctx context.Context, movieIDs []int) ([][]int, error)
}

// Loaders are one request's dataloaders.
type Loaders struct {
	Movie            *dataloadgen.Loader[int, *seatflow.Movie]
	Hall             *dataloadgen.Loader[int, *seatflow.Hall]
	SeatsByHall      *dataloadgen.Loader[int, []seatflow.Seat]
	Showtime         *dataloadgen.Loader[int, *seatflow.Showtime]
	ShowtimesByMovie *dataloadgen.Loader[int, []int]
}

// DefaultWait is how long a loader collects keys before it fetches. Every nested level of
// a query pays it once, so it is kept short: gqlgen starts the field resolvers of a list
// together, and they enqueue well within it.
const DefaultWait = 2 * time.Millisecond

// New returns fresh loaders over r.
func New(r Reader, wait time.Duration) *Loaders {
	opt := dataloadgen.WithWait(wait)
	return &Loaders{
		Movie:    dataloadgen.NewLoader(inOrder(r.Movies), opt),
		Hall:     dataloadgen.NewLoader(inOrder(r.Halls), opt),
		Showtime: dataloadgen.NewLoader(inOrder(r.Showtimes), opt),
		SeatsByHall: dataloadgen.NewLoader(inOrder(func(ctx context.Context, ids []int) ([][]seatflow.Seat, error) {
			halls, err := r.Halls(ctx, ids)
			seats := make([][]seatflow.Seat, len(halls))
			for i, h := range halls {
				if h != nil {
					seats[i] = h.Seats
				}
			}
			return seats, err
		}), opt),
		ShowtimesByMovie: dataloadgen.NewLoader(inOrder(r.ShowtimeIDsOfMovies), opt),
	}
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
