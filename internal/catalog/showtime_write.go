package catalog

import (
	"context"
	"slices"
	"sort"
	"strings"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/predicate"
	"seatflow/ent/showtime"
	"seatflow/internal/keys"
)

// validatePrices checks the prices of a showtime in hall: at most one per (seat kind,
// ticket type), an omitted type being ADULT, no ACCESSIBLE or COMPANION price above the
// STANDARD price of its type, and an ADULT price for every kind of the hall's sellable
// seats (a seat held without a type is ADULT). It returns them in seat
// kind, then ticket type order.
func validatePrices(prices []PriceInput, hall *seatflow.Hall) (seatflow.PriceList, error) {
	type key struct {
		kind seatflow.SeatKind
		typ  seatflow.TicketType
	}
	given := make(map[key]int, len(prices))
	for _, p := range prices {
		if p.TicketType == "" {
			p.TicketType = seatflow.TicketAdult
		}
		if !p.Kind.Valid() {
			return nil, invalid("unknown seat kind %q", p.Kind)
		}
		if !p.TicketType.Valid() {
			return nil, invalid("unknown ticket type %q", p.TicketType)
		}
		k := key{p.Kind, p.TicketType}
		if _, dup := given[k]; dup {
			return nil, invalid("price for %s %s is given twice", p.Kind, p.TicketType)
		}
		if p.AmountCents < 0 || p.AmountCents > maxPriceCents {
			return nil, invalid("price for %s %s must be between 0 and %d cents", p.Kind, p.TicketType, maxPriceCents)
		}
		given[k] = p.AmountCents
	}
	// Accessible seats and their companions cost no more than a standard seat (docs/DESIGN.md
	// "Accessible seats and companions"); a ticket type without a STANDARD price has no bound.
	for _, kind := range []seatflow.SeatKind{seatflow.SeatAccessible, seatflow.SeatCompanion} {
		for _, typ := range seatflow.TicketTypes {
			cents, ok := given[key{kind, typ}]
			if std, bounded := given[key{seatflow.SeatStandard, typ}]; ok && bounded && cents > std {
				return nil, invalid("price for %s %s (%d cents) is above the STANDARD %s price (%d cents): accessible and companion seats cost at most a standard seat",
					kind, typ, cents, typ, std)
			}
		}
	}
	var missing []string
	for _, st := range hall.Seats {
		if _, ok := given[key{st.Kind, seatflow.TicketAdult}]; !ok && st.Sellable && !slices.Contains(missing, string(st.Kind)) {
			missing = append(missing, string(st.Kind))
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, invalid("prices miss %s: hall %q has seats of that kind (each needs an ADULT price)", strings.Join(missing, ", "), hall.Name)
	}
	out := make(seatflow.PriceList, 0, len(given))
	for _, kind := range seatflow.SeatKinds {
		for _, typ := range seatflow.TicketTypes {
			if cents, ok := given[key{kind, typ}]; ok {
				out = append(out, seatflow.Price{Kind: kind, TicketType: typ, AmountCents: cents})
			}
		}
	}
	return out, nil
}

func (s *Service) checkStart(startsAt time.Time) error {
	if !startsAt.After(s.Now.Now()) {
		return invalid("startsAt %s is in the past", startsAt.UTC().Format(time.RFC3339))
	}
	if startsAt.After(s.Now.Now().AddDate(2, 0, 0)) {
		return invalid("startsAt must be within two years")
	}
	return nil
}

// checkHallFree refuses a showtime that overlaps another live showtime in the same hall.
func checkHallFree(ctx context.Context, tx *ent.Tx, hallID int, start, end time.Time, except int) error {
	clash, err := tx.Showtime.Query().Where(
		showtime.HallID(hallID), showtime.IDNEQ(except),
		showtime.StatusNEQ(seatflow.ShowtimeCancelled),
		showtime.StartsAtLT(end), showtime.EndsAtGT(start),
	).First(ctx)
	if ent.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	return invalid("the hall is busy then: showtime %d runs %s–%s", clash.ID,
		clash.StartsAt.UTC().Format(time.RFC3339), clash.EndsAt.UTC().Format(time.RFC3339))
}

// CreateShowtime schedules a showtime; it is SCHEDULED until sales open.
func (s *Service) CreateShowtime(ctx context.Context, in ShowtimeInput) (*seatflow.Showtime, error) {
	limit := defaultPurchase
	if in.PurchaseLimit != nil {
		limit = *in.PurchaseLimit
	}
	if limit < 1 || limit > maxPurchase {
		return nil, invalid("purchaseLimit must be between 1 and %d", maxPurchase)
	}
	if err := s.checkStart(in.StartsAt); err != nil {
		return nil, err
	}
	var id int
	err := s.write(ctx, func(tx *ent.Tx) ([]string, error) {
		m, err := tx.Movie.Get(ctx, in.MovieID)
		if ent.IsNotFound(err) {
			return nil, seatflow.Errorf(seatflow.ENOTFOUND, "movie %d does not exist", in.MovieID)
		} else if err != nil {
			return nil, err
		}
		if m.Status != seatflow.MovieListed {
			return nil, invalid("movie %d is delisted: list it before scheduling showtimes", m.ID)
		}
		halls, err := hallsFrom(ctx, tx.Client(), []int{in.HallID})
		if err != nil {
			return nil, err
		}
		hall := halls[in.HallID]
		if hall == nil {
			return nil, seatflow.Errorf(seatflow.ENOTFOUND, "hall %d does not exist", in.HallID)
		}
		prices, err := validatePrices(in.Prices, hall)
		if err != nil {
			return nil, err
		}
		start := in.StartsAt.UTC()
		end := start.Add(time.Duration(m.DurationMin) * time.Minute)
		if err := checkHallFree(ctx, tx, hall.ID, start, end, 0); err != nil {
			return nil, err
		}
		now := s.Now.Now()
		st, err := tx.Showtime.Create().SetMovieID(m.ID).SetHallID(hall.ID).SetStartsAt(start).SetEndsAt(end).
			SetPurchaseLimit(limit).SetAllowSeatGaps(in.AllowSeatGaps != nil && *in.AllowSeatGaps).
			SetPrices(prices).SetCreatedAt(now).SetUpdatedAt(now).Save(ctx)
		if err != nil {
			return nil, err
		}
		id = st.ID
		c, err := cinemaOfHall(ctx, tx, hall.ID)
		if err != nil {
			return nil, err
		}
		return []string{keys.Showtime(st.ID), keys.ShowtimesOn(c.ID, c.DayOf(start)), keys.ShowtimesOf(m.ID)}, nil
	})
	if err != nil {
		return nil, err
	}
	return s.FreshShowtime(ctx, id)
}

// RescheduleShowtime moves a showtime that has not closed; the day it left and the day it
// moved to are both invalidated, so neither lists a stale copy.
func (s *Service) RescheduleShowtime(ctx context.Context, id int, startsAt time.Time) (*seatflow.Showtime, error) {
	if err := s.checkStart(startsAt); err != nil {
		return nil, err
	}
	err := s.write(ctx, func(tx *ent.Tx) ([]string, error) {
		st, err := showtimeIn(ctx, tx, id)
		if err != nil {
			return nil, err
		}
		if st.Status != seatflow.ShowtimeScheduled && st.Status != seatflow.ShowtimeOnSale {
			return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "showtime %d is %s and cannot be rescheduled", id, st.Status)
		}
		start := startsAt.UTC()
		end := start.Add(st.EndsAt.Sub(st.StartsAt))
		if err := checkHallFree(ctx, tx, st.HallID, start, end, id); err != nil {
			return nil, err
		}
		n, err := tx.Showtime.Update().Where(showtimeIs(id, st.Status)).
			SetStartsAt(start).SetEndsAt(end).SetUpdatedAt(s.Now.Now()).Save(ctx)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "showtime %d changed meanwhile; try again", id)
		}
		c, err := cinemaOfHall(ctx, tx, st.HallID)
		if err != nil {
			return nil, err
		}
		// The day it left and the day it moved to, both in its cinema's time zone.
		return []string{keys.Showtime(id), keys.ShowtimesOn(c.ID, c.DayOf(st.StartsAt)), keys.ShowtimesOn(c.ID, c.DayOf(start)),
			keys.ShowtimesOf(st.MovieID)}, nil
	})
	if err != nil {
		return nil, err
	}
	return s.FreshShowtime(ctx, id)
}

// CancelShowtime cancels a showtime that has not been cancelled already; it leaves the
// day's and the movie's lists, and its tickets are revoked in the same transaction. Orders
// are not touched here: refunds are a payment matter (and booking refuses payments for a
// cancelled showtime).
func (s *Service) CancelShowtime(ctx context.Context, id int) (*seatflow.Showtime, error) {
	return s.setStatus(ctx, id, seatflow.ShowtimeCancelled, true)
}

// showtimeIn reads a showtime inside a write's transaction, NOT_FOUND when it does not exist.
func showtimeIn(ctx context.Context, tx *ent.Tx, id int) (*ent.Showtime, error) {
	st, err := tx.Showtime.Get(ctx, id)
	if ent.IsNotFound(err) {
		return nil, seatflow.Errorf(seatflow.ENOTFOUND, "showtime %d does not exist", id)
	}
	return st, err
}

// showtimeIs matches a showtime still in the status it was read in: the conditional
// update that makes status changes safe without row locks.
func showtimeIs(id int, status seatflow.ShowtimeStatus) predicate.Showtime {
	return showtime.And(showtime.ID(id), showtime.StatusEQ(status))
}
