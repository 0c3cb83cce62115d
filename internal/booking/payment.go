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
	"seatflow/ent/refund"
	"seatflow/internal/database"
	"seatflow/internal/nodeid"
	"seatflow/internal/payments"
)

// maxRefundReason is the column size of refunds.reason.
const maxRefundReason = 255

var errNoProvider = errors.New("booking: no payment provider configured")

// errRefunding: the payment is recorded with its refund decided; it cannot pay the order
// (the money is going back).
var errRefunding = errors.New("the payment is being refunded")

// StartPayment starts paying one of the user's PENDING_PAYMENT orders with the provider,
// or returns the payment already started for it: the same order gives the same payment
// (the provider's idempotency key is derived from the order) while that one has taken no
// money; after a payment the order could not keep (a MISMATCH, refunded) it starts a new
// one under a key of its own. It does not extend the hold.
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
	case o.Status == seatflow.OrderExpired || !o.ExpiresAt.After(s.Now.Now()):
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
	ps, err := s.orderPayments(ctx, o.ID)
	if err != nil {
		return nil, err
	}
	var open *ent.Payment // the latest payment of this provider that has not taken money
	for _, p := range ps.all {
		switch {
		case p.Status == seatflow.PaymentSucceeded && ps.whole[p.ID] == nil: // the order is being updated
			return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "the order's payment was already received")
		case p.Provider == s.Provider.Name() && !p.Status.Settled():
			open = p
		}
	}
	switch {
	case open != nil && open.Status == seatflow.PaymentCanceled:
		return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "the order's payment was cancelled; hold the seats again")
	case open != nil: // pending, or declined and open to another try
		return s.resume(ctx, o, open.Reference)
	}
	// None yet, or every one so far took money the order cannot keep (its refund is
	// decided) or was started with another provider: a new payment, under a key of its own
	// (the provider would answer the first key with the first payment).
	key := orderKey(o) + "-payment"
	if len(ps.all) > 0 {
		key += fmt.Sprintf("-%d", len(ps.all))
	}
	in, err := s.Provider.StartPayment(ctx, payments.IntentRequest{OrderID: nodeid.Encode(nodeid.Order, o.ID),
		AmountCents: o.AmountCents, Currency: o.Currency, IdempotencyKey: key})
	if err != nil {
		return nil, fmt.Errorf("start payment of order %d: %w", o.ID, err)
	}
	now := s.Now.Now()
	err = s.DB.Payment.Create().SetOrderID(o.ID).SetProvider(s.Provider.Name()).SetReference(in.Reference).
		SetStatus(seatflow.PaymentPending).SetAmountCents(o.AmountCents).SetCurrency(o.Currency).
		SetCreatedAt(now).SetUpdatedAt(now).Exec(ctx)
	if ent.IsConstraintError(err) { // a concurrent start of the same order recorded this payment first
		return session(s.Provider.Name(), o, in), nil
	} else if err != nil {
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

// Payment returns the payment of an order that paid it (or, for a late payment refunded
// because its seats were gone, that payment); otherwise its latest payment; nil when none
// was started. The caller has checked that the order may be seen (it was loaded for the
// user or an admin).
func (s *Service) Payment(ctx context.Context, orderID int) (*seatflow.Payment, error) {
	o, err := s.DB.Order.Query().Where(order.ID(orderID)).Select(order.FieldPaymentRef).Only(ctx)
	if err != nil {
		return nil, fmt.Errorf("load order: %w", database.Classify(err))
	}
	ps, err := s.orderPayments(ctx, orderID)
	if err != nil {
		return nil, err
	}
	if p := applied(o, ps.all); p != nil {
		return paymentOf(p, ps.whole[p.ID]), nil
	}
	return nil, nil
}

// Payments returns every payment an order received or started, oldest first: the one
// that paid it and any other, each with its refund. The caller has checked that the order
// may be seen.
func (s *Service) Payments(ctx context.Context, orderID int) ([]*seatflow.Payment, error) {
	ps, err := s.orderPayments(ctx, orderID)
	if err != nil {
		return nil, err
	}
	out := make([]*seatflow.Payment, len(ps.all))
	for i, p := range ps.all {
		out[i] = paymentOf(p, ps.whole[p.ID])
	}
	return out, nil
}

// paymentOf is payment p with its whole refund (nil: none decided).
func paymentOf(p *ent.Payment, whole *ent.Refund) *seatflow.Payment {
	out := &seatflow.Payment{OrderID: p.OrderID, Provider: p.Provider, Status: p.Status, Reference: p.Reference,
		AmountCents: p.AmountCents, Currency: p.Currency, CreatedAt: p.CreatedAt}
	if whole != nil {
		st := whole.Status
		out.RefundStatus = &st
	}
	return out
}

// paymentSet is an order's payments, oldest first, with the whole refund (a refunds row)
// of each that has one decided, by payment id.
type paymentSet struct {
	all   []*ent.Payment
	whole map[int]*ent.Refund
}

// orderPayments loads every payment record of an order, oldest first, and the order's
// whole refunds, at once (two independent reads).
func (s *Service) orderPayments(ctx context.Context, orderID int) (paymentSet, error) {
	var ps paymentSet
	var wholes []*ent.Refund
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		ps.all, err = s.DB.Payment.Query().Where(payment.OrderID(orderID)).Order(ent.Asc(payment.FieldID)).All(gctx)
		return err
	})
	g.Go(func() (err error) {
		wholes, err = s.DB.Refund.Query().Where(refund.OrderID(orderID), refund.Whole(true)).All(gctx)
		return err
	})
	if err := g.Wait(); err != nil {
		return paymentSet{}, fmt.Errorf("load payments: %w", database.Classify(err))
	}
	ps.whole = make(map[int]*ent.Refund, len(wholes))
	for _, r := range wholes {
		ps.whole[r.PaymentID] = r
	}
	return ps, nil
}

// applied picks, of an order's payments (oldest first), the one the order was settled
// with: the latest that took money under the order's payment reference (the one that paid
// it, or the late payment refunded for it); else the latest payment; nil for none.
func applied(o *ent.Order, ps []*ent.Payment) *ent.Payment {
	for i := len(ps) - 1; i >= 0 && o.PaymentRef != ""; i-- {
		if ps[i].Reference == o.PaymentRef && ps[i].Status.Settled() {
			return ps[i]
		}
	}
	if len(ps) == 0 {
		return nil
	}
	return ps[len(ps)-1]
}

// recordPayment writes what a settlement did to the record of that payment (the order's
// record with the settlement's provider and reference, made when there is none), inside
// the transaction that changes the order: status, and the refund now due when
// refundReason is set. It returns the record's id. A record that took money keeps its
// status (events arrive out of order, and money taken stays taken); one whose refund is
// decided cannot pay the order (errRefunding).
func (s *Service) recordPayment(ctx context.Context, tx *ent.Tx, orderID int, p settlement, status seatflow.PaymentStatus, refundReason string) (int, error) {
	cur, err := tx.Payment.Query().Where(payment.OrderID(orderID), payment.Provider(p.provider), payment.Reference(p.reference)).Only(ctx)
	if err != nil && !ent.IsNotFound(err) {
		return 0, fmt.Errorf("load payment: %w", err)
	}
	now := s.Now.Now()
	var saved *ent.Payment
	if cur == nil {
		saved, err = tx.Payment.Create().SetOrderID(orderID).SetProvider(p.provider).SetReference(p.reference).SetStatus(status).
			SetAmountCents(p.amountCents).SetCurrency(p.currency).SetCreatedAt(now).SetUpdatedAt(now).Save(ctx)
		if err != nil {
			return 0, fmt.Errorf("record payment: %w", err)
		}
	} else {
		refunding, err := tx.Refund.Query().Where(refund.PaymentID(cur.ID), refund.Whole(true)).Exist(ctx)
		if err != nil {
			return 0, fmt.Errorf("load refund: %w", err)
		}
		if refundReason == "" && refunding {
			return 0, errRefunding
		} else if refunding {
			refundReason = "" // decided already
		}
		u := tx.Payment.UpdateOneID(cur.ID).SetUpdatedAt(now)
		if !cur.Status.Settled() {
			u.SetStatus(status).SetAmountCents(p.amountCents).SetCurrency(p.currency)
		}
		if saved, err = u.Save(ctx); err != nil {
			return 0, fmt.Errorf("record payment: %w", err)
		}
	}
	if refundReason != "" {
		_, err := s.requireRefund(ctx, tx, saved, refundReason)
		if err != nil && !errors.Is(err, errChanged) { // errChanged: decided meanwhile
			return 0, err
		}
	}
	return saved.ID, nil
}
