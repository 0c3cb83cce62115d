package booking

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/internal/database"
)

// OfferInput is seats returned to a showtime's waiting list and held in Redis for one
// entry under Token (seats.Store.Offer), to become the entrant's pending order: the
// waiting list's offer (docs/DESIGN.md "Waiting list").
type OfferInput struct {
	ShowtimeID int
	UserID     string
	Token      string
	Seats      []SeatTicketInput
	// IdempotencyKey names the entry: orders are unique per user and key, so an entry is
	// offered once whatever races.
	IdempotencyKey string
	TTL            time.Duration
	// In runs inside the order's transaction with the new order's id (it marks the entry
	// offered); an error from it rolls the order back.
	In func(ctx context.Context, tx *ent.Tx, orderID int) error
}

// offerKeyPrefix starts the idempotency key of every offer's order (OfferKey).
const offerKeyPrefix = "waitlist-entry:"

// OfferKey is the idempotency key of entry id's offer order: orders are unique per user
// and key, so an entry has one offer.
func OfferKey(entryID int) string { return offerKeyPrefix + strconv.Itoa(entryID) }

// IsOffer reports whether an order with this idempotency key is a waiting-list offer. A
// customer's own keys cannot collide: holdSeats refuses keys with this prefix.
func IsOffer(key string) bool { return strings.HasPrefix(key, offerKeyPrefix) }

// HoldOffer creates the pending order of a waiting-list offer over seats already held for
// it in Redis, with the hold's rules of prices, sale and purchase limit, and queues its
// expiry. It changes no seat: on an error the caller releases the seats it holds under
// in.Token. A second offer for the same entry fails on the order's unique key.
func (s *Service) HoldOffer(ctx context.Context, in OfferInput) (*seatflow.Order, error) {
	st, err := s.onSale(ctx, in.ShowtimeID)
	if err != nil {
		return nil, err
	}
	layout, err := s.Layouts.Of(ctx, st.HallID)
	if err != nil {
		return nil, fmt.Errorf("offer seats: load hall: %w", err)
	}
	lines, amount, err := priceLines(st, layout, in.Seats)
	if err != nil {
		return nil, err
	}
	var created *ent.Order
	err = s.retryDeadlock(ctx, func(tx *ent.Tx) error {
		var err error
		created, err = s.createOrder(ctx, tx, st, newOrder{userID: in.UserID, token: in.Token, key: in.IdempotencyKey,
			lines: lines, amount: amount, ttl: in.TTL})
		if err != nil {
			return err
		}
		return in.In(ctx, tx, created.ID)
	})
	if err != nil {
		var le *limitExceeded
		if errors.As(err, &le) {
			return nil, le.err
		}
		if database.Conflict(err) || ent.IsConstraintError(err) {
			return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "this entry was offered seats already")
		}
		return nil, fmt.Errorf("offer seats: %w", database.Classify(err))
	}
	o := toOrder(created, lines)
	s.enqueue(ctx, o.ID, *o.ExpiresAt)
	return o, nil
}
