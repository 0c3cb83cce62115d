package catalog

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"entgo.io/ent/dialect/sql"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/cinema"
	"seatflow/ent/hall"
	"seatflow/ent/showtime"
	"seatflow/internal/database"
	"seatflow/internal/keys"
)

// CinemaDay is one cinema's day (YYYY-MM-DD in its time zone): what a date-bucket list
// of showtimes holds.
type CinemaDay struct {
	CinemaID int
	Day      string
}

func dayKey(d CinemaDay) string { return keys.ShowtimesOn(d.CinemaID, d.Day) }

// Cinemas returns the cinemas with ids, in order; nil where missing.
func (s *Service) Cinemas(ctx context.Context, ids []int) ([]*seatflow.Cinema, error) {
	return getMany(ctx, s, ids, keys.Cinema, s.loadCinemas)
}

// LocalCinemas is LocalMovies for cinemas.
func (s *Service) LocalCinemas(ctx context.Context, ids []int) ([]*seatflow.Cinema, bool) {
	return local[int, seatflow.Cinema](ctx, s, ids, keys.Cinema)
}

// Cinema returns one cinema, or NOT_FOUND.
func (s *Service) Cinema(ctx context.Context, id int) (*seatflow.Cinema, error) {
	return one(s.Cinemas(ctx, []int{id}))("cinema", id)
}

// cinemaIDs is every cinema's id, in id order, from the cached list.
func (s *Service) cinemaIDs(ctx context.Context) ([]int, error) {
	lists, err := getMany(ctx, s, []string{""}, func(string) string { return keys.CinemaIDs() }, s.loadCinemaIDs)
	if err != nil {
		return nil, err
	}
	return derefLists(lists)[0], nil
}

// ListCinemas returns every cinema, in id order.
func (s *Service) ListCinemas(ctx context.Context) ([]*seatflow.Cinema, error) {
	ids, err := s.cinemaIDs(ctx)
	if err != nil {
		return nil, err
	}
	cs, err := s.Cinemas(ctx, ids)
	return existing(cs), err
}

// CinemaHalls returns a cinema's halls (with their seats), in id order.
func (s *Service) CinemaHalls(ctx context.Context, cinemaID int) ([]*seatflow.Hall, error) {
	lists, err := getMany(ctx, s, []int{cinemaID}, keys.HallsOf, s.loadCinemaHalls)
	if err != nil {
		return nil, err
	}
	halls, err := s.Halls(ctx, derefLists(lists)[0])
	return existing(halls), err
}

// ShowtimesOn returns the showtimes starting on day that are not cancelled, ordered by
// start time: those of one cinema (on day in its time zone), or of every cinema when
// cinemaID is nil, each on day in its own cinema's zone; only one movie's when movieID is
// given. An unknown cinema is NOT_FOUND.
func (s *Service) ShowtimesOn(ctx context.Context, day string, cinemaID, movieID *int) ([]*seatflow.Showtime, error) {
	var cinemaIDs []int
	if cinemaID != nil {
		if _, err := s.Cinema(ctx, *cinemaID); err != nil {
			return nil, err
		}
		cinemaIDs = []int{*cinemaID}
	} else {
		var err error
		if cinemaIDs, err = s.cinemaIDs(ctx); err != nil {
			return nil, err
		}
	}
	days := make([]CinemaDay, len(cinemaIDs))
	for i, id := range cinemaIDs {
		days[i] = CinemaDay{CinemaID: id, Day: day}
	}
	lists, err := getMany(ctx, s, days, dayKey, s.loadDays)
	if err != nil {
		return nil, err
	}
	var ids []int
	for _, l := range derefLists(lists) {
		ids = append(ids, l...)
	}
	shows, err := s.Showtimes(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := OfMovie(existing(shows), movieID)
	if len(cinemaIDs) > 1 {
		slices.SortStableFunc(out, func(a, b *seatflow.Showtime) int {
			return cmp.Or(a.StartsAt.Compare(b.StartsAt), cmp.Compare(a.ID, b.ID))
		})
	}
	return out, nil
}

// OnDay keeps the showtimes of one cinema (nil: any) starting on day in their own cinema's
// time zone (nil: any day). An unknown cinema is NOT_FOUND.
func (s *Service) OnDay(ctx context.Context, shows []*seatflow.Showtime, day *string, cinemaID *int) ([]*seatflow.Showtime, error) {
	if cinemaID != nil {
		if _, err := s.Cinema(ctx, *cinemaID); err != nil {
			return nil, err
		}
	}
	if day == nil && cinemaID == nil {
		return shows, nil
	}
	var ids []int
	for _, st := range shows {
		if !slices.Contains(ids, st.CinemaID) {
			ids = append(ids, st.CinemaID)
		}
	}
	cs, err := s.Cinemas(ctx, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[int]*seatflow.Cinema, len(cs))
	for _, c := range cs {
		if c != nil {
			byID[c.ID] = c
		}
	}
	out := shows[:0:0]
	for _, st := range shows {
		c := byID[st.CinemaID]
		if c == nil || (cinemaID != nil && c.ID != *cinemaID) || (day != nil && c.DayOf(st.StartsAt) != *day) {
			continue
		}
		out = append(out, st)
	}
	return out, nil
}

// existing drops the entries of vs that are nil (ids whose entity disappeared).
func existing[T any](vs []*T) []*T {
	out := vs[:0:0]
	for _, v := range vs {
		if v != nil {
			out = append(out, v)
		}
	}
	return out
}

func toCinema(c *ent.Cinema) *seatflow.Cinema {
	return &seatflow.Cinema{ID: c.ID, Name: c.Name, TimeZone: c.TimeZone, Address: c.Address}
}

func (s *Service) loadCinemas(ctx context.Context, ids []int) (map[int]*seatflow.Cinema, error) {
	rows, err := s.DB.Cinema.Query().Where(cinema.IDIn(ids...)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("load cinemas: %w", database.Classify(err))
	}
	out := make(map[int]*seatflow.Cinema, len(rows))
	for _, c := range rows {
		out[c.ID] = toCinema(c)
	}
	return out, nil
}

// loadCinemaIDs loads the list of every cinema's id (its one key is "").
func (s *Service) loadCinemaIDs(ctx context.Context, lists []string) (map[string]*[]int, error) {
	ids, err := s.DB.Cinema.Query().Order(ent.Asc(cinema.FieldID)).IDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("load cinema ids: %w", database.Classify(err))
	}
	out := make(map[string]*[]int, len(lists))
	for _, l := range lists {
		out[l] = &ids
	}
	return out, nil
}

func (s *Service) loadCinemaHalls(ctx context.Context, cinemaIDs []int) (map[int]*[]int, error) {
	out := make(map[int]*[]int, len(cinemaIDs))
	for _, id := range cinemaIDs {
		out[id] = &[]int{}
	}
	rows, err := s.DB.Hall.Query().Where(hall.CinemaIDIn(cinemaIDs...)).Order(ent.Asc(hall.FieldID)).
		Select(hall.FieldID, hall.FieldCinemaID).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("load halls by cinema: %w", database.Classify(err))
	}
	for _, h := range rows {
		*out[h.CinemaID] = append(*out[h.CinemaID], h.ID)
	}
	return out, nil
}

// A day in any time zone lies between these offsets of its UTC day (zones run from UTC−12
// to UTC+14, and a day changing its clocks lasts up to 25 hours): loadDays reads that span
// and keeps each showtime on its cinema's local day.
const (
	zoneAhead  = 15 * time.Hour
	zoneBehind = 13 * time.Hour
)

// daySpan is the span of instants that may lie on the days first to last (UTC midnights)
// in some time zone.
func daySpan(first, last time.Time) (from, to time.Time) {
	return first.Add(-zoneAhead), last.AddDate(0, 0, 1).Add(zoneBehind)
}

// ShowtimesBetween returns the ids of the showtimes, cancelled ones included, that start
// on the days from to to (YYYY-MM-DD, both included), each day counted in its showtime's
// cinema's time zone as the day lists count it, ordered by start: those of one cinema, or
// of every cinema when cinemaID is nil. It reads MySQL with one statement over the span
// of those days. An unknown cinema is NOT_FOUND.
func (s *Service) ShowtimesBetween(ctx context.Context, cinemaID *int, from, to string) ([]int, error) {
	if cinemaID != nil {
		if _, err := s.Cinema(ctx, *cinemaID); err != nil {
			return nil, err
		}
	}
	first, err1 := time.Parse(time.DateOnly, from)
	last, err2 := time.Parse(time.DateOnly, to)
	if err1 != nil || err2 != nil {
		return nil, seatflow.Errorf(seatflow.EINVALID, "dates are in the form YYYY-MM-DD")
	}
	start, end := daySpan(first, last)
	var rows []struct {
		ID       int       `json:"id"`
		StartsAt time.Time `json:"starts_at"`
		TimeZone string    `json:"time_zone"`
	}
	err := s.DB.Showtime.Query().
		Where(showtime.StartsAtGTE(start), showtime.StartsAtLT(end)).
		Order(ent.Asc(showtime.FieldStartsAt), ent.Asc(showtime.FieldID)).
		Modify(func(sel *sql.Selector) {
			h, c := sql.Table(hall.Table), sql.Table(cinema.Table)
			sel.Join(h).On(sel.C(showtime.FieldHallID), h.C(hall.FieldID)).
				Join(c).On(h.C(hall.FieldCinemaID), c.C(cinema.FieldID))
			if cinemaID != nil {
				sel.Where(sql.EQ(c.C(cinema.FieldID), *cinemaID))
			}
			sel.Select(sel.C(showtime.FieldID), sel.C(showtime.FieldStartsAt), c.C(cinema.FieldTimeZone))
		}).Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("showtimes between days: %w", database.Classify(err))
	}
	ids := []int{}
	for _, st := range rows {
		c := seatflow.Cinema{TimeZone: st.TimeZone}
		if day := c.DayOf(st.StartsAt); day >= from && day <= to {
			ids = append(ids, st.ID)
		}
	}
	return ids, nil
}

// loadDays loads each cinema-day's list with one statement over the span of the requested
// days, the showtimes read with their cinema's time zone: a day is counted in its cinema's
// zone, so it lasts 23 or 25 hours when the clocks change. An unknown cinema's days are
// empty.
func (s *Service) loadDays(ctx context.Context, days []CinemaDay) (map[CinemaDay]*[]int, error) {
	out := make(map[CinemaDay]*[]int, len(days))
	var ids []int
	var from, to time.Time
	for _, d := range days {
		out[d] = &[]int{}
		if !slices.Contains(ids, d.CinemaID) {
			ids = append(ids, d.CinemaID)
		}
		start, err := time.Parse(time.DateOnly, d.Day)
		if err != nil {
			return nil, seatflow.Errorf(seatflow.EINVALID, "%q is not a date in the form YYYY-MM-DD", d.Day)
		}
		first, end := daySpan(start, start)
		if from.IsZero() || first.Before(from) {
			from = first
		}
		if end.After(to) {
			to = end
		}
	}
	var rows []struct {
		ID       int       `json:"id"`
		StartsAt time.Time `json:"starts_at"`
		CinemaID int       `json:"cinema_id"`
		TimeZone string    `json:"time_zone"`
	}
	err := s.DB.Showtime.Query().
		Where(showtime.StartsAtGTE(from), showtime.StartsAtLT(to), showtime.StatusNEQ(seatflow.ShowtimeCancelled)).
		Order(ent.Asc(showtime.FieldStartsAt), ent.Asc(showtime.FieldID)).
		Modify(func(sel *sql.Selector) {
			h, c := sql.Table(hall.Table), sql.Table(cinema.Table)
			sel.Join(h).On(sel.C(showtime.FieldHallID), h.C(hall.FieldID)).
				Join(c).On(h.C(hall.FieldCinemaID), c.C(cinema.FieldID)).
				Where(sql.InInts(c.C(cinema.FieldID), ids...)).
				Select(sel.C(showtime.FieldID), sel.C(showtime.FieldStartsAt),
					sql.As(c.C(cinema.FieldID), "cinema_id"), c.C(cinema.FieldTimeZone))
		}).Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("load showtimes by day: %w", database.Classify(err))
	}
	for _, st := range rows {
		c := seatflow.Cinema{ID: st.CinemaID, TimeZone: st.TimeZone}
		if l, ok := out[CinemaDay{CinemaID: c.ID, Day: c.DayOf(st.StartsAt)}]; ok {
			*l = append(*l, st.ID)
		}
	}
	return out, nil
}

// cinemaOfHall reads, inside a write's transaction, the cinema of a hall: its time zone
// names the day lists the hall's showtimes are in.
func cinemaOfHall(ctx context.Context, tx *ent.Tx, hallID int) (*seatflow.Cinema, error) {
	c, err := tx.Hall.Query().Where(hall.ID(hallID)).QueryCinema().Only(ctx)
	if err != nil {
		return nil, fmt.Errorf("the cinema of hall %d: %w", hallID, err)
	}
	return toCinema(c), nil
}

// validateCinema trims the input and checks it. Lengths count characters, as the columns do.
func validateCinema(in *CinemaInput) error {
	in.Name = strings.TrimSpace(in.Name)
	address := strings.TrimSpace(deref(in.Address))
	in.Address = &address
	switch {
	case in.Name == "" || utf8.RuneCountInString(in.Name) > seatflow.MaxCinemaName:
		return invalid("name must be 1 to %d characters", seatflow.MaxCinemaName)
	case utf8.RuneCountInString(address) > seatflow.MaxCinemaAddress:
		return invalid("address must be at most %d characters", seatflow.MaxCinemaAddress)
	case len(in.TimeZone) > maxZoneName:
		return invalid("timeZone must be an IANA time zone name, e.g. Europe/Paris")
	}
	if _, err := seatflow.Zone(in.TimeZone); err != nil {
		return invalid("timeZone: %v; use an IANA name, e.g. Europe/Paris", err)
	}
	if err := checkText("name", in.Name, false); err != nil {
		return err
	}
	return checkText("address", address, true)
}

// maxZoneName is the longest time zone name (as the column counts).
const maxZoneName = 64

// CreateCinema adds a cinema.
func (s *Service) CreateCinema(ctx context.Context, in CinemaInput) (*seatflow.Cinema, error) {
	if err := validateCinema(&in); err != nil {
		return nil, err
	}
	var created *ent.Cinema
	err := s.write(ctx, func(tx *ent.Tx) (drop []string, err error) {
		created, err = tx.Cinema.Create().SetName(in.Name).SetTimeZone(in.TimeZone).SetAddress(*in.Address).Save(ctx)
		if err != nil {
			return nil, err
		}
		// A lookup of this id before it existed may have been cached as missing.
		return []string{keys.CinemaIDs(), keys.Cinema(created.ID)}, nil
	})
	if err != nil {
		return nil, err
	}
	return toCinema(created), nil
}

// UpdateCinema replaces a cinema's details. A new time zone moves its showtimes' days:
// the day lists of every showtime of the cinema, in the old zone and in the new, are
// invalidated with it.
func (s *Service) UpdateCinema(ctx context.Context, id int, in CinemaInput) (*seatflow.Cinema, error) {
	if err := validateCinema(&in); err != nil {
		return nil, err
	}
	var updated *ent.Cinema
	err := s.write(ctx, func(tx *ent.Tx) (drop []string, err error) {
		old, err := tx.Cinema.Get(ctx, id)
		if ent.IsNotFound(err) {
			return nil, seatflow.Errorf(seatflow.ENOTFOUND, "cinema %d does not exist", id)
		} else if err != nil {
			return nil, err
		}
		updated, err = tx.Cinema.UpdateOneID(id).SetName(in.Name).SetTimeZone(in.TimeZone).SetAddress(*in.Address).Save(ctx)
		if err != nil {
			return nil, err
		}
		drop = []string{keys.Cinema(id)}
		if old.TimeZone == updated.TimeZone {
			return drop, nil
		}
		starts, err := tx.Showtime.Query().
			Where(showtime.HasHallWith(hall.CinemaID(id)), showtime.StatusNEQ(seatflow.ShowtimeCancelled)).
			Select(showtime.FieldStartsAt).All(ctx)
		if err != nil {
			return nil, err
		}
		before, after := toCinema(old), toCinema(updated)
		seen := map[string]bool{}
		for _, st := range starts {
			for _, k := range []string{keys.ShowtimesOn(id, before.DayOf(st.StartsAt)), keys.ShowtimesOn(id, after.DayOf(st.StartsAt))} {
				if !seen[k] {
					seen[k] = true
					drop = append(drop, k)
				}
			}
		}
		return drop, nil
	})
	if err != nil {
		return nil, err
	}
	return toCinema(updated), nil
}
