package catalog

import (
	"context"
	"encoding/base64"
	"sort"
	"strconv"
	"strings"

	"seatflow"
	"seatflow/internal/keys"
)

// MoviePage is one page of the movies connection.
type MoviePage struct {
	Movies      []*seatflow.Movie
	HasNext     bool
	HasPrevious bool
	TotalCount  int
}

// Page size bounds of the movies connection.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// MovieCursor encodes a movie's position in the movies connection.
func MovieCursor(id int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("movie:" + strconv.Itoa(id)))
}

func parseMovieCursor(name, c string) (int, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	id, convErr := strconv.Atoi(strings.TrimPrefix(string(b), "movie:"))
	if err != nil || convErr != nil || !strings.HasPrefix(string(b), "movie:") || id < 0 {
		return 0, seatflow.Errorf(seatflow.EINVALID, "%s is not a cursor this API returned", name)
	}
	return id, nil
}

// MoviePageArgs are a page request of the movies connection, as Relay's cursor
// connections take them: first after a cursor going forwards, last before one going
// backwards; first defaults to DefaultPageSize when neither first nor last is given.
type MoviePageArgs struct {
	First, Last   *int
	After, Before *string
	Status        *seatflow.MovieStatus
}

// ListMovies returns a page of movies ordered by id. The ids come from a cached list of
// every movie's id (one per status filter: a catalog has hundreds of movies, not
// millions), the movies from the cache too.
func (s *Service) ListMovies(ctx context.Context, p MoviePageArgs) (*MoviePage, error) {
	for name, n := range map[string]*int{"first": p.First, "last": p.Last} {
		if n != nil && (*n < 0 || *n > MaxPageSize) {
			return nil, seatflow.Errorf(seatflow.EINVALID, "%s must be between 0 and %d", name, MaxPageSize)
		}
	}
	afterID, beforeID := 0, 0
	var err error
	if p.After != nil && *p.After != "" {
		if afterID, err = parseMovieCursor("after", *p.After); err != nil {
			return nil, err
		}
	}
	if p.Before != nil && *p.Before != "" {
		if beforeID, err = parseMovieCursor("before", *p.Before); err != nil {
			return nil, err
		}
	}
	filter := ""
	if p.Status != nil {
		filter = string(*p.Status)
	}
	lists, err := getMany(ctx, s, []string{filter}, keys.MovieIDs, s.loadMovieIDs)
	if err != nil {
		return nil, err
	}
	all := derefLists(lists)[0]
	ids := all[sort.SearchInts(all, afterID+1):]
	if beforeID > 0 {
		ids = ids[:sort.SearchInts(ids, beforeID)]
	}
	page := &MoviePage{TotalCount: len(all), HasPrevious: afterID > 0, HasNext: beforeID > 0}
	if p.First == nil && p.Last == nil {
		p.First = new(DefaultPageSize)
	}
	if p.First != nil && len(ids) > *p.First {
		ids, page.HasNext = ids[:*p.First], true
	}
	if p.Last != nil && len(ids) > *p.Last {
		ids, page.HasPrevious = ids[len(ids)-*p.Last:], true
	}
	movies, err := s.Movies(ctx, ids)
	if err != nil {
		return nil, err
	}
	for _, m := range movies {
		if m != nil { // deleted between the two reads
			page.Movies = append(page.Movies, m)
		}
	}
	return page, nil
}
