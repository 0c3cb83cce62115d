package waitlist

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/waitlistentry"
	"seatflow/internal/background"
	"seatflow/internal/booking"
	"seatflow/internal/database"
	"seatflow/internal/rdb"
	"seatflow/internal/redislock"
)

// How returned seats are offered (docs/DESIGN.md "Waiting list"). A release or unblock
// that returns seats tells this instance (Kick, through seats.Store.OnReturned); every
// instance also sweeps, each second, the showtimes with entries waiting, so seats returned
// by an instance that died before offering them wait a second at most. Offers are made
// exactly once whatever instances race: a seat goes from returned to held by one offer in
// one script (lua/offer.lua, all or nothing), and an entry gets one order, whose unique
// key names it, in the transaction that marks it OFFERED only while it is WAITING; the
// loser of either race gives back what it took and reads again.

// maxRounds bounds one showtime's offering: each round offers every seat it read or loses
// a race to another instance.
const maxRounds = 20

// Kick asks this instance to offer the seats returned to the showtime's waiting list now.
// It never blocks: a kick that finds the queue full waits for the next sweep.
func (s *Service) Kick(showID int) {
	select {
	case s.kicks <- showID:
	default:
	}
}

// Run offers returned seats until ctx ends: those it is kicked for at once, and those of
// every showtime with entries waiting at each sweep.
func (s *Service) Run(ctx context.Context) error {
	t := time.NewTicker(s.Sweep)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case id := <-s.kicks:
			s.offerLogged(ctx, id)
		case <-t.C:
			ids, err := s.showsWaiting(ctx)
			if err != nil {
				background.Failed(ctx, s.Log, background.WaitlistOffer, err)
				continue
			}
			for _, id := range ids {
				if open, err := s.salesOpen(ctx, id); err == nil && open {
					s.offerLogged(ctx, id)
				}
			}
		}
	}
}

func (s *Service) offerLogged(ctx context.Context, showID int) {
	if _, err := s.OfferReturned(ctx, showID); err != nil && ctx.Err() == nil {
		background.Failed(ctx, s.Log, background.WaitlistOffer, err, "showtime", showID)
	}
}

// showsWaiting are the showtimes with entries waiting.
func (s *Service) showsWaiting(ctx context.Context) ([]int, error) {
	var ids []int
	err := s.DB.WaitlistEntry.Query().Where(waitlistentry.StateEQ(waitlistentry.StateWAITING)).
		Unique(true).Select(waitlistentry.FieldShowtimeID).Scan(ctx, &ids)
	if err != nil {
		return nil, fmt.Errorf("showtimes with waiting lists: %w", database.Classify(err))
	}
	return ids, nil
}

// offerLockTTL bounds how long a dead instance's lock keeps others from offering a
// showtime's seats; a pass takes milliseconds per offer.
const offerLockTTL = 10 * time.Second

// OfferReturned offers the seats returned to the showtime's waiting list to its waiting
// entries in join order, each the first whose size fits what is left, and puts on sale
// those no entry fits. It returns the offers it made. One instance at a time offers a
// showtime's seats (its lock): instances that race for the same entries all lose but one,
// and give back what they took, so the others only ask the holder for one more pass,
// which it makes before it lets go. Without the lock (it expired under a slow pass) the
// offers stay exactly-once; they only cost more.
func (s *Service) OfferReturned(ctx context.Context, showID int) (int, error) {
	made := 0
	for range maxRounds {
		lock, ok, err := redislock.TryAcquire(ctx, s.RDB, s.Keys.WaitlistLock(showID), offerLockTTL)
		if err != nil {
			return made, rdb.Classify("waiting-list lock", err)
		}
		if !ok {
			return made, rdb.Classify("waiting-list lock", s.RDB.Set(ctx, s.Keys.WaitlistAgain(showID), "1", offerLockTTL).Err())
		}
		n, err := s.offerPass(ctx, showID)
		made += n
		_ = lock.Release(context.WithoutCancel(ctx))
		if err != nil {
			return made, err
		}
		// A request for one more pass that came while this one ran, up to the lock's release
		// (read after it: one set between the last read and the release is not lost).
		if again, err := s.RDB.GetDel(ctx, s.Keys.WaitlistAgain(showID)).Result(); err != nil || again == "" {
			return made, nil
		}
	}
	return made, nil
}

// offerPass offers what is returned now (OfferReturned, under the lock).
func (s *Service) offerPass(ctx context.Context, showID int) (int, error) {
	st, err := s.Catalog.FreshShowtime(ctx, showID)
	if err != nil {
		return 0, err
	}
	layout, err := s.Layouts.Of(ctx, st.HallID)
	if err != nil {
		return 0, fmt.Errorf("offer seats: load hall: %w", err)
	}
	made := 0
	skip := map[int]bool{} // entries refused this time (over the purchase limit)
	for range maxRounds {
		returned, _, err := s.Seats.Returned(ctx, showID)
		if err != nil || len(returned) == 0 {
			return made, err
		}
		left, raced, after := returned, false, 0
		for len(left) > 0 && !raced {
			// The next waiting entries that could take some of what is left: those asking for
			// more are passed over, so the walk reads on until every seat is offered or no
			// entry is left that fits.
			entries, err := s.DB.WaitlistEntry.Query().Where(waitlistentry.ShowtimeID(showID),
				waitlistentry.StateEQ(waitlistentry.StateWAITING), waitlistentry.SeatsLTE(len(left)), waitlistentry.IDGT(after)).
				Order(ent.Asc(waitlistentry.FieldID)).Limit(len(left) + len(skip)).All(ctx)
			if err != nil {
				return made, fmt.Errorf("waiting entries: %w", database.Classify(err))
			}
			if len(entries) == 0 {
				break
			}
			after = entries[len(entries)-1].ID
			for _, e := range entries {
				if skip[e.ID] || e.Seats > len(left) {
					continue
				}
				picked := layout.Together(left, e.Seats)
				if picked == nil || layout.CheckCompanions(picked) != nil {
					// A companion seat without its accessible seat goes to nobody's party alone.
					skip[e.ID] = true
					continue
				}
				ok, err := s.offer(ctx, e, picked)
				switch {
				case errors.Is(err, errRaced):
					raced = true
				case seatflow.ErrorCode(err) == seatflow.ENOTONSALE:
					// Sales closed: no offer can be made; the seats go back as they would have.
					_, err := s.Seats.Resell(ctx, showID, returned)
					return made, err
				case entryRefused(err):
					skip[e.ID] = true // this entrant cannot take them now (a limit): the next one may
					continue
				case err != nil:
					// A store failed: the seats stay returned for the next pass (the sweep), in
					// join order, rather than pass to the next entry or go on sale.
					return made, err
				}
				if ok {
					made++
					left = without(left, picked)
				}
				if raced {
					break
				}
			}
		}
		if raced {
			continue
		}
		if len(left) > 0 {
			// No waiting entry fits what is left: it goes on sale as it would have without a
			// list. A seat another instance offered meanwhile is no longer returned and stays.
			if _, err := s.Seats.Resell(ctx, showID, left); err != nil {
				return made, err
			}
		}
		return made, nil
	}
	return made, fmt.Errorf("offer returned seats of showtime %d: still racing after %d rounds", showID, maxRounds)
}

// entryRefused reports whether err refuses the offer to this entry alone (its purchase
// limit, its ticket types' prices): the next entry may take the seats.
func entryRefused(err error) bool {
	switch seatflow.ErrorCode(err) {
	case seatflow.ELIMIT, seatflow.EINVALID, seatflow.ESEATSUNAVAILABLE, seatflow.ECOMPANION:
		return err != nil
	}
	return false
}

// errRaced is an offer lost to another instance's: read again.
var errRaced = errors.New("lost an offer's race")

// offer holds seatIDs for entry e and makes its order. It reports false with errRaced when
// another instance took the seats or the entry first; a coded error when the entry cannot
// take them (nothing of the offer stays).
func (s *Service) offer(ctx context.Context, e *ent.WaitlistEntry, seatIDs []int) (bool, error) {
	token := uuid.NewString()
	ok, err := s.Seats.Offer(ctx, e.ShowtimeID, token, e.UserID, seatIDs)
	if err != nil {
		return false, err
	} else if !ok {
		return false, errRaced
	}
	types := parseTypes(e.TicketTypes)
	lines := make([]booking.SeatTicketInput, len(seatIDs))
	for i, id := range seatIDs {
		lines[i] = booking.SeatTicketInput{SeatID: id, TicketType: types[i%len(types)]}
	}
	now := s.Now.Now()
	_, err = s.Booking.HoldOffer(ctx, booking.OfferInput{ShowtimeID: e.ShowtimeID, UserID: e.UserID, Token: token,
		Seats: lines, IdempotencyKey: booking.OfferKey(e.ID), TTL: s.OfferTTL,
		In: func(ctx context.Context, tx *ent.Tx, orderID int) error {
			n, err := tx.WaitlistEntry.Update().Where(waitlistentry.ID(e.ID), waitlistentry.StateEQ(waitlistentry.StateWAITING)).
				SetState(waitlistentry.StateOFFERED).SetOrderID(orderID).SetOfferedAt(now).Save(ctx)
			if err == nil && n == 0 {
				return errRaced
			}
			return err
		}})
	if err != nil {
		// Give the seats back to the list (or to sale, when nobody waits any more).
		if _, relErr := s.Seats.Release(context.WithoutCancel(ctx), e.ShowtimeID, token, e.UserID, seatIDs); relErr != nil {
			background.Failed(ctx, s.Log, background.ReleaseSeats, relErr, "showtime", e.ShowtimeID)
		}
		if errors.Is(err, errRaced) || seatflow.ErrorCode(err) == seatflow.EINVALIDSTATE {
			return false, errRaced
		}
		return false, err
	}
	// The offer is committed: its bookkeeping runs even if ctx ends now.
	ctx = context.WithoutCancel(ctx)
	s.count(ctx, e.ShowtimeID, -1)
	s.announce(ctx, e.ShowtimeID)
	return true, nil
}

// without is ids less those of taken.
func without(ids, taken []int) []int {
	out := make([]int, 0, len(ids))
	for _, id := range ids {
		if !slices.Contains(taken, id) {
			out = append(out, id)
		}
	}
	return out
}
