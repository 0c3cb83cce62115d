package catalog

import (
	"slices"
	"strings"
	"testing"
	"time"

	"seatflow"
	"seatflow/internal/tooling/testenv"
)

func ptr[T any](v T) *T { return &v }

// wantInvalid fails unless err is BAD_USER_INPUT with a message containing want.
func wantInvalid(t *testing.T, err error, want string) {
	t.Helper()
	if got := seatflow.ErrorCode(err); got != seatflow.EINVALID {
		t.Fatalf("code = %q (%v), want %q", got, err, seatflow.EINVALID)
	}
	if got := seatflow.ErrorMessage(err); !strings.Contains(got, want) {
		t.Errorf("message = %q, want it to contain %q", got, want)
	}
}

func TestValidateMovie(t *testing.T) {
	valid := func(change func(*MovieInput)) MovieInput {
		in := MovieInput{Title: "Metropolis", DurationMinutes: 153, Synopsis: ptr("A city of the future."),
			Rating: ptr("PG"), Genres: []string{"Drama", "Sci-Fi"}, PosterURL: ptr("https://img.example/m.png")}
		if change != nil {
			change(&in)
		}
		return in
	}
	cases := []struct {
		name string
		in   MovieInput
		want string // "" = accepted; else a part of the BAD_USER_INPUT message
	}{
		{"Valid", valid(nil), ""},
		{"TitleOfMaxLength", valid(func(in *MovieInput) { in.Title = strings.Repeat("t", 200) }), ""},
		{"TitleCountsRunesNotBytes", valid(func(in *MovieInput) { in.Title = strings.Repeat("é", 200) }), ""},
		{"DurationOfOneMinute", valid(func(in *MovieInput) { in.DurationMinutes = 1 }), ""},
		{"DurationOfTenHours", valid(func(in *MovieInput) { in.DurationMinutes = 600 }), ""},
		{"NoOptionalFields", MovieInput{Title: "M", DurationMinutes: 90}, ""},
		{"EmptyPosterMeansNone", valid(func(in *MovieInput) { in.PosterURL = ptr("") }), ""},
		{"HTTPPoster", valid(func(in *MovieInput) { in.PosterURL = ptr("http://img.example/m.png") }), ""},

		{"EmptyTitle", valid(func(in *MovieInput) { in.Title = "" }), "title must not be empty"},
		{"BlankTitle", valid(func(in *MovieInput) { in.Title = " \t\n " }), "title must not be empty"},
		{"TitleTooLong", valid(func(in *MovieInput) { in.Title = strings.Repeat("t", 201) }), "title must be at most 200"},
		{"TitleTooLongInRunes", valid(func(in *MovieInput) { in.Title = strings.Repeat("é", 201) }), "title must be at most 200"},
		{"ZeroDuration", valid(func(in *MovieInput) { in.DurationMinutes = 0 }), "durationMinutes must be between 1 and 600"},
		{"NegativeDuration", valid(func(in *MovieInput) { in.DurationMinutes = -90 }), "durationMinutes"},
		{"DurationTooLong", valid(func(in *MovieInput) { in.DurationMinutes = 601 }), "durationMinutes"},
		{"SynopsisTooLong", valid(func(in *MovieInput) { in.Synopsis = ptr(strings.Repeat("s", 5001)) }), "synopsis"},
		{"RatingTooLong", valid(func(in *MovieInput) { in.Rating = ptr(strings.Repeat("r", 21)) }), "rating"},
		{"TooManyGenres", valid(func(in *MovieInput) { in.Genres = make([]string, 11); fill(in.Genres, "g") }), "at most 10 genres"},
		{"BlankGenre", valid(func(in *MovieInput) { in.Genres = []string{"Drama", "  "} }), "each genre"},
		{"GenreTooLong", valid(func(in *MovieInput) { in.Genres = []string{strings.Repeat("g", 41)} }), "each genre"},

		{"SynopsisWithLineFeeds", valid(func(in *MovieInput) { in.Synopsis = ptr("One.\n\nTwo.") }), ""},
		{"TitleWithNUL", valid(func(in *MovieInput) { in.Title = "Metro\x00polis" }), "title contains the control character U+0000"},
		{"TitleWithOverride", valid(func(in *MovieInput) { in.Title = "Metro\u202epolis" }), "title contains the control character U+202E"},
		{"SynopsisWithEscape", valid(func(in *MovieInput) { in.Synopsis = ptr("A \x1b[2J city") }), "synopsis contains"},
		{"RatingWithC1", valid(func(in *MovieInput) { in.Rating = ptr("P\u0085G") }), "rating contains"},
		{"GenreWithIsolate", valid(func(in *MovieInput) { in.Genres = []string{"Dra\u2066ma"} }), "genre contains"},
		{"PosterOfMultibyteAtTheLimit", valid(func(in *MovieInput) {
			in.PosterURL = ptr("https://img.example/" + strings.Repeat("é", 480))
		}), ""},

		{"PosterWithoutScheme", valid(func(in *MovieInput) { in.PosterURL = ptr("img.example/m.png") }), "posterUrl"},
		{"PosterRelative", valid(func(in *MovieInput) { in.PosterURL = ptr("/posters/m.png") }), "posterUrl"},
		{"PosterFTP", valid(func(in *MovieInput) { in.PosterURL = ptr("ftp://img.example/m.png") }), "posterUrl"},
		{"PosterJavascript", valid(func(in *MovieInput) { in.PosterURL = ptr("javascript:alert(1)") }), "posterUrl"},
		{"PosterDataURL", valid(func(in *MovieInput) { in.PosterURL = ptr("data:image/png;base64,AAAA") }), "posterUrl"},
		{"PosterWithoutHost", valid(func(in *MovieInput) { in.PosterURL = ptr("https:///m.png") }), "posterUrl"},
		{"PosterUnparsable", valid(func(in *MovieInput) { in.PosterURL = ptr("https://img.example/%zz") }), "posterUrl"},
		{"PosterTooLong", valid(func(in *MovieInput) {
			in.PosterURL = ptr("https://img.example/" + strings.Repeat("p", 481))
		}), "posterUrl"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := c.in
			err := validateMovie(&in)
			if c.want == "" {
				if err != nil {
					t.Fatalf("validateMovie: %v, want accepted", err)
				}
				return
			}
			wantInvalid(t, err, c.want)
		})
	}
	t.Run("TitleIsTrimmed", func(t *testing.T) {
		in := valid(func(in *MovieInput) { in.Title = "  Metropolis \n" })
		if err := validateMovie(&in); err != nil {
			t.Fatal(err)
		}
		if got, want := in.Title, "Metropolis"; got != want {
			t.Errorf("title = %q, want %q", got, want)
		}
	})
}

func fill(s []string, v string) {
	for i := range s {
		s[i] = v
	}
}

// rows returns n rows labelled R1, R2, … of perRow seats each.
func rows(n, perRow int) []HallRowInput {
	out := make([]HallRowInput, n)
	for i := range out {
		out[i] = HallRowInput{Label: "R" + string(rune('0'+i/10)) + string(rune('0'+i%10)), Seats: perRow}
	}
	return out
}

func TestValidateHall(t *testing.T) {
	kind := func(k seatflow.SeatKind) *seatflow.SeatKind { return &k }
	cases := []struct {
		name string
		in   HallInput
		want string // "" = accepted; else a part of the BAD_USER_INPUT message
	}{
		{"Valid", HallInput{Name: "Hall 1", Rows: []HallRowInput{{Label: "A", Seats: 10}, {Label: "B", Seats: 12}}}, ""},
		{"MaxRows", HallInput{Name: "Deep", Rows: rows(50, 1)}, ""},
		{"MaxSeatsPerRowAndHall", HallInput{Name: "Big", Rows: rows(20, 100)}, ""},
		{"EveryKnownKind", HallInput{Name: "H", Rows: []HallRowInput{
			{Label: "A", Seats: 1, Kind: kind(seatflow.SeatPremium)},
			{Label: "B", Seats: 1, Kind: kind(seatflow.SeatAccessible)},
			{Label: "C", Seats: 1, Kind: kind(seatflow.SeatStandard)},
		}}, ""},
		{"SomeSeatsUnsellable", HallInput{Name: "H", Rows: []HallRowInput{{Label: "A", Seats: 3, Unsellable: []int{1, 3}}}}, ""},
		{"MultibyteNameAndLabelAtTheLimits", HallInput{Name: strings.Repeat("ü", 100), Rows: []HallRowInput{{Label: strings.Repeat("Ä", 8), Seats: 1}}}, ""},

		{"EmptyName", HallInput{Name: "  ", Rows: rows(1, 1)}, "name must be 1 to 100"},
		{"NameTooLong", HallInput{Name: strings.Repeat("n", 101), Rows: rows(1, 1)}, "name must be 1 to 100"},
		{"NoRows", HallInput{Name: "H"}, "at least one row"},
		{"NameWithDEL", HallInput{Name: "Ha\x7fll", Rows: rows(1, 1)}, "name contains the control character U+007F"},
		{"RowLabelWithOverride", HallInput{Name: "H", Rows: []HallRowInput{{Label: "A\u202dB", Seats: 1}}}, "row 1: label contains"},
		{"TooManyRows", HallInput{Name: "H", Rows: rows(51, 1)}, "at most 50 rows"},
		{"EmptyRowLabel", HallInput{Name: "H", Rows: []HallRowInput{{Label: " ", Seats: 1}}}, "row 1: label must be 1 to 8"},
		{"RowLabelTooLong", HallInput{Name: "H", Rows: []HallRowInput{{Label: "A", Seats: 1}, {Label: "ABCDEFGHI", Seats: 1}}},
			"row 2: label must be 1 to 8"},
		{"DuplicateRowLabel", HallInput{Name: "H", Rows: []HallRowInput{{Label: "A", Seats: 1}, {Label: "A", Seats: 1}}},
			`row label "A" is used twice`},
		{"DuplicateRowLabelIgnoresCase", HallInput{Name: "H", Rows: []HallRowInput{{Label: "a", Seats: 1}, {Label: "A", Seats: 1}}},
			"is used twice"},
		{"DuplicateRowLabelIgnoresSpace", HallInput{Name: "H", Rows: []HallRowInput{{Label: "A", Seats: 1}, {Label: " A ", Seats: 1}}},
			"is used twice"},
		{"RowWithoutSeats", HallInput{Name: "H", Rows: []HallRowInput{{Label: "A", Seats: 0}}}, "row A: seats must be between 1 and 100"},
		{"RowTooLong", HallInput{Name: "H", Rows: []HallRowInput{{Label: "A", Seats: 101}}}, "row A: seats must be between 1 and 100"},
		{"UnsellableSeatZero", HallInput{Name: "H", Rows: []HallRowInput{{Label: "A", Seats: 5, Unsellable: []int{0}}}},
			"row A: unsellable seat 0 is not a seat of the row (1..5)"},
		{"UnsellableSeatBeyondRow", HallInput{Name: "H", Rows: []HallRowInput{{Label: "A", Seats: 5, Unsellable: []int{6}}}},
			"unsellable seat 6 is not a seat of the row"},
		{"UnsellableSeatNegative", HallInput{Name: "H", Rows: []HallRowInput{{Label: "A", Seats: 5, Unsellable: []int{-1}}}},
			"unsellable seat -1 is not a seat of the row"},
		{"UnsellableSeatListedTwice", HallInput{Name: "H", Rows: []HallRowInput{{Label: "A", Seats: 5, Unsellable: []int{2, 4, 2}}}},
			"row A: unsellable seat 2 is listed twice"},
		{"UnknownSeatKind", HallInput{Name: "H", Rows: []HallRowInput{{Label: "A", Seats: 1, Kind: kind("VIP")}}},
			`row A: unknown seat kind "VIP"`},
		{"LowerCaseSeatKind", HallInput{Name: "H", Rows: []HallRowInput{{Label: "A", Seats: 1, Kind: kind("premium")}}},
			"unknown seat kind"},
		{"TooManySeats", HallInput{Name: "H", Rows: append(rows(20, 100), HallRowInput{Label: "Z", Seats: 1})},
			"at most 2000 seats"},
		{"NoSellableSeat", HallInput{Name: "H", Rows: []HallRowInput{
			{Label: "A", Seats: 2, Unsellable: []int{1, 2}}, {Label: "B", Seats: 1, Unsellable: []int{1}},
		}}, "at least one sellable seat"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := c.in
			seats, err := validateHall(&in)
			if c.want == "" {
				if err != nil {
					t.Fatalf("validateHall: %v, want accepted", err)
				}
				if len(seats) == 0 {
					t.Error("an accepted hall has no seats")
				}
				return
			}
			if seats != nil {
				t.Errorf("refused hall returned %d seats", len(seats))
			}
			wantInvalid(t, err, c.want)
		})
	}
}

// TestHallLayout: rows go front to back (y = row index); seats are numbered from 1 left
// to right, and a shorter row is centred under the widest (an odd difference leans
// left); kinds and unsellable seats are as given.
func TestHallLayout(t *testing.T) {
	in := HallInput{Name: " Main ", Rows: []HallRowInput{
		{Label: " A ", Seats: 2, Kind: ptr(seatflow.SeatPremium)},
		{Label: "B", Seats: 6, Unsellable: []int{6}},
		{Label: "C", Seats: 3},
		{Label: "D", Seats: 6, Kind: ptr(seatflow.SeatAccessible), Unsellable: []int{1, 2}},
	}}
	seats, err := validateHall(&in)
	if err != nil {
		t.Fatal(err)
	}
	type pos struct {
		Row      string
		Number   int
		X, Y     int
		Kind     seatflow.SeatKind
		Sellable bool
	}
	std, pre, acc := seatflow.SeatStandard, seatflow.SeatPremium, seatflow.SeatAccessible
	want := []pos{
		{"A", 1, 2, 0, pre, true}, {"A", 2, 3, 0, pre, true}, // (6-2)/2 = 2
		{"B", 1, 0, 1, std, true}, {"B", 2, 1, 1, std, true}, {"B", 3, 2, 1, std, true},
		{"B", 4, 3, 1, std, true}, {"B", 5, 4, 1, std, true}, {"B", 6, 5, 1, std, false},
		{"C", 1, 1, 2, std, true}, {"C", 2, 2, 2, std, true}, {"C", 3, 3, 2, std, true}, // (6-3)/2 = 1
		{"D", 1, 0, 3, acc, false}, {"D", 2, 1, 3, acc, false}, {"D", 3, 2, 3, acc, true},
		{"D", 4, 3, 3, acc, true}, {"D", 5, 4, 3, acc, true}, {"D", 6, 5, 3, acc, true},
	}
	if len(seats) != len(want) {
		t.Fatalf("got %d seats, want %d", len(seats), len(want))
	}
	for i, s := range seats {
		if got := (pos{s.Row, s.Number, s.X, s.Y, s.Kind, s.Sellable}); got != want[i] {
			t.Errorf("seat %d = %+v, want %+v", i, got, want[i])
		}
	}
	t.Run("NameAndLabelsTrimmed", func(t *testing.T) {
		if got, want := in.Name, "Main"; got != want {
			t.Errorf("name = %q, want %q", got, want)
		}
		if got, want := in.Rows[0].Label, "A"; got != want {
			t.Errorf("row label = %q, want %q", got, want)
		}
	})
}

func TestValidatePrices(t *testing.T) {
	// A hall of STANDARD and PREMIUM seats whose only ACCESSIBLE seat is unsellable.
	hall := &seatflow.Hall{Name: "Main", Seats: []seatflow.Seat{
		{Kind: seatflow.SeatStandard, Sellable: true},
		{Kind: seatflow.SeatStandard, Sellable: false},
		{Kind: seatflow.SeatPremium, Sellable: true},
		{Kind: seatflow.SeatAccessible, Sellable: false},
	}}
	std, pre, acc := seatflow.SeatStandard, seatflow.SeatPremium, seatflow.SeatAccessible
	adult, child, senior := seatflow.TicketAdult, seatflow.TicketChild, seatflow.TicketSenior
	pin := func(kind seatflow.SeatKind, cents int, typ ...seatflow.TicketType) PriceInput {
		p := PriceInput{Kind: kind, AmountCents: cents}
		if len(typ) > 0 {
			p.TicketType = typ[0]
		}
		return p
	}
	pr := func(kind seatflow.SeatKind, typ seatflow.TicketType, cents int) seatflow.Price {
		return seatflow.Price{Kind: kind, TicketType: typ, AmountCents: cents}
	}
	cases := []struct {
		name   string
		prices []PriceInput
		want   seatflow.PriceList // the prices accepted, in kind then type order; nil when refused
		// wantMsg is a part of the BAD_USER_INPUT message of a refusal.
		wantMsg string
	}{
		// ACCESSIBLE seats exist but none is sellable: that kind needs no price.
		{"EverySellableKindPriced", []PriceInput{pin(std, 1000), pin(pre, 1500)}, seatflow.PriceList{pr(std, adult, 1000), pr(pre, adult, 1500)}, ""},
		{"FreeSeatsAllowed", []PriceInput{pin(std, 0), pin(pre, 0)}, seatflow.PriceList{pr(std, adult, 0), pr(pre, adult, 0)}, ""},
		{"MaxPrice", []PriceInput{pin(std, 10_000_000), pin(pre, 1)}, seatflow.PriceList{pr(std, adult, 10_000_000), pr(pre, adult, 1)}, ""},
		{"PriceOfKindNotInHallKept", []PriceInput{pin(std, 1000), pin(pre, 1500), pin(acc, 500)},
			seatflow.PriceList{pr(std, adult, 1000), pr(pre, adult, 1500), pr(acc, adult, 500)}, ""},
		{"TicketTypesPerKind", []PriceInput{pin(pre, 1500), pin(std, 600, child), pin(std, 1000, adult), pin(pre, 900, senior)},
			seatflow.PriceList{pr(std, adult, 1000), pr(std, child, 600), pr(pre, adult, 1500), pr(pre, senior, 900)}, ""},

		{"PriceMissingForAKind", []PriceInput{pin(std, 1000)}, nil, `prices miss PREMIUM: hall "Main" has seats of that kind`},
		{"OnlyAChildPriceForAKind", []PriceInput{pin(std, 1000), pin(pre, 800, child)}, nil, `prices miss PREMIUM: hall "Main" has seats of that kind`},
		{"NoPrices", nil, nil, "prices miss PREMIUM, STANDARD"},
		{"PriceGivenTwice", []PriceInput{pin(std, 1000), pin(pre, 1500), pin(std, 900)}, nil, "price for STANDARD ADULT is given twice"},
		{"OmittedTypeIsAdult", []PriceInput{pin(std, 1000), pin(pre, 1500), pin(std, 900, adult)}, nil, "price for STANDARD ADULT is given twice"},
		{"TypeGivenTwice", []PriceInput{pin(std, 1000), pin(pre, 1500), pin(std, 500, child), pin(std, 600, child)}, nil, "price for STANDARD CHILD is given twice"},
		{"NegativePrice", []PriceInput{pin(std, -1), pin(pre, 1500)}, nil, "price for STANDARD ADULT must be between 0 and 10000000 cents"},
		{"PriceTooHigh", []PriceInput{pin(std, 1000), pin(pre, 10_000_001)}, nil, "price for PREMIUM ADULT must be between 0"},
		{"UnknownKind", []PriceInput{pin(std, 1000), pin(pre, 1500), pin("VIP", 3000)}, nil, `unknown seat kind "VIP"`},
		{"UnknownTicketType", []PriceInput{pin(std, 1000), pin(pre, 1500), pin(std, 300, "PET")}, nil, `unknown ticket type "PET"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := validatePrices(c.prices, hall)
			if c.want == nil {
				if got != nil {
					t.Errorf("refused prices returned %v", got)
				}
				wantInvalid(t, err, c.wantMsg)
				return
			}
			if err != nil {
				t.Fatalf("validatePrices: %v, want %v", err, c.want)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("prices = %v, want %v", got, c.want)
			}
		})
	}
}

func TestCheckStart(t *testing.T) {
	now := time.Date(2030, 6, 15, 18, 0, 0, 0, time.UTC)
	s := &Service{Now: testenv.NewClock(now).Now}
	cases := []struct {
		name    string
		start   time.Time
		wantMsg string // "" = accepted
	}{
		{"OneSecondAhead", now.Add(time.Second), ""},
		{"NextWeek", now.AddDate(0, 0, 7), ""},
		{"ExactlyTwoYearsAhead", now.AddDate(2, 0, 0), ""},
		{"OtherTimeZone", now.Add(time.Hour).In(time.FixedZone("UTC+5", 5*3600)), ""},
		{"Now", now, "startsAt 2030-06-15T18:00:00Z is in the past"},
		{"InThePast", now.Add(-time.Minute), "is in the past"},
		{"ZeroTime", time.Time{}, "is in the past"},
		{"PastInOtherTimeZone", now.Add(-time.Hour).In(time.FixedZone("UTC+5", 5*3600)), "startsAt 2030-06-15T17:00:00Z is in the past"},
		{"MoreThanTwoYearsAhead", now.AddDate(2, 0, 0).Add(time.Second), "startsAt must be within two years"},
		{"TenYearsAhead", now.AddDate(10, 0, 0), "within two years"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := s.checkStart(c.start)
			if c.wantMsg == "" {
				if err != nil {
					t.Errorf("checkStart(%s): %v, want accepted", c.start, err)
				}
				return
			}
			wantInvalid(t, err, c.wantMsg)
		})
	}
}
