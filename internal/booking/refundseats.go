package booking

import (
	"context"
	"errors"
	"fmt"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/order"
	"seatflow/ent/orderseat"
	"seatflow/internal/database"
	"seatflow/internal/seats"
)

// seatsRefundReason is the reason of staff's refundSeats, kept with the refund.
const seatsRefundReason = "seats refunded by staff"

// maxRefundRounds is how often RefundSeats reads the order again after another change of
// it (a concurrent refund) won the race; then it answers INVALID_STATE, try again.
const maxRefundRounds = 3

// RefundSeats is staff's refund of some seats of a PAID order (admin refundSeats), by the
// admin `by`. In one transaction the order's amount drops by those seats' lines, the lines
// are marked refunded with a refund of their amount due from the payment that paid the
// order, the seats' tickets are revoked and their occupancy deleted; after commit the
// seats go back on sale (release.lua: a DELTA, the customer's count lowered) and the refund
// is sent (the reconciler sends it again if the provider does not take it now). Seats
// already refunded are skipped, so a repeat changes nothing; refunding every seat left is
// RefundOrder's whole refund. Bad input changes nothing: seats not of the order are
// BAD_USER_INPUT; an order not PAID, one whose payment is refunded whole, or a seat checked
// in at the door is INVALID_STATE. Concurrent refunds of one order are decided on the
// order's row (a conditional update of its amount): a seat is never refunded twice.
func (s *Service) RefundSeats(ctx context.Context, by string, orderID int, seatIDs []int) (*seatflow.Order, error) {
	switch {
	case len(seatIDs) == 0:
		return nil, seatflow.Errorf(seatflow.EINVALID, "choose at least one seat to refund")
	case len(seatIDs) > seatflow.MaxSeatsPerOrder:
		return nil, seatflow.Errorf(seatflow.EINVALID, "at most %d seats per refund", seatflow.MaxSeatsPerOrder)
	}
	if err := seatflow.CheckSeatsOnce(seatIDs); err != nil {
		return nil, err
	}
	for round := 1; ; round++ {
		o, ps, lines, err := s.readForRefund(ctx, orderID)
		if err != nil {
			return nil, err
		}
		out, err := s.refundSeats(ctx, by, o, ps, lines, seatIDs)
		if !errors.Is(err, errChanged) {
			return out, err
		}
		if round == maxRefundRounds {
			return nil, errChangedMeanwhile()
		}
	}
}

// refundSeats is one round of RefundSeats over the order as read; errChanged when another
// change of the order came first.
func (s *Service) refundSeats(ctx context.Context, by string, o *ent.Order, ps paymentSet, lines []seatflow.OrderLine,
	asked []int) (*seatflow.Order, error) {
	lineOf := make(map[int]seatflow.OrderLine, len(lines))
	for _, l := range lines {
		lineOf[l.SeatID] = l
	}
	var unknown []int
	for _, id := range asked {
		if _, ok := lineOf[id]; !ok {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		return nil, seats.Error(seatflow.EINVALID, unknown, "%d of these seats are not seats of the order", len(unknown))
	}
	p := heldPayment(o, ps.all)
	switch {
	case o.Status == seatflow.OrderCancelled && p != nil && ps.whole[p.ID] != nil:
		return toOrder(o, lines), nil // refunded whole already, every seat with it
	case o.Status != seatflow.OrderPaid:
		return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "the order is %s: only a PAID order's seats are refunded", o.Status)
	case p == nil:
		return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "the order has no received payment to refund")
	case ps.whole[p.ID] != nil:
		return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "the order's payment is being refunded whole")
	}
	var refunding []int // the seats asked for that are not refunded yet
	amount := 0
	for _, id := range asked {
		if l := lineOf[id]; !l.Refunded() {
			refunding = append(refunding, id)
			amount += l.AmountCents
		}
	}
	switch left := seatflow.UnrefundedSeats(lines); {
	case len(refunding) == 0:
		return toOrder(o, lines), nil
	case len(refunding) == len(left):
		return s.refundWhole(ctx, o, ps, lines, refunding)
	}
	// The seats go back on sale in the same step: not while they cannot be reached.
	if err := s.seatsReachable(ctx, o.ShowtimeID); err != nil {
		return nil, err
	}
	now := s.Now.Now()
	var r *ent.Refund
	err := s.withTx(ctx, func(tx *ent.Tx) error {
		n, err := tx.Order.Update().Where(order.ID(o.ID), order.StatusEQ(seatflow.OrderPaid), order.HoldToken(o.HoldToken),
			order.AmountCents(o.AmountCents)).AddAmountCents(-amount).Save(ctx)
		if err != nil {
			return fmt.Errorf("lower the order's amount: %w", err)
		} else if n == 0 {
			return errChanged
		}
		status := seatflow.RefundRequired
		if amount == 0 { // seats sold for nothing: no money to return
			status = seatflow.RefundSucceeded
		}
		r, err = tx.Refund.Create().SetOrderID(o.ID).SetPaymentID(p.ID).SetAmountCents(amount).SetCurrency(p.Currency).
			SetStatus(status).SetReason(seatsRefundReason).SetCreatedBy(by).SetCreatedAt(now).SetUpdatedAt(now).Save(ctx)
		if err != nil {
			return fmt.Errorf("record refund: %w", err)
		}
		if err := markRefunded(ctx, tx, o.ID, refunding, now, &r.ID); err != nil {
			return err
		}
		if err := s.revokeSeats(ctx, tx, o.ID, refunding); err != nil {
			return err
		}
		return s.vacate(ctx, tx, o, refunding)
	})
	if errors.Is(err, errChanged) {
		return nil, err
	} else if err != nil {
		return nil, fmt.Errorf("refund seats: %w", database.Classify(err))
	}
	rctx, cancel := detach(ctx)
	s.release(rctx, o.ShowtimeID, o.HoldToken, o.UserID, refunding)
	cancel()
	o.AmountCents -= amount // as the transaction wrote it
	refundedAt(lines, refunding, now)
	if _, err := s.sendRefund(context.WithoutCancel(ctx), dueRefund{o: o, p: p, r: r}); err != nil {
		s.Log.WarnContext(ctx, "payments: refund of seats not sent yet; the reconciler will send it", "refund", r.ID, "err", err)
	}
	return toOrder(o, lines), nil
}

// markRefunded marks refunded at `at` the lines of an order for seatIDs (nil: every line
// not refunded yet), with the refund of some seats they belong to (nil for a whole
// refund). A line refunded meanwhile is left as it is and reported as errChanged when
// seatIDs named it.
func markRefunded(ctx context.Context, tx *ent.Tx, orderID int, seatIDs []int, at time.Time, refundID *int) error {
	u := tx.OrderSeat.Update().Where(orderseat.OrderID(orderID), orderseat.RefundedAtIsNil()).SetRefundedAt(at).SetNillableRefundID(refundID)
	if seatIDs != nil {
		u.Where(orderseat.SeatIDIn(seatIDs...))
	}
	n, err := u.Save(ctx)
	if err != nil {
		return fmt.Errorf("mark lines refunded: %w", err)
	} else if seatIDs != nil && n != len(seatIDs) {
		return errChanged
	}
	return nil
}

// refundedAt marks in lines, as a transaction wrote them, the seats seatIDs (nil: every
// line not refunded yet) refunded at `at`.
func refundedAt(lines []seatflow.OrderLine, seatIDs []int, at time.Time) {
	for i := range lines {
		if lines[i].Refunded() {
			continue
		}
		for _, id := range seatIDs {
			if id == lines[i].SeatID {
				lines[i].RefundedAt = &at
			}
		}
		if seatIDs == nil {
			lines[i].RefundedAt = &at
		}
	}
}

// revokeSeats revokes the tickets of seatIDs of an order inside tx; a ticket of theirs
// already checked in refuses the refund (INVALID_STATE naming the seats). Nothing to do
// for no seats or without tickets.
func (s *Service) revokeSeats(ctx context.Context, tx *ent.Tx, orderID int, seatIDs []int) error {
	if len(seatIDs) == 0 || s.Tickets == nil {
		return nil
	}
	checkedIn, err := s.Tickets.RevokeSeatsIn(ctx, tx, orderID, seatIDs, !s.SingleWriter)
	if err != nil {
		return err
	}
	if len(checkedIn) > 0 {
		return seats.Error(seatflow.EINVALIDSTATE, checkedIn, "%d of these seats were checked in at the door: a seat in use is not refunded", len(checkedIn))
	}
	return nil
}
