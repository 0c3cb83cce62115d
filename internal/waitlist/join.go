package waitlist

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/order"
	"seatflow/ent/waitlistentry"
	"seatflow/internal/database"
	"seatflow/internal/rdb"
)

// JoinInput asks for a place on a showtime's waiting list.
type JoinInput struct {
	ShowtimeID int
	Seats      int
	// TicketTypes are the seats' types, one per seat; ADULT each when nil.
	TicketTypes []seatflow.TicketType
}

// validate is the join's check of its own input.
func (in *JoinInput) validate(userID string) error {
	switch {
	case userID == "":
		return seatflow.Errorf(seatflow.EUNAUTHENTICATED, "sign in to join a waiting list")
	case in.Seats < 1 || in.Seats > seatflow.MaxSeatsPerOrder:
		return seatflow.Errorf(seatflow.EINVALID, "seats must be 1 to %d", seatflow.MaxSeatsPerOrder)
	case in.TicketTypes != nil && len(in.TicketTypes) != in.Seats:
		return seatflow.Errorf(seatflow.EINVALID, "give one ticket type per seat: %d for %d seats", len(in.TicketTypes), in.Seats)
	}
	for _, t := range in.TicketTypes {
		if !t.Valid() {
			return seatflow.Errorf(seatflow.EINVALID, "unknown ticket type %q", t)
		}
	}
	if in.TicketTypes == nil {
		in.TicketTypes = make([]seatflow.TicketType, in.Seats)
		for i := range in.TicketTypes {
			in.TicketTypes[i] = seatflow.TicketAdult
		}
	}
	return nil
}

// Join puts the user on the showtime's waiting list: only while it is on sale and sold
// out (no seat AVAILABLE, or its on-sale queue SOLD_OUT), for 1 to its purchase limit of
// seats, once per user while the entry is active (ALREADY_ON_WAITING_LIST). A refusal
// changes nothing.
func (s *Service) Join(ctx context.Context, userID string, in JoinInput) (*seatflow.WaitlistEntry, error) {
	if err := in.validate(userID); err != nil {
		return nil, err
	}
	if err := s.Booking.LimitOrderChange(ctx, userID); err != nil {
		return nil, err
	}
	st, err := s.Catalog.FreshShowtime(ctx, in.ShowtimeID)
	if err != nil {
		return nil, err
	}
	if !s.isOpen(st) {
		return nil, seatflow.Errorf(seatflow.ENOTONSALE, "this showtime is not on sale: its waiting list is closed")
	}
	if st.PurchaseLimit > 0 && in.Seats > st.PurchaseLimit {
		return nil, seatflow.Errorf(seatflow.ELIMIT, "at most %d seats per customer for this showtime", st.PurchaseLimit)
	}
	for _, t := range in.TicketTypes {
		if !priced(st, t) {
			return nil, seatflow.Errorf(seatflow.EINVALID, "this showtime sells no %s tickets", t)
		}
	}
	if err := s.soldOut(ctx, st.ID); err != nil {
		return nil, err
	}
	var created *ent.WaitlistEntry
	key := activeKey(userID, st.ID)
	err = s.withTx(ctx, func(tx *ent.Tx) error {
		// An entry whose offer ended keeps its key until now: it is active no more.
		if err := s.endOffered(ctx, tx, key); err != nil {
			return err
		}
		var err error
		created, err = tx.WaitlistEntry.Create().SetUserID(userID).SetShowtimeID(st.ID).SetSeats(in.Seats).
			SetTicketTypes(joinTypes(in.TicketTypes)).SetActiveKey(key).SetCreatedAt(s.Now.Now()).Save(ctx)
		return err
	})
	if ent.IsConstraintError(err) {
		return nil, seatflow.Errorf(seatflow.EWAITLISTED, "you are on this showtime's waiting list already (myWaitingListEntries)")
	} else if err != nil {
		return nil, fmt.Errorf("join waiting list: %w", database.Classify(err))
	}
	// Committed: its bookkeeping runs even if the caller goes away now.
	bg := context.WithoutCancel(ctx)
	s.count(bg, st.ID, 1)
	s.announce(bg, st.ID)
	return s.view(ctx, created)
}

// priced reports whether st sells tickets of type t for some kind of seat.
func priced(st *seatflow.Showtime, t seatflow.TicketType) bool {
	for _, k := range seatflow.SeatKinds {
		if _, ok := st.PriceOf(k, t); ok {
			return true
		}
	}
	return false
}

// endOffered clears the active key of the entry holding key when its offer's order is no
// longer pending.
func (s *Service) endOffered(ctx context.Context, tx *ent.Tx, key string) error {
	e, err := tx.WaitlistEntry.Query().Where(waitlistentry.ActiveKey(key)).Only(ctx)
	if ent.IsNotFound(err) || (err == nil && e.OrderID == nil) {
		return nil
	} else if err != nil {
		return err
	}
	pending, err := tx.Order.Query().Where(order.ID(*e.OrderID), order.StatusEQ(seatflow.OrderPending)).Exist(ctx)
	if err != nil || pending {
		return err
	}
	return tx.WaitlistEntry.UpdateOneID(e.ID).ClearActiveKey().Exec(ctx)
}

// withTx runs fn in a transaction, committed when fn returns nil.
func (s *Service) withTx(ctx context.Context, fn func(tx *ent.Tx) error) error {
	tx, err := s.DB.Tx(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// soldOut refuses (NOT_SOLD_OUT) a showtime with a seat AVAILABLE, unless its on-sale
// queue says SOLD_OUT.
func (s *Service) soldOut(ctx context.Context, showID int) error {
	phase, err := s.RDB.HGet(ctx, s.Keys.Queue(showID), "phase").Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return rdb.Classify("read the on-sale queue", err)
	}
	if phase == string(seatflow.QueueSoldOut) {
		return nil
	}
	out, err := s.Seats.SoldOut(ctx, showID)
	if err != nil {
		return err
	}
	if !out {
		return seatflow.Errorf(seatflow.ENOTSOLDOUT, "this showtime has seats available: hold them instead")
	}
	return nil
}

// Leave takes a waiting entry off the list (LEFT). An entry with an offer pending is
// INVALID_STATE (DeclineOffer); one that ended is returned as it is.
func (s *Service) Leave(ctx context.Context, userID string, id int) (*seatflow.WaitlistEntry, error) {
	if err := s.Booking.LimitOrderChange(ctx, userID); err != nil {
		return nil, err
	}
	e, err := s.own(ctx, userID, id)
	if err != nil {
		return nil, err
	}
	if e.State == waitlistentry.StateWAITING {
		n, err := s.DB.WaitlistEntry.Update().Where(waitlistentry.ID(id), waitlistentry.StateEQ(waitlistentry.StateWAITING)).
			SetState(waitlistentry.StateLEFT).SetLeftAt(s.Now.Now()).ClearActiveKey().Save(ctx)
		if err != nil {
			return nil, fmt.Errorf("leave waiting list: %w", database.Classify(err))
		}
		if n == 1 { // committed: its bookkeeping runs even if the caller goes away now
			bg := context.WithoutCancel(ctx)
			s.count(bg, e.ShowtimeID, -1)
			s.announce(bg, e.ShowtimeID)
			s.Kick(e.ShowtimeID) // seats returned for nobody else go on sale
		}
		if e, err = s.own(ctx, userID, id); err != nil {
			return nil, err
		}
	}
	v, err := s.view(ctx, e)
	if err != nil {
		return nil, err
	}
	if v.Status == seatflow.WaitlistOffered {
		return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "seats are offered to this entry: decline the offer (declineWaitingListOffer) or pay its order")
	}
	return v, nil
}

// DeclineOffer cancels the order of an entry's pending offer: the entry is DECLINED and
// its seats go to the next entry. Without a pending offer it is INVALID_STATE.
func (s *Service) DeclineOffer(ctx context.Context, userID string, id int) (*seatflow.WaitlistEntry, error) {
	e, err := s.own(ctx, userID, id)
	if err != nil {
		return nil, err
	}
	v, err := s.view(ctx, e)
	if err != nil {
		return nil, err
	}
	if v.Status != seatflow.WaitlistOffered {
		return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "this entry is %s: it has no offer to decline", v.Status)
	}
	if _, err := s.Booking.CancelOrder(ctx, userID, v.Offer.OrderID); err != nil {
		return nil, err
	}
	s.announce(ctx, e.ShowtimeID)
	return s.view(ctx, e)
}

// Entry returns one of the user's entries.
func (s *Service) Entry(ctx context.Context, userID string, id int) (*seatflow.WaitlistEntry, error) {
	e, err := s.own(ctx, userID, id)
	if err != nil {
		return nil, err
	}
	return s.view(ctx, e)
}

// Mine returns the user's entries, newest first: the active ones and those of the last
// 30 days.
func (s *Service) Mine(ctx context.Context, userID string) ([]*seatflow.WaitlistEntry, error) {
	since := s.Now.Now().AddDate(0, 0, -30)
	rows, err := s.DB.WaitlistEntry.Query().Where(waitlistentry.UserID(userID),
		waitlistentry.Or(waitlistentry.ActiveKeyNotNil(), waitlistentry.CreatedAtGTE(since))).
		Order(ent.Desc(waitlistentry.FieldID)).Limit(100).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("my waiting-list entries: %w", database.Classify(err))
	}
	return s.views(ctx, rows)
}

func (s *Service) view(ctx context.Context, e *ent.WaitlistEntry) (*seatflow.WaitlistEntry, error) {
	vs, err := s.views(ctx, []*ent.WaitlistEntry{e})
	if err != nil {
		return nil, err
	}
	return vs[0], nil
}
