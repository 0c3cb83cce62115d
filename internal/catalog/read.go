package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"entgo.io/ent/dialect/sql"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/hall"
	"seatflow/ent/movie"
	"seatflow/ent/seat"
	"seatflow/ent/showtime"
	"seatflow/internal/database"
	"seatflow/internal/keys"
)

// movieListKeys are the cache keys of the movie id lists a new movie or a status change
// touches. Lists hold ids only, so a status change of a showtime invalidates just that
// showtime's entry.
func movieListKeys() []string {
	return []string{keys.MovieIDs(""), keys.MovieIDs(string(seatflow.MovieListed)), keys.MovieIDs(string(seatflow.MovieDelisted))}
}

// Movies returns the movies with ids, in the order of ids; nil where one does not exist.
func (s *Service) Movies(ctx context.Context, ids []int) ([]*seatflow.Movie, error) {
	return getMany(ctx, s, ids, keys.Movie, s.loadMovies)
}

// Halls returns the halls with ids (with their seats), in order; nil where missing.
func (s *Service) Halls(ctx context.Context, ids []int) ([]*seatflow.Hall, error) {
	halls, err := getMany(ctx, s, ids, keys.Hall, s.loadHalls)
	if err != nil || s.Cache == nil { // without a cache they come from the database as they are
		return halls, err
	}
	return reloadWithoutCinema(ctx, halls, func(h *seatflow.Hall) (int, int) { return h.ID, h.CinemaID }, s.loadHalls)
}

// Showtimes returns the showtimes with ids, in order; nil where missing.
func (s *Service) Showtimes(ctx context.Context, ids []int) ([]*seatflow.Showtime, error) {
	shows, err := getMany(ctx, s, ids, keys.Showtime, s.loadShowtimes)
	if err != nil || s.Cache == nil { // without a cache they come from the database as they are
		return shows, err
	}
	return reloadWithoutCinema(ctx, shows, func(st *seatflow.Showtime) (int, int) { return st.ID, st.CinemaID }, s.loadShowtimes)
}

// reloadWithoutCinema reads again from the database the entries cached without their
// cinema: written before cinemas existed (by an instance of the previous version, while an
// upgrade rolls out), they would name no cinema until they expire. of gives an entry's id
// and cinema id. The decoded values are shared, so a new slice is returned.
func reloadWithoutCinema[V any](ctx context.Context, vs []*V, of func(*V) (id, cinemaID int),
	load func(context.Context, []int) (map[int]*V, error)) ([]*V, error) {
	var stale []int
	for _, v := range vs {
		if v == nil {
			continue
		}
		if id, cinemaID := of(v); cinemaID == 0 {
			stale = append(stale, id)
		}
	}
	if len(stale) == 0 {
		return vs, nil
	}
	fresh, err := load(ctx, stale)
	if err != nil {
		return nil, err
	}
	out := make([]*V, len(vs))
	for i, v := range vs {
		out[i] = v
		if v != nil {
			if id, cinemaID := of(v); cinemaID == 0 {
				out[i] = fresh[id]
			}
		}
	}
	return out, nil
}

// withoutCinema reports whether an entry of vs was cached without its cinema
// (reloadWithoutCinema reads those again).
func withoutCinema[V any](vs []*V, cinemaOf func(*V) int) bool {
	return slices.ContainsFunc(vs, func(v *V) bool { return v != nil && cinemaOf(v) == 0 })
}

// LocalMovies returns the movies with ids when all of them are in the cache's in-process
// level (no Redis, no database, no wait); false otherwise. LocalHalls, LocalShowtimes and
// LocalShowtimeIDsOfMovies do the same for their entries.
func (s *Service) LocalMovies(ctx context.Context, ids []int) ([]*seatflow.Movie, bool) {
	return local[int, seatflow.Movie](ctx, s, ids, keys.Movie)
}

// LocalHalls is LocalMovies for halls.
func (s *Service) LocalHalls(ctx context.Context, ids []int) ([]*seatflow.Hall, bool) {
	halls, ok := local[int, seatflow.Hall](ctx, s, ids, keys.Hall)
	return halls, ok && !withoutCinema(halls, func(h *seatflow.Hall) int { return h.CinemaID })
}

// LocalShowtimes is LocalMovies for showtimes.
func (s *Service) LocalShowtimes(ctx context.Context, ids []int) ([]*seatflow.Showtime, bool) {
	shows, ok := local[int, seatflow.Showtime](ctx, s, ids, keys.Showtime)
	return shows, ok && !withoutCinema(shows, func(st *seatflow.Showtime) int { return st.CinemaID })
}

// LocalShowtimeIDsOfMovies is LocalMovies for the movies' showtime lists.
func (s *Service) LocalShowtimeIDsOfMovies(ctx context.Context, movieIDs []int) ([][]int, bool) {
	lists, ok := local[int, []int](ctx, s, movieIDs, keys.ShowtimesOf)
	return derefLists(lists), ok
}

// ShowtimeIDsOfMovies returns, for each movie, the ids of its showtimes that are not
// cancelled, ordered by start time.
func (s *Service) ShowtimeIDsOfMovies(ctx context.Context, movieIDs []int) ([][]int, error) {
	lists, err := getMany(ctx, s, movieIDs, keys.ShowtimesOf, s.loadMovieShows)
	return derefLists(lists), err
}

// Movie returns one movie, or NOT_FOUND.
func (s *Service) Movie(ctx context.Context, id int) (*seatflow.Movie, error) {
	return one(s.Movies(ctx, []int{id}))("movie", id)
}

// Hall returns one hall with its seats, or NOT_FOUND.
func (s *Service) Hall(ctx context.Context, id int) (*seatflow.Hall, error) {
	return one(s.Halls(ctx, []int{id}))("hall", id)
}

// Seats returns the seats of ids in id order, nil where there is none, with one query.
// Seats are read by hall everywhere else; these are for nodes(ids:).
func (s *Service) Seats(ctx context.Context, ids []int) ([]*seatflow.Seat, error) {
	rows, err := s.DB.Seat.Query().Where(seat.IDIn(ids...)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("seats: %w", database.Classify(err))
	}
	byID := make(map[int]*seatflow.Seat, len(rows))
	for _, r := range rows {
		st := toSeat(r)
		byID[r.ID] = &st
	}
	out := make([]*seatflow.Seat, len(ids))
	for i, id := range ids {
		out[i] = byID[id]
	}
	return out, nil
}

// Showtime returns one showtime, or NOT_FOUND.
func (s *Service) Showtime(ctx context.Context, id int) (*seatflow.Showtime, error) {
	return one(s.Showtimes(ctx, []int{id}))("showtime", id)
}

func one[V any](vs []*V, err error) func(what string, id int) (*V, error) {
	return func(what string, id int) (*V, error) {
		if err != nil {
			return nil, err
		}
		if len(vs) == 0 || vs[0] == nil {
			return nil, seatflow.Errorf(seatflow.ENOTFOUND, "%s %d does not exist", what, id)
		}
		return vs[0], nil
	}
}

func derefLists(lists []*[]int) [][]int {
	out := make([][]int, len(lists))
	for i, l := range lists {
		if l != nil {
			out[i] = *l
		}
	}
	return out
}

// getMany reads entries through the cache (when there is one) and loads the misses with
// one batched query. Values travel as JSON bytes; the decoded values of unchanged bytes
// are shared (decodedValues), read-only.
func getMany[K comparable, V any](ctx context.Context, s *Service, ids []K, keyOf func(K) string,
	load func(context.Context, []K) (map[K]*V, error)) ([]*V, error) {
	out := make([]*V, len(ids))
	if s.Cache == nil {
		found, err := load(ctx, ids)
		if err != nil {
			return nil, err
		}
		for i, id := range ids {
			out[i] = found[id]
		}
		return out, nil
	}
	cacheKeys := make([]string, len(ids))
	idOf := make(map[string]K, len(ids))
	for i, id := range ids {
		cacheKeys[i] = keyOf(id)
		idOf[cacheKeys[i]] = id
	}
	raw, err := s.Cache.GetMany(ctx, cacheKeys, func(ctx context.Context, missing []string) (map[string][]byte, error) {
		want := make([]K, len(missing))
		for i, k := range missing {
			want[i] = idOf[k]
		}
		found, err := load(ctx, want)
		if err != nil {
			return nil, err
		}
		data := make(map[string][]byte, len(found))
		for id, v := range found {
			b, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			data[keyOf(id)] = b
		}
		return data, nil
	})
	if err != nil {
		return nil, err
	}
	for i, b := range raw {
		if out[i], err = decode[V](s, cacheKeys[i], b); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *Service) loadMovies(ctx context.Context, ids []int) (map[int]*seatflow.Movie, error) {
	rows, err := s.DB.Movie.Query().Where(movie.IDIn(ids...)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("load movies: %w", database.Classify(err))
	}
	out := make(map[int]*seatflow.Movie, len(rows))
	for _, m := range rows {
		out[m.ID] = toMovie(m)
	}
	return out, nil
}

func (s *Service) loadHalls(ctx context.Context, ids []int) (map[int]*seatflow.Hall, error) {
	return hallsFrom(ctx, s.DB, ids)
}

// hallsFrom loads halls with their seats through db, which may be a transaction's client.
func hallsFrom(ctx context.Context, db *ent.Client, ids []int) (map[int]*seatflow.Hall, error) {
	rows, err := db.Hall.Query().Where(hallIDIn(ids)).
		WithSeats(func(q *ent.SeatQuery) { q.Order(ent.Asc(seat.FieldY), ent.Asc(seat.FieldX), ent.Asc(seat.FieldID)) }).
		All(ctx)
	if err != nil {
		return nil, fmt.Errorf("load halls: %w", database.Classify(err))
	}
	out := make(map[int]*seatflow.Hall, len(rows))
	for _, h := range rows {
		hall := &seatflow.Hall{ID: h.ID, Name: h.Name, CinemaID: h.CinemaID, Seats: make([]seatflow.Seat, len(h.Edges.Seats))}
		for i, st := range h.Edges.Seats {
			hall.Seats[i] = toSeat(st)
		}
		out[h.ID] = hall
	}
	return out, nil
}

func (s *Service) loadShowtimes(ctx context.Context, ids []int) (map[int]*seatflow.Showtime, error) {
	rows, err := s.DB.Showtime.Query().Where(showtime.IDIn(ids...)).Modify(withCinemaID).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("load showtimes: %w", database.Classify(err))
	}
	out := make(map[int]*seatflow.Showtime, len(rows))
	for _, st := range rows {
		out[st.ID] = toShowtime(st)
	}
	return out, nil
}

func (s *Service) loadMovieShows(ctx context.Context, movieIDs []int) (map[int]*[]int, error) {
	out := make(map[int]*[]int, len(movieIDs))
	for _, id := range movieIDs {
		out[id] = &[]int{}
	}
	rows, err := s.DB.Showtime.Query().
		Where(showtime.MovieIDIn(movieIDs...), showtime.StatusNEQ(seatflow.ShowtimeCancelled)).
		Order(ent.Asc(showtime.FieldStartsAt), ent.Asc(showtime.FieldID)).
		Select(showtime.FieldID, showtime.FieldMovieID).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("load showtimes by movie: %w", database.Classify(err))
	}
	for _, st := range rows {
		*out[st.MovieID] = append(*out[st.MovieID], st.ID)
	}
	return out, nil
}

// loadMovieIDs loads the id lists of the given filters ("" = every movie, else a status)
// with one query over the movies.
func (s *Service) loadMovieIDs(ctx context.Context, filters []string) (map[string]*[]int, error) {
	rows, err := s.DB.Movie.Query().Order(ent.Asc(movie.FieldID)).Select(movie.FieldID, movie.FieldStatus).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("load movie ids: %w", database.Classify(err))
	}
	out := make(map[string]*[]int, len(filters))
	for _, f := range filters {
		ids := []int{}
		for _, m := range rows {
			if f == "" || string(m.Status) == f {
				ids = append(ids, m.ID)
			}
		}
		out[f] = &ids
	}
	return out, nil
}

func toMovie(m *ent.Movie) *seatflow.Movie {
	genres := m.Genres
	if genres == nil {
		genres = []string{}
	}
	return &seatflow.Movie{ID: m.ID, Title: m.Title, Synopsis: m.Synopsis, DurationMinutes: m.DurationMin,
		Rating: m.Rating, Genres: genres, PosterURL: m.PosterURL, Status: m.Status}
}

func toSeat(s *ent.Seat) seatflow.Seat {
	return seatflow.Seat{ID: s.ID, HallID: s.HallID, Row: s.RowLabel, Number: s.Number, X: s.X, Y: s.Y,
		Kind: s.Kind, Sellable: s.Sellable}
}

// cinemaIDColumn is the column withCinemaID adds to a showtime query.
const cinemaIDColumn = "cinema_id"

// withCinemaID joins a showtime query to the showtimes' halls for their cinema id: one
// statement, as before cinemas (a hall never changes cinema).
func withCinemaID(s *sql.Selector) {
	h := sql.Table(hall.Table)
	s.Join(h).On(s.C(showtime.FieldHallID), h.C(hall.FieldID)).
		AppendSelect(sql.As(h.C(hall.FieldCinemaID), cinemaIDColumn))
}

// selectedInt reads an integer column a modifier selected: MySQL's drivers scan it as an
// int64 (binary protocol) or its digits (text protocol); 0 when it is NULL or absent.
func selectedInt(v ent.Value, err error) int {
	if err != nil {
		return 0
	}
	switch n := v.(type) {
	case int64:
		return int(n)
	case []byte:
		i, _ := strconv.Atoi(string(n))
		return i
	case string:
		i, _ := strconv.Atoi(n)
		return i
	}
	return 0
}

// toShowtime converts a showtime read withCinemaID.
func toShowtime(st *ent.Showtime) *seatflow.Showtime {
	out := &seatflow.Showtime{ID: st.ID, MovieID: st.MovieID, HallID: st.HallID, StartsAt: st.StartsAt.UTC(),
		EndsAt: st.EndsAt.UTC(), Status: st.Status, PurchaseLimit: st.PurchaseLimit,
		AllowSeatGaps: st.AllowSeatGaps, Currency: st.Currency, HasQueue: st.HasQueue,
		UpdatedAt: st.UpdatedAt.UTC()}
	out.CinemaID = selectedInt(st.Value(cinemaIDColumn))
	out.Prices = slices.Clone([]seatflow.Price(st.Prices))
	return out
}

// OfMovie keeps the showtimes of one movie; a nil movie keeps all.
func OfMovie(shows []*seatflow.Showtime, movieID *int) []*seatflow.Showtime {
	if movieID == nil {
		return shows
	}
	out := shows[:0:0]
	for _, st := range shows {
		if st.MovieID == *movieID {
			out = append(out, st)
		}
	}
	return out
}
