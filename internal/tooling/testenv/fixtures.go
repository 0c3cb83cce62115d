package testenv

import (
	"context"
	"strconv"
	"testing"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/cinema"
)

// ShowtimeSpec describes a fixture showtime. Zero fields take the defaults noted.
type ShowtimeSpec struct {
	Rows, PerRow int // hall size: rows A, B, … of PerRow seats numbered 1..PerRow
	// PremiumFirstRow makes row A PREMIUM (the rest STANDARD).
	PremiumFirstRow bool
	// Kinds gives seats a kind of their own, by label ("A1": ACCESSIBLE); the prices then
	// need those kinds (Prices).
	Kinds     map[string]seatflow.SeatKind
	Status    seatflow.ShowtimeStatus // ON_SALE
	Limit     int                     // purchase limit, 6
	AllowGaps bool
	StartsIn  time.Duration             // from now, 1h
	Prices    map[seatflow.SeatKind]int // ADULT prices: STANDARD 1000 and PREMIUM 1500
	// TicketPrices are prices of other ticket types, added to the ADULT ones.
	TicketPrices []seatflow.Price
	Currency     string // EUR
}

// Showtime writes a movie, a hall and a showtime straight into db (no cache, no seat
// hash: the caller builds one if it needs it) and returns the showtime's and hall's ids.
// Seats sit at x = 10·number, y = 10·row index.
func Showtime(tb testing.TB, db *ent.Client, now time.Time, spec ShowtimeSpec) (showID, hallID int) {
	tb.Helper()
	ctx := context.Background()
	if spec.Status == "" {
		spec.Status = seatflow.ShowtimeOnSale
	}
	if spec.Limit == 0 {
		spec.Limit = 6
	}
	if spec.StartsIn == 0 {
		spec.StartsIn = time.Hour
	}
	if spec.Prices == nil {
		spec.Prices = map[seatflow.SeatKind]int{seatflow.SeatStandard: 1000, seatflow.SeatPremium: 1500}
	}
	if spec.Currency == "" {
		spec.Currency = "EUR"
	}
	m := db.Movie.Create().SetTitle("Film").SetDurationMin(100).SetCreatedAt(now).SetUpdatedAt(now).SaveX(ctx)
	// The hall is in the default cinema, as a hall created without one is (the migration
	// made it).
	hc := db.Hall.Create().SetName("Hall").SetCreatedAt(now)
	if def, err := db.Cinema.Query().Order(ent.Asc(cinema.FieldID)).FirstID(ctx); err == nil {
		hc.SetCinemaID(def)
	}
	h := hc.SaveX(ctx)
	bulk := make([]*ent.SeatCreate, 0, spec.Rows*spec.PerRow)
	for r := range spec.Rows {
		kind := seatflow.SeatStandard
		if r == 0 && spec.PremiumFirstRow {
			kind = seatflow.SeatPremium
		}
		for n := 1; n <= spec.PerRow; n++ {
			row := string(rune('A' + r))
			k, ok := spec.Kinds[row+strconv.Itoa(n)]
			if !ok {
				k = kind
			}
			bulk = append(bulk, db.Seat.Create().SetHallID(h.ID).SetRowLabel(row).SetNumber(n).
				SetX(n*10).SetY(r*10).SetKind(k))
		}
	}
	db.Seat.CreateBulk(bulk...).SaveX(ctx)
	st := db.Showtime.Create().SetMovieID(m.ID).SetHallID(h.ID).SetStartsAt(now.Add(spec.StartsIn)).
		SetEndsAt(now.Add(spec.StartsIn + 2*time.Hour)).SetStatus(spec.Status).SetPurchaseLimit(spec.Limit).
		SetAllowSeatGaps(spec.AllowGaps).SetPrices(append(seatflow.AdultPrices(spec.Prices), spec.TicketPrices...)).SetCurrency(spec.Currency).
		SetCreatedAt(now).SetUpdatedAt(now).SaveX(ctx)
	return st.ID, h.ID
}
