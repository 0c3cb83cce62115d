package booking

import (
	"context"
	"errors"
	"fmt"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/payment"
	"seatflow/internal/database"
	"seatflow/internal/nodeid"
	"seatflow/internal/payments"
)

// maxRefundReason is the column size of payments.refund_reason.
const maxRefundReason = 255

var errNoProvider = errors.New("booking: no payment provider configured")

// errSecondPayment: the order's payment record holds another payment that took money; the
// new one is not recorded over it (a person refunds it, see Service.settleUnpaid).
var errSecondPayment = errors.New("the order already holds another settled payment")

// StartPayment starts paying one of the user's PENDING_PAYMENT orders with the provider,
// or returns the payment already started for it: the same order gives the same payment
// (the provider's idempotency key is derived from the order). It does not extend the hold.
// Someone else's order is NOT_FOUND; a paid or cancelled one INVALID_STATE; an expired
// one ORDER_EXPIRED.
func (s *Service) StartPayment(ctx context.Context, userID string, orderID int) (*seatflow.PaymentSession, error) {
	if s.Provider == nil {
		return nil, errNoProvider
	}
	if err := s.rateLimit(ctx, "order", userID, s.OrderRate); err != nil {
		return nil, err
	}
	o, err := s.own(ctx, userID, orderID)
	if err != nil {
		return nil, err
	}
	switch {
	case o.Status == seatflow.OrderPaid:
		return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "the order is already paid")
	case o.Status == seatflow.OrderCancelled:
		return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "the order was cancelled")
	case o.Status == seatflow.OrderExpired || !o.ExpiresAt.After(s.Now()):
		return nil, seatflow.Errorf(seatflow.EORDEREXPIRED, "the hold has expired")
	}
	st, err := s.Catalog.FreshShowtime(ctx, o.ShowtimeID)
	if err != nil {
		return nil, fmt.Errorf("start payment: %w", err)
	} else if st.Status == seatflow.ShowtimeCancelled {
		return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "the showtime was cancelled; the order cannot be paid")
	} else if err := s.salesClosed(st); err != nil {
		return nil, err
	}
	cur, err := s.paymentRow(ctx, o.ID)
	if err != nil {
		return nil, err
	}
	if cur != nil {
		switch {
		case cur.Status.Settled(): // the order is being updated, or the payment was flagged
			return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "the order's payment was already received")
		case cur.Provider != s.Provider.Name(): // the configuration changed: replaced below
		case cur.Status == seatflow.PaymentCanceled:
			return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "the order's payment was cancelled; hold the seats again")
		default: // pending, or declined and open to another try
			return s.resume(ctx, o, cur.Reference)
		}
	}
	in, err := s.Provider.StartPayment(ctx, payments.IntentRequest{OrderID: nodeid.Encode(nodeid.Order, o.ID),
		AmountCents: o.AmountCents, Currency: o.Currency, IdempotencyKey: orderKey(o) + "-payment"})
	if err != nil {
		return nil, fmt.Errorf("start payment of order %d: %w", o.ID, err)
	}
	now := s.Now()
	if cur == nil {
		err = s.DB.Payment.Create().SetOrderID(o.ID).SetProvider(s.Provider.Name()).SetReference(in.Reference).
			SetStatus(seatflow.PaymentPending).SetAmountCents(o.AmountCents).SetCurrency(o.Currency).
			SetCreatedAt(now).SetUpdatedAt(now).Exec(ctx)
		if ent.IsConstraintError(err) { // a concurrent start of the same order recorded its payment first
			if cur, err = s.paymentRow(ctx, o.ID); err != nil {
				return nil, err
			}
			return s.resume(ctx, o, cur.Reference)
		}
	} else {
		// Started with another provider and not paid: this one replaces it, unless that
		// payment was taken meanwhile.
		var n int
		n, err = s.DB.Payment.Update().Where(payment.ID(cur.ID), payment.Provider(cur.Provider), payment.Reference(cur.Reference),
			payment.StatusNotIn(seatflow.PaymentSucceeded, seatflow.PaymentMismatch)).
			SetProvider(s.Provider.Name()).SetReference(in.Reference).SetStatus(seatflow.PaymentPending).
			SetAmountCents(o.AmountCents).SetCurrency(o.Currency).SetUpdatedAt(now).Save(ctx)
		if err == nil && n == 0 {
			return nil, errChangedMeanwhile()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("record payment: %w", database.Classify(err))
	}
	return session(s.Provider.Name(), o, in), nil
}

// resume answers a repeated startPayment with the payment started before.
func (s *Service) resume(ctx context.Context, o *ent.Order, reference string) (*seatflow.PaymentSession, error) {
	in, err := s.Provider.ResumePayment(ctx, reference)
	if err != nil {
		return nil, fmt.Errorf("resume payment of order %d: %w", o.ID, err)
	}
	return session(s.Provider.Name(), o, in), nil
}

func session(provider string, o *ent.Order, in *payments.Intent) *seatflow.PaymentSession {
	out := &seatflow.PaymentSession{Provider: provider, AmountCents: o.AmountCents, Currency: o.Currency}
	exp := o.ExpiresAt
	out.ExpiresAt = &exp
	if in.ClientSecret != "" {
		secret := in.ClientSecret
		out.ClientSecret = &secret
	}
	return out
}

// orderKey names an order with its provider: idempotency keys start with it. The creation
// time is part of it because ids start again in another database (a staging copy, a test
// run) that may share the provider account, and the provider would answer a reused key with
// the other order's payment.
func orderKey(o *ent.Order) string {
	return fmt.Sprintf("seatflow-order-%d-%d", o.ID, o.CreatedAt.UnixMilli())
}

// Payment returns an order's payment, nil when none was started. The caller has checked
// that the order may be seen (it was loaded for the user or an admin).
func (s *Service) Payment(ctx context.Context, orderID int) (*seatflow.Payment, error) {
	p, err := s.paymentRow(ctx, orderID)
	if err != nil || p == nil {
		return nil, err
	}
	return &seatflow.Payment{OrderID: p.OrderID, Provider: p.Provider, Status: p.Status, Reference: p.Reference,
		AmountCents: p.AmountCents, Currency: p.Currency, RefundStatus: p.RefundStatus}, nil
}

// paymentRow loads an order's payment record, nil when there is none.
func (s *Service) paymentRow(ctx context.Context, orderID int) (*ent.Payment, error) {
	p, err := s.DB.Payment.Query().Where(payment.OrderID(orderID)).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("load payment: %w", database.Classify(err))
	}
	return p, nil
}

// recordPayment writes what a settlement did to the order's payment record, inside the
// transaction that changes the order: status, and the refund now due when refundReason is
// set. It never writes over another payment that took money (errSecondPayment).
func (s *Service) recordPayment(ctx context.Context, tx *ent.Tx, orderID int, p settlement, status seatflow.PaymentStatus, refundReason string) error {
	cur, err := tx.Payment.Query().Where(payment.OrderID(orderID)).Only(ctx)
	if err != nil && !ent.IsNotFound(err) {
		return fmt.Errorf("load payment: %w", err)
	}
	if cur != nil && cur.Status.Settled() && cur.Reference != p.reference {
		return errSecondPayment
	}
	now := s.Now()
	if len(refundReason) > maxRefundReason {
		refundReason = refundReason[:maxRefundReason]
	}
	if cur == nil {
		c := tx.Payment.Create().SetOrderID(orderID).SetProvider(p.provider).SetReference(p.reference).SetStatus(status).
			SetAmountCents(p.amountCents).SetCurrency(p.currency).SetCreatedAt(now).SetUpdatedAt(now)
		if refundReason != "" {
			c.SetRefundStatus(seatflow.RefundRequired).SetRefundReason(refundReason)
		}
		if err := c.Exec(ctx); err != nil {
			return fmt.Errorf("record payment: %w", err)
		}
		return nil
	}
	u := tx.Payment.UpdateOneID(cur.ID).SetProvider(p.provider).SetReference(p.reference).SetStatus(status).
		SetAmountCents(p.amountCents).SetCurrency(p.currency).SetUpdatedAt(now)
	if refundReason != "" && cur.RefundStatus == nil {
		u.SetRefundStatus(seatflow.RefundRequired).SetRefundReason(refundReason)
	}
	if err := u.Exec(ctx); err != nil {
		return fmt.Errorf("record payment: %w", err)
	}
	return nil
}
