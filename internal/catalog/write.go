package catalog

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/cinema"
	"seatflow/internal/keys"
)

// Input limits.
const (
	maxSynopsis     = 5000
	maxGenre        = 40
	maxDuration     = 600
	maxGenres       = 10
	maxRows         = 50
	maxSeatsPerRow  = 100
	maxHallSeats    = 2000
	maxPurchase     = 50
	maxPriceCents   = 10_000_000
	defaultPurchase = 6
)

func invalid(format string, args ...any) error {
	return seatflow.Errorf(seatflow.EINVALID, format, args...)
}

// validateMovie trims the input and checks it. Lengths count characters, as the columns
// do (seatflow.MaxMovieTitle and the others size them).
func validateMovie(in *MovieInput) error {
	in.Title = strings.TrimSpace(in.Title)
	switch {
	case in.Title == "":
		return invalid("title must not be empty")
	case utf8.RuneCountInString(in.Title) > seatflow.MaxMovieTitle:
		return invalid("title must be at most %d characters", seatflow.MaxMovieTitle)
	case in.DurationMinutes < 1 || in.DurationMinutes > maxDuration:
		return invalid("durationMinutes must be between 1 and %d", maxDuration)
	case utf8.RuneCountInString(deref(in.Synopsis)) > maxSynopsis:
		return invalid("synopsis must be at most %d characters", maxSynopsis)
	case utf8.RuneCountInString(deref(in.Rating)) > seatflow.MaxMovieRating:
		return invalid("rating must be at most %d characters", seatflow.MaxMovieRating)
	case len(in.Genres) > maxGenres:
		return invalid("at most %d genres", maxGenres)
	}
	for _, g := range in.Genres {
		if strings.TrimSpace(g) == "" || utf8.RuneCountInString(g) > maxGenre {
			return invalid("each genre must be 1 to %d characters", maxGenre)
		}
		if err := checkText("a genre", g, false); err != nil {
			return err
		}
	}
	if in.PosterURL != nil && *in.PosterURL != "" {
		u, err := url.Parse(*in.PosterURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" ||
			utf8.RuneCountInString(*in.PosterURL) > seatflow.MaxPosterURL {
			return invalid("posterUrl must be an http(s) URL of at most %d characters", seatflow.MaxPosterURL)
		}
	}
	for _, f := range []struct {
		name, text string
		lineFeeds  bool
	}{{"title", in.Title, false}, {"synopsis", deref(in.Synopsis), true}, {"rating", deref(in.Rating), false},
		{"posterUrl", deref(in.PosterURL), false}} {
		if err := checkText(f.name, f.text, f.lineFeeds); err != nil {
			return err
		}
	}
	return nil
}

// checkText refuses an admin text that seatflow.CheckText finds unfit (a control
// character, a bidirectional override), naming its field.
func checkText(field, s string, lineFeeds bool) error {
	if err := seatflow.CheckText(s, lineFeeds); err != nil {
		return invalid("%s %v", field, err)
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// CreateMovie adds a listed movie.
func (s *Service) CreateMovie(ctx context.Context, in MovieInput) (*seatflow.Movie, error) {
	if err := validateMovie(&in); err != nil {
		return nil, err
	}
	var created *ent.Movie
	err := s.write(ctx, func(tx *ent.Tx) (drop []string, err error) {
		now := s.Now.Now()
		created, err = tx.Movie.Create().SetTitle(in.Title).SetSynopsis(deref(in.Synopsis)).
			SetDurationMin(in.DurationMinutes).SetRating(deref(in.Rating)).SetGenres(nonNil(in.Genres)).
			SetPosterURL(deref(in.PosterURL)).SetCreatedAt(now).SetUpdatedAt(now).Save(ctx)
		if err != nil {
			return nil, err
		}
		// A lookup of this id before it existed may have been cached as missing.
		return append(movieListKeys(), keys.Movie(created.ID)), nil
	})
	if err != nil {
		return nil, err
	}
	return toMovie(created), nil
}

// UpdateMovie replaces a movie's details. Its showtimes keep their times: a new duration
// applies to showtimes created or rescheduled afterwards.
func (s *Service) UpdateMovie(ctx context.Context, id int, in MovieInput) (*seatflow.Movie, error) {
	if err := validateMovie(&in); err != nil {
		return nil, err
	}
	var updated *ent.Movie
	err := s.write(ctx, func(tx *ent.Tx) (drop []string, err error) {
		updated, err = tx.Movie.UpdateOneID(id).SetTitle(in.Title).SetSynopsis(deref(in.Synopsis)).
			SetDurationMin(in.DurationMinutes).SetRating(deref(in.Rating)).SetGenres(nonNil(in.Genres)).
			SetPosterURL(deref(in.PosterURL)).SetUpdatedAt(s.Now.Now()).Save(ctx)
		if ent.IsNotFound(err) {
			return nil, seatflow.Errorf(seatflow.ENOTFOUND, "movie %d does not exist", id)
		}
		return []string{keys.Movie(id)}, err
	})
	if err != nil {
		return nil, err
	}
	return toMovie(updated), nil
}

// SetMovieStatus lists or delists a movie. A delisted movie gets no new showtimes; its
// existing ones stay as they are.
func (s *Service) SetMovieStatus(ctx context.Context, id int, status seatflow.MovieStatus) (*seatflow.Movie, error) {
	if !status.Valid() {
		return nil, invalid("status must be LISTED or DELISTED")
	}
	var updated *ent.Movie
	err := s.write(ctx, func(tx *ent.Tx) (drop []string, err error) {
		updated, err = tx.Movie.UpdateOneID(id).SetStatus(status).SetUpdatedAt(s.Now.Now()).Save(ctx)
		if ent.IsNotFound(err) {
			return nil, seatflow.Errorf(seatflow.ENOTFOUND, "movie %d does not exist", id)
		}
		return append(movieListKeys(), keys.Movie(id)), err
	})
	if err != nil {
		return nil, err
	}
	return toMovie(updated), nil
}

func nonNil(g []string) []string {
	if g == nil {
		return []string{}
	}
	return g
}

// validateHall checks a hall layout and returns its seats, laid out front to back with
// shorter rows centred: y is the row index, x the seat's column.
func validateHall(in *HallInput) ([]seatflow.Seat, error) {
	in.Name = strings.TrimSpace(in.Name)
	switch {
	case in.Name == "" || utf8.RuneCountInString(in.Name) > seatflow.MaxHallName:
		return nil, invalid("name must be 1 to %d characters", seatflow.MaxHallName)
	case len(in.Rows) == 0:
		return nil, invalid("a hall needs at least one row of seats")
	case len(in.Rows) > maxRows:
		return nil, invalid("a hall has at most %d rows", maxRows)
	}
	if err := checkText("name", in.Name, false); err != nil {
		return nil, err
	}
	widest, total := 0, 0
	labels := map[string]bool{}
	for i := range in.Rows {
		r := &in.Rows[i]
		r.Label = strings.TrimSpace(r.Label)
		if r.Label == "" || utf8.RuneCountInString(r.Label) > seatflow.MaxRowLabel {
			return nil, invalid("row %d: label must be 1 to %d characters", i+1, seatflow.MaxRowLabel)
		}
		if err := checkText(fmt.Sprintf("row %d: label", i+1), r.Label, false); err != nil {
			return nil, err
		}
		if labels[strings.ToUpper(r.Label)] {
			return nil, invalid("row label %q is used twice", r.Label)
		}
		labels[strings.ToUpper(r.Label)] = true
		if r.Seats < 1 || r.Seats > maxSeatsPerRow {
			return nil, invalid("row %s: seats must be between 1 and %d", r.Label, maxSeatsPerRow)
		}
		if err := checkRowNumbers(r.Label, "unsellable", r.Unsellable, r.Seats, nil); err != nil {
			return nil, err
		}
		kinds := map[int]bool{} // seats given a kind of their own: one kind each
		if err := checkRowNumbers(r.Label, "accessible", r.Accessible, r.Seats, kinds); err != nil {
			return nil, err
		}
		if err := checkRowNumbers(r.Label, "companion", r.Companion, r.Seats, kinds); err != nil {
			return nil, err
		}
		if r.Kind != nil && !r.Kind.Valid() {
			return nil, invalid("row %s: unknown seat kind %q", r.Label, *r.Kind)
		}
		widest = max(widest, r.Seats)
		total += r.Seats
	}
	if total > maxHallSeats {
		return nil, invalid("a hall has at most %d seats", maxHallSeats)
	}
	var seats []seatflow.Seat
	for y, r := range in.Rows {
		kind := seatflow.SeatStandard
		if r.Kind != nil {
			kind = *r.Kind
		}
		unsellable := make(map[int]bool, len(r.Unsellable))
		for _, n := range r.Unsellable {
			unsellable[n] = true
		}
		kindOf := map[int]seatflow.SeatKind{}
		for _, n := range r.Accessible {
			kindOf[n] = seatflow.SeatAccessible
		}
		for _, n := range r.Companion {
			kindOf[n] = seatflow.SeatCompanion
		}
		offset := (widest - r.Seats) / 2
		row := len(seats)
		for n := 1; n <= r.Seats; n++ {
			k, ok := kindOf[n]
			if !ok {
				k = kind
			}
			seats = append(seats, seatflow.Seat{Row: r.Label, Number: n, X: offset + n - 1, Y: y, Kind: k, Sellable: !unsellable[n]})
		}
		if err := checkCompanionSeats(r.Label, seats[row:]); err != nil {
			return nil, err
		}
	}
	if sellable := countSellable(seats); sellable == 0 {
		return nil, invalid("a hall needs at least one sellable seat")
	}
	return seats, nil
}

// checkRowNumbers checks a list of seat numbers of row label (what names the list): each
// a seat of the row (1..seats) and listed once. kinds, when not nil, holds the seats given
// a kind by an earlier list: a seat in two such lists is refused.
func checkRowNumbers(label, what string, numbers []int, seats int, kinds map[int]bool) error {
	seen := map[int]bool{}
	for _, n := range numbers {
		if n < 1 || n > seats {
			return invalid("row %s: %s seat %d is not a seat of the row (1..%d)", label, what, n, seats)
		}
		if seen[n] {
			return invalid("row %s: %s seat %d is listed twice", label, what, n)
		}
		seen[n] = true
		if kinds != nil {
			if kinds[n] {
				return invalid("row %s: seat %d is both accessible and companion", label, n)
			}
			kinds[n] = true
		}
	}
	return nil
}

// checkCompanionSeats refuses a row (its seats by number) with a companion seat that could
// never be sold: every stretch of adjacent sellable ACCESSIBLE and COMPANION seats must fit
// the companion rule (seatflow.CompanionsFit), as an order's seats must.
func checkCompanionSeats(label string, row []seatflow.Seat) error {
	accessible, companions, first := 0, 0, 0
	for i := 0; i <= len(row); i++ {
		if i < len(row) && row[i].Sellable && row[i].Kind.Reserved() {
			if accessible+companions == 0 {
				first = row[i].Number
			}
			if row[i].Kind == seatflow.SeatAccessible {
				accessible++
			} else {
				companions++
			}
			continue
		}
		if !seatflow.CompanionsFit(accessible, companions) {
			return invalid("row %s: the companion seats from seat %d need an accessible seat next to them, at most %d companions per accessible seat",
				label, first, seatflow.MaxCompanions)
		}
		accessible, companions = 0, 0
	}
	return nil
}

func countSellable(seats []seatflow.Seat) int {
	n := 0
	for _, st := range seats {
		if st.Sellable {
			n++
		}
	}
	return n
}

// CreateHall adds a hall with its seat layout.
func (s *Service) CreateHall(ctx context.Context, in HallInput) (*seatflow.Hall, error) {
	seats, err := validateHall(&in)
	if err != nil {
		return nil, err
	}
	var id int
	err = s.write(ctx, func(tx *ent.Tx) ([]string, error) {
		create := tx.Hall.Create().SetName(in.Name).SetCreatedAt(s.Now.Now())
		cinemaID, err := hallCinema(ctx, tx, in.CinemaID)
		if err != nil {
			return nil, err
		}
		if cinemaID != 0 {
			create.SetCinemaID(cinemaID)
		}
		h, err := create.Save(ctx)
		if err != nil {
			return nil, err
		}
		id = h.ID
		builders := make([]*ent.SeatCreate, len(seats))
		for i, st := range seats {
			builders[i] = tx.Seat.Create().SetHallID(h.ID).SetRowLabel(st.Row).SetNumber(st.Number).
				SetX(st.X).SetY(st.Y).SetKind(st.Kind).SetSellable(st.Sellable)
		}
		if err := tx.Seat.CreateBulk(builders...).Exec(ctx); err != nil {
			return nil, err
		}
		return []string{keys.Hall(h.ID), keys.HallsOf(cinemaID)}, nil
	})
	if err != nil {
		return nil, err
	}
	halls, err := s.loadHalls(ctx, []int{id})
	if err != nil {
		return nil, err
	}
	return halls[id], nil
}

// hallCinema is the cinema a new hall joins: the one asked for (NOT_FOUND when it does not
// exist), else the default cinema (the oldest, the one the migration makes); 0 when there
// is no cinema at all.
func hallCinema(ctx context.Context, tx *ent.Tx, asked *int) (int, error) {
	if asked != nil {
		ok, err := tx.Cinema.Query().Where(cinema.ID(*asked)).Exist(ctx)
		if err != nil {
			return 0, err
		}
		if !ok {
			return 0, seatflow.Errorf(seatflow.ENOTFOUND, "cinema %d does not exist", *asked)
		}
		return *asked, nil
	}
	def, err := tx.Cinema.Query().Order(ent.Asc(cinema.FieldID)).FirstID(ctx)
	if ent.IsNotFound(err) {
		return 0, nil
	}
	return def, err
}
