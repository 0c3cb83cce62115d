package booking

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/order"
	"seatflow/ent/payment"
	"seatflow/ent/predicate"
	"seatflow/ent/refund"
	"seatflow/internal/database"
	"seatflow/internal/payments"
)

// RefundOrder is staff's refund of an order's payment (admin refundOrder). A PAID order is
// cancelled in the same transaction that makes its refund due, its lines are marked
// refunded, and its seats go back on sale (SERVICE_UNAVAILABLE, changing nothing, while the
// seat Redis cannot be reached); an order whose payment is already being refunded is
// returned as it is. An order with no payment that took money is INVALID_STATE. The refund
// is sent at once (all of the payment that some seats' refunds have not returned yet); if
// the provider does not take it now, the order shows refundStatus REQUIRED and the
// reconciler sends it again.
func (s *Service) RefundOrder(ctx context.Context, orderID int) (*seatflow.Order, error) {
	o, ps, lines, err := s.readForRefund(ctx, orderID)
	if err != nil {
		return nil, err
	}
	return s.refundWhole(ctx, o, ps, lines, nil)
}

// refundWhole is RefundOrder for an order read with its payments (with their whole
// refunds) and lines. asked are the seats a refundSeats named when it refunds every seat
// left (nil for refundOrder): a ticket of theirs already checked in refuses the refund
// (INVALID_STATE), as it does for some seats.
func (s *Service) refundWhole(ctx context.Context, o *ent.Order, ps paymentSet, lines []seatflow.OrderLine, asked []int) (*seatflow.Order, error) {
	p := heldPayment(o, ps.all)
	if p == nil {
		return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "the order has no received payment to refund")
	}
	whole := ps.whole[p.ID]
	if whole == nil {
		paid := o.Status == seatflow.OrderPaid
		if paid {
			// Its seats go back on sale in the same step: not while they cannot be reached.
			if err := s.seatsReachable(ctx, o.ShowtimeID); err != nil {
				return nil, err
			}
		}
		now := s.Now.Now()
		err := s.withTx(ctx, func(tx *ent.Tx) error {
			if paid {
				n, err := tx.Order.Update().Where(order.ID(o.ID), order.StatusEQ(seatflow.OrderPaid), order.HoldToken(o.HoldToken)).
					SetStatus(seatflow.OrderCancelled).Save(ctx)
				if err != nil {
					return fmt.Errorf("cancel paid order: %w", err)
				} else if n == 0 {
					return errChanged
				}
				if err := s.revokeSeats(ctx, tx, o.ID, asked); err != nil {
					return err
				}
				if err := s.vacate(ctx, tx, o, nil); err != nil {
					return err
				}
				if err := markRefunded(ctx, tx, o.ID, nil, now, nil); err != nil {
					return err
				}
				if s.Tickets != nil {
					if err := s.Tickets.RevokeOrderIn(ctx, tx, o.ID); err != nil {
						return err
					}
				}
			}
			var err error
			whole, err = s.requireRefund(ctx, tx, p, staffRefundReason)
			return err
		})
		if errors.Is(err, errChanged) {
			return nil, errChangedMeanwhile()
		} else if err != nil {
			return nil, fmt.Errorf("refund order: %w", database.Classify(err))
		}
		if paid {
			s.releaseSeatsOf(ctx, o, seatflow.UnrefundedSeats(lines))
			o.Status = seatflow.OrderCancelled // as the transaction wrote it
			refundedAt(lines, nil, now)
		}
	}
	if _, err := s.sendRefund(context.WithoutCancel(ctx), dueRefund{o: o, p: p, r: whole, earlier: p.ID != ps.all[0].ID}); err != nil {
		s.Log.WarnContext(ctx, "payments: refund not sent yet; the reconciler will send it", "payment", p.ID, "err", err)
	}
	// The answer is the order as read, with what this refund committed: nothing else
	// changes a cancelled order or the seats of an order, and under a slow database
	// reading it again would cost two more round trips.
	return toOrder(o, lines), nil
}

// readForRefund reads an order, its payments (oldest first, with their whole refunds) and
// its lines at once: independent reads that, one after another, were as many round trips
// of a slow database.
func (s *Service) readForRefund(ctx context.Context, orderID int) (*ent.Order, paymentSet, []seatflow.OrderLine, error) {
	var (
		o     *ent.Order
		ps    paymentSet
		lines []seatflow.OrderLine
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		if o, err = s.DB.Order.Get(gctx, orderID); ent.IsNotFound(err) {
			return errNotFound
		} else if err != nil {
			return fmt.Errorf("refund order: %w", database.Classify(err))
		}
		return nil
	})
	g.Go(func() (err error) { ps, err = s.orderPayments(gctx, orderID); return err })
	g.Go(func() (err error) { lines, err = s.orderLines(gctx, orderID, 0); return err })
	if err := g.Wait(); err != nil {
		return nil, paymentSet{}, nil, err
	}
	for i := range lines {
		lines[i].ShowtimeID = o.ShowtimeID // read at the same time as the order
	}
	return o, ps, lines, nil
}

// heldPayment is the payment, of an order's payments ps (oldest first), that staff's
// refund of the order is about: the one the order was settled with (applied), else its
// latest that took money; nil when none took money. The order's other payments that took
// money are refunded already (each when it arrived).
func heldPayment(o *ent.Order, ps []*ent.Payment) *ent.Payment {
	if p := applied(o, ps); p != nil && p.Status.Settled() {
		return p
	}
	for i := len(ps) - 1; i >= 0; i-- {
		if ps[i].Status.Settled() {
			return ps[i]
		}
	}
	return nil
}

// staffRefundReason is the refund reason of staff's refundOrder.
const staffRefundReason = "refunded by staff"

// RefundCancelledShowtime makes the refund of a paid order of a cancelled showtime due and
// sends it. It reports false when there is nothing to do: the order is not paid, its
// payment is already being refunded, or its showtime is not cancelled. The order stays
// PAID (the showtime's status says why it will not be played); the reconciler calls it.
func (s *Service) RefundCancelledShowtime(ctx context.Context, orderID int) (bool, error) {
	o, err := s.DB.Order.Get(ctx, orderID)
	if err != nil {
		return false, fmt.Errorf("refund order: %w", database.Classify(err))
	}
	st, err := s.Catalog.FreshShowtime(ctx, o.ShowtimeID)
	if err != nil {
		return false, fmt.Errorf("refund order: %w", err)
	}
	if o.Status != seatflow.OrderPaid || st.Status != seatflow.ShowtimeCancelled {
		return false, nil
	}
	ps, err := s.orderPayments(ctx, o.ID)
	if err != nil {
		return false, err
	}
	p := heldPayment(o, ps.all)
	if p == nil || ps.whole[p.ID] != nil {
		return false, nil
	}
	var whole *ent.Refund
	err = s.withTx(ctx, func(tx *ent.Tx) error {
		if err := markRefunded(ctx, tx, o.ID, nil, s.Now.Now(), nil); err != nil {
			return err
		}
		whole, err = s.requireRefund(ctx, tx, p, "the showtime was cancelled")
		return err
	})
	if errors.Is(err, errChanged) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("refund order: %w", database.Classify(err))
	}
	return s.SendRefund(ctx, whole.ID)
}

// requireRefund makes a payment's whole refund due (its refunds row, REQUIRED, for what the
// refunds of some seats of it left), unless one was decided meanwhile (errChanged). It
// reads the payment's refunds under the payment's row lock (MySQL; the embedded SQLite
// runs one transaction at a time): a concurrent decision waits for this one's end and
// then finds its row, so a payment has one whole refund.
func (s *Service) requireRefund(ctx context.Context, tx *ent.Tx, p *ent.Payment, reason string) (*ent.Refund, error) {
	if !s.SingleWriter {
		if _, err := tx.Payment.Query().Where(payment.ID(p.ID)).ForUpdate().Only(ctx); err != nil {
			return nil, fmt.Errorf("require refund: %w", err)
		}
	}
	q := tx.Refund.Query().Where(refund.PaymentID(p.ID))
	if !s.SingleWriter {
		q = q.ForUpdate() // the latest rows, not the transaction's snapshot
	}
	rs, err := q.All(ctx)
	if err != nil {
		return nil, fmt.Errorf("require refund: %w", err)
	}
	rest := p.AmountCents
	for _, r := range rs {
		if r.Whole {
			return nil, errChanged
		}
		rest -= r.AmountCents
	}
	if len(reason) > maxRefundReason {
		reason = reason[:maxRefundReason]
	}
	now := s.Now.Now()
	r, err := tx.Refund.Create().SetOrderID(p.OrderID).SetPaymentID(p.ID).SetAmountCents(max(rest, 0)).SetCurrency(p.Currency).
		SetStatus(seatflow.RefundRequired).SetReason(reason).SetWhole(true).SetCreatedAt(now).SetUpdatedAt(now).Save(ctx)
	if err != nil {
		return nil, fmt.Errorf("require refund: %w", err)
	}
	return r, nil
}

// trySendRefund sends a payment's whole refund just made due; what fails is logged and
// left to the reconciler, which sends due refunds again.
func (s *Service) trySendRefund(ctx context.Context, paymentID int) {
	id, err := s.DB.Refund.Query().Where(refund.PaymentID(paymentID), refund.Whole(true)).OnlyID(ctx)
	if err == nil {
		_, err = s.SendRefund(context.WithoutCancel(ctx), id)
	}
	if err != nil {
		s.Log.WarnContext(ctx, "payments: refund not sent yet; the reconciler will send it", "payment", paymentID, "err", err)
	}
}

// refundUpdated follows the provider's word on a refund: the refunds row of payment p it
// is about (refundOf), or, when p has none decided (a refund from the provider's
// dashboard), a whole refund of p recorded as refunded at the provider. Refunds of
// payments SeatFlow does not know are ignored.
func (s *Service) refundUpdated(ctx context.Context, ev seatflow.PaymentEvent) (payments.Outcome, error) {
	p, err := s.DB.Payment.Query().Where(payment.Provider(ev.Provider), payment.Reference(ev.Reference)).
		Order(ent.Desc(payment.FieldID)).First(ctx)
	if ent.IsNotFound(err) {
		return payments.Ignored, nil
	} else if err != nil {
		return "", fmt.Errorf("load payment: %w", database.Classify(err))
	}
	ev.OrderID = p.OrderID
	err = s.withTx(ctx, func(tx *ent.Tx) error {
		if err := s.claim(ev)(ctx, tx); err != nil {
			return err
		}
		r, err := refundOf(ctx, tx, p, ev)
		if err != nil {
			return err
		}
		var cur *seatflow.RefundStatus
		ref := ""
		if r != nil {
			cur, ref = &r.Status, r.Reference
		}
		apply, failed := refundStep(cur, ref, ev)
		switch {
		case !apply:
			return nil
		case r == nil:
			return s.refundedAtProvider(ctx, tx, p, ev, failed)
		}
		return s.writeRefund(ctx, tx.Client(), dueRefund{p: p, r: r}, false, ev.RefundStatus, ev.RefundReference, failed)
	})
	if errors.Is(err, errReplay) {
		return payments.Replayed, nil
	} else if err != nil {
		return "", fmt.Errorf("record refund update: %w", database.Classify(err))
	}
	if ev.RefundStatus == seatflow.RefundFailed {
		s.Log.WarnContext(ctx, "payments: the provider reports a refund failed; the reconciler sends a new one", "order", p.OrderID,
			"refund", ev.RefundReference, "reason", ev.Reason)
	}
	return payments.Applied, nil
}

// refundOf returns, inside tx, the refunds row of payment p that a refund event is about:
// the refund of some seats its metadata names (only if it is p's: another database
// sharing the provider account has refunds of the same ids), else the one whose provider
// reference it carries, else p's whole refund; nil when p has none of them.
func refundOf(ctx context.Context, tx *ent.Tx, p *ent.Payment, ev seatflow.PaymentEvent) (*ent.Refund, error) {
	var named []predicate.Refund
	switch {
	case ev.SeatRefundID > 0:
		named = append(named, refund.ID(ev.SeatRefundID))
	case ev.RefundReference != "":
		named = append(named, refund.Reference(ev.RefundReference))
	}
	for _, where := range [][]predicate.Refund{named, {refund.Whole(true)}} {
		if where == nil {
			continue
		}
		r, err := tx.Refund.Query().Where(refund.PaymentID(p.ID)).Where(where...).Order(ent.Asc(refund.FieldID)).First(ctx)
		if err == nil {
			return r, nil
		} else if !ent.IsNotFound(err) {
			return nil, fmt.Errorf("load refund: %w", err)
		}
	}
	return nil, nil
}

// refundedAtProvider records the provider's word ev on a refund of payment p that SeatFlow
// did not decide (its dashboard): p's whole refund, with that reason.
func (s *Service) refundedAtProvider(ctx context.Context, tx *ent.Tx, p *ent.Payment, ev seatflow.PaymentEvent, failed bool) error {
	r, err := s.requireRefund(ctx, tx, p, "refunded at the provider")
	if err != nil {
		return err
	}
	return s.writeRefund(ctx, tx.Client(), dueRefund{p: p, r: r}, false, ev.RefundStatus, ev.RefundReference, failed)
}

// refundStep decides what the provider's word ev changes of a refund recorded with status
// cur (nil: none decided) and provider reference ref (of the refund last sent): apply
// ev's status or not, and whether it counts a failed attempt. A success counts whichever
// refund it is about; a failure only for the refund last sent (an older attempt's failure
// changes nothing) and once; a pending refund only while none is confirmed.
func refundStep(cur *seatflow.RefundStatus, ref string, ev seatflow.PaymentEvent) (apply, failed bool) {
	same := ev.RefundReference != "" && ev.RefundReference == ref
	switch {
	case ev.RefundStatus == seatflow.RefundSucceeded:
		return cur == nil || *cur != seatflow.RefundSucceeded, false
	case ev.RefundStatus == seatflow.RefundFailed:
		ok := same && (cur == nil || *cur != seatflow.RefundFailed)
		return ok, ok
	case ev.RefundStatus == seatflow.RefundPending:
		return cur == nil || *cur == seatflow.RefundRequired || (*cur == seatflow.RefundFailed && !same), false
	}
	return false, false
}
