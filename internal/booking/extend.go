package booking

import (
	"context"
	"fmt"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/order"
	"seatflow/internal/database"
)

// ExtendHold pushes a pending order's expiry out by HoldTTL, but never past twice HoldTTL
// after the order was created, so a hold cannot be kept forever. It answers the pending
// order, or INVALID_STATE when the order is not pending, even if it stopped being so
// while the extension was made.
func (s *Service) ExtendHold(ctx context.Context, userID string, orderID int) (*seatflow.Order, error) {
	if err := s.rateLimit(ctx, "order", userID, s.OrderRate); err != nil {
		return nil, err
	}
	o, err := s.own(ctx, userID, orderID)
	if err != nil {
		return nil, err
	}
	now := s.Now.Now()
	if err := pendingNotExpired(o, now); err != nil {
		return nil, err
	}
	if IsOffer(o.IdempotencyKey) { // the next entry waits for these seats
		return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "a waiting-list offer's hold cannot be extended: pay it before it expires")
	}
	exp := now.Add(s.HoldTTL)
	if limit := o.CreatedAt.Add(2 * s.HoldTTL); exp.After(limit) {
		exp = limit
	}
	n, err := s.DB.Order.Update().Where(order.ID(o.ID), order.StatusEQ(seatflow.OrderPending), order.ExpiresAtGT(now)).
		SetExpiresAt(exp).Save(ctx)
	if err != nil {
		return nil, fmt.Errorf("extend hold: %w", database.Classify(err))
	}
	if n == 0 { // paid, cancelled or expired meanwhile
		if o, err = s.own(ctx, userID, orderID); err != nil {
			return nil, err
		}
		if err := pendingNotExpired(o, now); err != nil {
			return nil, err
		}
		return nil, errChangedMeanwhile()
	}
	out, err := s.reload(ctx, o.ID)
	if err != nil {
		return nil, err
	}
	// Cancelled or paid (on another instance) between the extension and this read: the
	// extension counts for nothing, and the answer says so rather than show that order.
	if out.Status != seatflow.OrderPending {
		return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "the order is %s", out.Status)
	}
	s.enqueue(ctx, o.ID, exp)
	return out, nil
}

func pendingNotExpired(o *ent.Order, now time.Time) error {
	if o.Status != seatflow.OrderPending {
		return seatflow.Errorf(seatflow.EINVALIDSTATE, "the order is %s", o.Status)
	}
	if !o.ExpiresAt.After(now) {
		return seatflow.Errorf(seatflow.EORDEREXPIRED, "the hold has expired")
	}
	return nil
}

func errChangedMeanwhile() error {
	return seatflow.Errorf(seatflow.EINVALIDSTATE, "the order changed meanwhile, try again")
}
