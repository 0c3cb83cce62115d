package booking

import (
	"context"
	"fmt"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/payment"
	"seatflow/ent/refund"
	"seatflow/internal/database"
	"seatflow/internal/nodeid"
	"seatflow/internal/payments"
)

// dueRefund is one refund to send to the provider: its refunds row r, the refund of some
// seats or payment p's whole refund (r.Whole), returned from payment p of order o.
type dueRefund struct {
	o *ent.Order
	p *ent.Payment
	r *ent.Refund
	// earlier says, for a whole refund, that the order has a payment older than p.
	earlier bool
}

// due reports whether the refund still has to be sent (REQUIRED, or FAILED fewer than
// seatflow.MaxRefundAttempts times).
func (d dueRefund) due() bool { return d.r.Status.ToSend(d.r.Attempts) }

// String names the refund in errors.
func (d dueRefund) String() string {
	if !d.r.Whole {
		return fmt.Sprintf("refund %d of order %d", d.r.ID, d.o.ID)
	}
	return fmt.Sprintf("refund of payment %d of order %d", d.p.ID, d.o.ID)
}

// key is the refund's idempotency key less the attempt: the same attempt is sent under
// the same key, and after the provider reported a refund failed the next one is a new
// request. An order's first payment keeps the order's key, as when an order had one
// payment.
func (d dueRefund) key() string {
	switch {
	case !d.r.Whole:
		return fmt.Sprintf("%s-seats-%d", orderKey(d.o), d.r.ID)
	case d.earlier:
		return fmt.Sprintf("%s-payment-%d", orderKey(d.o), d.p.ID)
	}
	return orderKey(d.o)
}

// SendRefund sends a refund (a refunds row: the refund of some seats, or a payment's whole
// refund, of any of an order's payments) to the provider when it is due (REQUIRED, or
// FAILED fewer than seatflow.MaxRefundAttempts times) and records the provider's answer.
// It reports whether the provider took the refund. After a failure the refund stays due
// and the next call repeats the same request (same idempotency key); after the provider
// reported a refund failed, the next one is a new request. The reconciler calls it.
func (s *Service) SendRefund(ctx context.Context, refundID int) (bool, error) {
	if s.Provider == nil {
		return false, errNoProvider
	}
	var d dueRefund
	var err error
	if d.r, err = s.DB.Refund.Get(ctx, refundID); err != nil {
		return false, fmt.Errorf("load refund: %w", database.Classify(err))
	}
	if !d.due() {
		return false, nil
	}
	if d.p, err = s.DB.Payment.Get(ctx, d.r.PaymentID); err != nil {
		return false, fmt.Errorf("load payment: %w", database.Classify(err))
	}
	if d.o, err = s.DB.Order.Get(ctx, d.p.OrderID); err != nil {
		return false, fmt.Errorf("load order: %w", database.Classify(err))
	}
	if d.r.Whole {
		d.earlier, err = s.DB.Payment.Query().Where(payment.OrderID(d.o.ID), payment.IDLT(d.p.ID)).Exist(ctx)
		if err != nil {
			return false, fmt.Errorf("load payments: %w", database.Classify(err))
		}
	}
	return s.sendRefund(ctx, d)
}

// sendRefund sends a refund read by the caller (as MySQL has it) when it is due and records
// the provider's answer; it reports whether the provider took it. Staff's refunds send
// theirs without reading the order and payment again, which under a slow database is
// what keeps them within their deadline.
func (s *Service) sendRefund(ctx context.Context, d dueRefund) (bool, error) {
	if !d.due() {
		return false, nil
	}
	if d.p.Provider != s.Provider.Name() {
		return false, fmt.Errorf("%s: its payment was taken by provider %q, this instance runs %q", d, d.p.Provider, s.Provider.Name())
	}
	req := payments.RefundRequest{Reference: d.p.Reference, OrderID: nodeid.Encode(nodeid.Order, d.o.ID),
		IdempotencyKey: fmt.Sprintf("%s-refund-%d", d.key(), d.r.Attempts), Reason: d.r.Reason}
	var ans *payments.Refund
	if !d.r.Whole {
		req.AmountCents, req.SeatRefundID = d.r.AmountCents, d.r.ID
	} else {
		// Refunds of some seats returned part of it already: the rest goes back, said exactly.
		parts, err := s.DB.Refund.Query().Where(refund.PaymentID(d.p.ID), refund.Whole(false)).Select(refund.FieldAmountCents).Ints(ctx)
		if err != nil {
			return false, fmt.Errorf("refunds of payment %d: %w", d.p.ID, database.Classify(err))
		}
		if len(parts) > 0 {
			req.AmountCents = d.p.AmountCents
			for _, c := range parts {
				req.AmountCents -= c
			}
			if req.AmountCents <= 0 { // nothing is left to send
				ans = &payments.Refund{Status: seatflow.RefundSucceeded}
			}
		}
	}
	if ans == nil {
		var err error
		if ans, err = s.Provider.Refund(ctx, req); err != nil {
			return false, fmt.Errorf("send %s: %w", d, err)
		}
	}
	if err := s.recordSent(context.WithoutCancel(ctx), d, ans); err != nil { // the provider has it: record it
		return true, fmt.Errorf("record %s: %w", d, database.Classify(err))
	}
	return true, nil
}

// recordSent records the provider's answer to a refund sent as d was read; only over that
// state: a webhook may have said more meanwhile.
func (s *Service) recordSent(ctx context.Context, d dueRefund, ans *payments.Refund) error {
	return s.writeRefund(ctx, s.DB, d, true, ans.Status, ans.Reference, ans.Status == seatflow.RefundFailed)
}

// writeRefund writes through c a refund's new status, its provider reference when one is
// given, and one more failure when failed; onlyIfAsRead (for a refund read due) leaves it
// as it is when it is no longer in the state d was read with.
func (s *Service) writeRefund(ctx context.Context, c *ent.Client, d dueRefund, onlyIfAsRead bool, status seatflow.RefundStatus,
	reference string, failed bool) error {
	add := 0
	if failed {
		add = 1
	}
	u := c.Refund.Update().Where(refund.ID(d.r.ID)).SetStatus(status).AddAttempts(add).SetUpdatedAt(s.Now.Now())
	if onlyIfAsRead {
		u.Where(refund.StatusEQ(d.r.Status), refund.Attempts(d.r.Attempts))
	}
	if reference != "" {
		u.SetReference(reference)
	}
	return u.Exec(ctx)
}
