package booking

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/payment"
	"seatflow/internal/database"
	"seatflow/internal/payments"
)

var _ payments.Events = (*Service)(nil)

// errReplay: the event was applied before (its id is recorded); nothing changes.
var errReplay = errors.New("payment event already applied")

// ApplyPaymentEvent applies a verified provider event, once per event id: the id is
// recorded in the transaction that makes the event's change, so a second delivery (a retry,
// or the same event at another instance at the same moment) answers Replayed and changes
// nothing.
//
//   - payment succeeded: the order is paid through the pay path (late payment included) when
//     the amount and currency are the order's. A payment the order cannot take (its amount
//     differs: MISMATCH; the order was paid by another payment, or cancelled; the showtime
//     was cancelled) is recorded beside the order's other payments and refunded through the
//     provider, the order and its seats unchanged. An order keeps every payment it receives.
//   - payment failed or canceled: recorded; the hold is unchanged.
//   - refund updated: the payment's refund status follows the provider's.
//
// An order that does not exist (yet) is NOT_FOUND: the provider must deliver again later.
func (s *Service) ApplyPaymentEvent(ctx context.Context, ev seatflow.PaymentEvent) (payments.Outcome, error) {
	var err error
	switch ev.Kind {
	case seatflow.EventPaymentSucceeded:
		err = s.paymentSucceeded(ctx, ev)
	case seatflow.EventPaymentFailed, seatflow.EventPaymentCanceled:
		err = s.paymentNotTaken(ctx, ev)
	case seatflow.EventRefundUpdated:
		return s.refundUpdated(ctx, ev)
	default:
		return payments.Ignored, nil
	}
	if errors.Is(err, errReplay) {
		return payments.Replayed, nil
	} else if err != nil {
		return "", err
	}
	return payments.Applied, nil
}

// claim returns the record of ev, to run first in the transaction of its effect. Its
// unique (provider, event id) makes a concurrent second delivery wait at the insert until
// the first transaction ends, then fail (errReplay) if that one committed.
func (s *Service) claim(ev seatflow.PaymentEvent) func(ctx context.Context, tx *ent.Tx) error {
	return func(ctx context.Context, tx *ent.Tx) error {
		c := tx.PaymentEvent.Create().SetProvider(ev.Provider).SetEventID(ev.ID).SetType(ev.Type).SetReceivedAt(s.Now.Now())
		if ev.OrderID > 0 {
			c.SetOrderID(ev.OrderID)
		}
		if err := c.Exec(ctx); ent.IsConstraintError(err) {
			return errReplay
		} else if err != nil {
			return fmt.Errorf("record event: %w", err)
		}
		return nil
	}
}

// recordOnly records an event whose effect is nothing (the order already reflects it).
func (s *Service) recordOnly(ctx context.Context, ev seatflow.PaymentEvent) error {
	err := s.withTx(ctx, func(tx *ent.Tx) error { return s.claim(ev)(ctx, tx) })
	if err != nil && !errors.Is(err, errReplay) {
		return fmt.Errorf("record event: %w", database.Classify(err))
	}
	return err
}

// eventOrder loads the order an event names; NOT_FOUND (deliver again later) when it is not
// there: the provider may confirm before the order's transaction is visible here.
func (s *Service) eventOrder(ctx context.Context, ev seatflow.PaymentEvent) (*ent.Order, error) {
	o, err := s.DB.Order.Get(ctx, ev.OrderID)
	if ent.IsNotFound(err) {
		return nil, seatflow.Errorf(seatflow.ENOTFOUND, "order %d not found (yet); deliver the event again later", ev.OrderID)
	} else if err != nil {
		return nil, fmt.Errorf("load order: %w", database.Classify(err))
	}
	return o, nil
}

func (s *Service) paymentSucceeded(ctx context.Context, ev seatflow.PaymentEvent) error {
	o, err := s.eventOrder(ctx, ev)
	if err != nil {
		return err
	}
	p := settlement{provider: ev.Provider, reference: ev.Reference, amountCents: ev.AmountCents,
		currency: strings.ToUpper(ev.Currency), claim: s.claim(ev)}
	if p.amountCents != o.AmountCents || p.currency != strings.ToUpper(o.Currency) {
		s.Log.ErrorContext(ctx, "payments: the provider confirmed an amount other than the order's; flagged and refunded, not paid",
			"order", o.ID, "reference", ev.Reference, "paid", p.amountCents, "paidCurrency", p.currency,
			"due", o.AmountCents, "currency", o.Currency)
		return s.settleUnpaid(ctx, o, p, seatflow.PaymentMismatch, "the amount or currency paid differs from the order's")
	}
	_, err = s.pay(ctx, o.ID, p)
	var r *refusal
	switch {
	case err == nil, errors.Is(err, errSeatsGone): // paid, or recorded with its refund due
		return nil
	case errors.Is(err, errAlreadyPaid), errors.Is(err, errRefunding):
		return s.recordOnly(ctx, ev) // the order already reflects this payment
	case errors.As(err, &r) && r.tracked: // this payment's refund is already recorded
		return s.recordOnly(ctx, ev)
	case errors.As(err, &r):
		// The order cannot take it (paid by another payment, cancelled, its showtime
		// cancelled): kept beside the order's other payments and refunded.
		return s.settleUnpaid(ctx, o, p, seatflow.PaymentSucceeded, r.err.Message)
	}
	return err
}

// settleUnpaid records a payment the order cannot take, with its refund due, and sends the
// refund: the money goes back and the order and its seats stay as they are. The payment
// is a record of its own beside the order's others (the one that paid it, or earlier ones
// refunded too).
func (s *Service) settleUnpaid(ctx context.Context, o *ent.Order, p settlement, status seatflow.PaymentStatus, reason string) error {
	var id int
	err := s.withTx(ctx, func(tx *ent.Tx) error {
		if err := p.claimIn(ctx, tx); err != nil {
			return err
		}
		var err error
		id, err = s.recordPayment(ctx, tx, o.ID, p, status, reason)
		return err
	})
	if errors.Is(err, errReplay) {
		return err
	} else if err != nil {
		return fmt.Errorf("record unpaid payment: %w", database.Classify(err))
	}
	s.trySendRefund(ctx, id)
	return nil
}

// paymentNotTaken records a declined or cancelled payment. It never overwrites a payment
// that took money (events arrive out of order) and leaves the hold as it is: the customer
// may try again until it expires.
func (s *Service) paymentNotTaken(ctx context.Context, ev seatflow.PaymentEvent) error {
	o, err := s.eventOrder(ctx, ev)
	if err != nil {
		return err
	}
	status := seatflow.PaymentFailed
	if ev.Kind == seatflow.EventPaymentCanceled {
		status = seatflow.PaymentCanceled
	}
	s.Log.InfoContext(ctx, "payments: payment not taken", "order", o.ID, "reference", ev.Reference, "status", status, "reason", ev.Reason)
	err = s.withTx(ctx, func(tx *ent.Tx) error {
		if err := s.claim(ev)(ctx, tx); err != nil {
			return err
		}
		// The record of this very payment: an order may have several.
		cur, err := tx.Payment.Query().Where(payment.OrderID(o.ID), payment.Provider(ev.Provider),
			payment.Reference(ev.Reference)).Only(ctx)
		switch {
		case ent.IsNotFound(err): // started elsewhere, or its record was lost: keep what the provider said
			now := s.Now.Now()
			return tx.Payment.Create().SetOrderID(o.ID).SetProvider(ev.Provider).SetReference(ev.Reference).
				SetStatus(status).SetAmountCents(ev.AmountCents).SetCurrency(strings.ToUpper(ev.Currency)).
				SetCreatedAt(now).SetUpdatedAt(now).Exec(ctx)
		case err != nil:
			return err
		case cur.Status.Settled():
			return nil // money was taken: a late word about an earlier attempt changes nothing
		}
		return tx.Payment.UpdateOneID(cur.ID).SetStatus(status).SetUpdatedAt(s.Now.Now()).Exec(ctx)
	})
	if err != nil && !errors.Is(err, errReplay) {
		return fmt.Errorf("record payment not taken: %w", database.Classify(err))
	}
	return err
}
