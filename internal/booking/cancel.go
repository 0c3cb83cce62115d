package booking

import (
	"context"
	"errors"
	"fmt"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/order"
	"seatflow/ent/predicate"
	"seatflow/internal/background"
	"seatflow/internal/database"
)

// CancelOrder cancels a pending order and frees its seats. A paid order cannot be
// cancelled by the customer (INVALID_STATE): refunds are handled by staff (RefundOrder),
// and its seats stay sold until then. Cancelling an order that is no longer pending is INVALID_STATE.
func (s *Service) CancelOrder(ctx context.Context, userID string, orderID int) (*seatflow.Order, error) {
	if err := s.rateLimit(ctx, "order", userID, s.OrderRate); err != nil {
		return nil, err
	}
	o, err := s.own(ctx, userID, orderID)
	if err != nil {
		return nil, err
	}
	if o.Status != seatflow.OrderPending {
		return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "the order is %s and cannot be cancelled", o.Status)
	}
	if err := s.seatsReachable(ctx, o.ShowtimeID); err != nil {
		return nil, err
	}
	done, err := s.finish(ctx, o, seatflow.OrderCancelled)
	if err != nil {
		return nil, err
	}
	if !done {
		o, err := s.own(ctx, userID, orderID)
		if err != nil {
			return nil, err
		}
		return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "the order is %s and cannot be cancelled", o.Status)
	}
	s.spendPass(ctx, o.ShowtimeID, userID, o.CreatedAt)
	return s.reload(ctx, orderID)
}

// Expire ends a pending order whose hold has run out (status EXPIRED) and frees its seats.
// It reports false when the order is not pending or not yet due (it was paid, cancelled
// or extended meanwhile). The expiry worker and the reconciler call it.
func (s *Service) Expire(ctx context.Context, orderID int) (bool, error) {
	o, err := s.DB.Order.Get(ctx, orderID)
	if ent.IsNotFound(err) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("expire order: %w", database.Classify(err))
	}
	now := s.Now.Now()
	if o.Status != seatflow.OrderPending || o.ExpiresAt.After(now) {
		return false, nil
	}
	return s.finish(ctx, o, seatflow.OrderExpired, order.ExpiresAtLTE(now)) // not if extended meanwhile
}

// finish moves a pending order to CANCELLED or EXPIRED and deletes its occupancy in one
// transaction, then releases its seats; where adds to the conditions of the update. It
// reports false when the conditional update matched nothing. A failed release is left to
// the reconciler's orphan-hold repair: the order's end is already committed.
func (s *Service) finish(ctx context.Context, o *ent.Order, to seatflow.OrderStatus, where ...predicate.Order) (bool, error) {
	// Run again when MySQL ends it as a deadlock (its occupancy's delete against a purchase
	// count's recount or a hold's insert): nothing of a rolled-back end stays.
	err := s.retryDeadlock(ctx, func(tx *ent.Tx) error {
		ended, err := s.endIn(ctx, tx, o, to, where...)
		if err == nil && !ended {
			return errChanged
		}
		return err
	})
	if errors.Is(err, errChanged) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("end order: %w", database.Classify(err))
	}
	s.releaseEnded(ctx, o)
	return true, nil
}

// endIn moves a pending order to CANCELLED or EXPIRED inside tx (where adds to the
// update's conditions) and deletes its occupancy; false when the order was not in that
// state any more. An order that expires before its hold was due (its showtime's sales
// closed) expires now: its expiresAt says when its hold ended.
func (s *Service) endIn(ctx context.Context, tx *ent.Tx, o *ent.Order, to seatflow.OrderStatus, where ...predicate.Order) (bool, error) {
	conds := append([]predicate.Order{order.ID(o.ID), order.StatusEQ(seatflow.OrderPending), order.HoldToken(o.HoldToken)}, where...)
	u := tx.Order.Update().Where(conds...).SetStatus(to)
	if now := s.Now.Now(); to == seatflow.OrderExpired && o.ExpiresAt.After(now) {
		u.SetExpiresAt(now)
	}
	n, err := u.Save(ctx)
	if err != nil {
		return false, fmt.Errorf("mark %s: %w", to, err)
	} else if n == 0 {
		return false, nil
	}
	if err := s.vacate(ctx, tx, o, nil); err != nil {
		return false, err
	}
	return true, nil
}

// releaseEnded frees the seats of an order whose end (or staff refund) is committed and
// takes it out of the expiry queue; what fails here is the reconciler's to repair.
func (s *Service) releaseEnded(ctx context.Context, o *ent.Order) {
	ctx, cancel := detach(ctx)
	defer cancel()
	ids, err := s.seatIDs(ctx, o.ID)
	if err != nil {
		background.Failed(ctx, s.Log, background.ReleaseSeats, err, "order", o.ID)
		s.dequeue(ctx, o.ID)
		return
	}
	s.releaseSeatsOf(ctx, o, ids)
}

// releaseSeatsOf is releaseEnded for a caller that has read the order's seats.
func (s *Service) releaseSeatsOf(ctx context.Context, o *ent.Order, seatIDs []int) {
	ctx, cancel := detach(ctx)
	defer cancel()
	s.release(ctx, o.ShowtimeID, o.HoldToken, o.UserID, seatIDs)
	s.dequeue(ctx, o.ID)
}

// release frees the seats of token for a caller that goes on whatever happens (a failed
// hold, an ended order), reporting a failure: the reconciler's orphan-hold repair frees
// what is left.
func (s *Service) release(ctx context.Context, showID int, token, userID string, seatIDs []int) {
	if _, err := s.Seats.Release(ctx, showID, token, userID, seatIDs); err != nil {
		background.Failed(ctx, s.Log, background.ReleaseSeats, err, "showtime", showID, "user", userID)
	}
}
