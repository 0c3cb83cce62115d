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

// dueRefund is one refund to send to the provider: a payment's whole refund (recorded on
// the payment), or the refund of some seats (part, a refunds row) returned from payment p.
// Both are sent, and the provider's answer recorded, by sendRefund.
type dueRefund struct {
	o    *ent.Order
	p    *ent.Payment
	part *ent.Refund // nil: p's whole refund
	// earlier says, for a whole refund, that the order has a payment older than p.
	earlier bool
}

// refundState is where a refund is: its status (nil: no refund of the payment decided),
// the failures the provider reported, its reason, and the provider's id of the refund
// last sent.
type refundState struct {
	status            *seatflow.RefundStatus
	attempts          int
	reason, reference string
}

func (d dueRefund) state() refundState {
	if d.part != nil {
		return refundState{&d.part.Status, d.part.Attempts, d.part.Reason, d.part.Reference}
	}
	return refundState{d.p.RefundStatus, d.p.RefundAttempts, d.p.RefundReason, d.p.RefundReference}
}

// due reports whether the refund still has to be sent (REQUIRED, or FAILED fewer than
// seatflow.MaxRefundAttempts times).
func (d dueRefund) due() bool {
	st := d.state()
	return st.status != nil && st.status.ToSend(st.attempts)
}

// String names the refund in errors.
func (d dueRefund) String() string {
	if d.part != nil {
		return fmt.Sprintf("refund %d of order %d", d.part.ID, d.o.ID)
	}
	return fmt.Sprintf("refund of payment %d of order %d", d.p.ID, d.o.ID)
}

// key is the refund's idempotency key less the attempt: the same attempt is sent under
// the same key, and after the provider reported a refund failed the next one is a new
// request. An order's first payment keeps the order's key, as when an order had one
// payment.
func (d dueRefund) key() string {
	switch {
	case d.part != nil:
		return fmt.Sprintf("%s-seats-%d", orderKey(d.o), d.part.ID)
	case d.earlier:
		return fmt.Sprintf("%s-payment-%d", orderKey(d.o), d.p.ID)
	}
	return orderKey(d.o)
}

// SendRefund sends the refund of a payment (any of an order's payments: the one that paid
// it, or another one it could not take) to the provider when it is due (REQUIRED, or
// FAILED fewer than seatflow.MaxRefundAttempts times) and records the provider's answer.
// It reports whether the provider took the refund. After a failure the refund stays due
// and the next call repeats the same request (same idempotency key); after the provider
// reported a refund failed, the next one is a new request. The reconciler calls it.
func (s *Service) SendRefund(ctx context.Context, paymentID int) (bool, error) {
	return s.sendStored(ctx, paymentID, 0)
}

// SendSeatRefund is SendRefund for a refund of some seats (refundSeats), by its id.
func (s *Service) SendSeatRefund(ctx context.Context, refundID int) (bool, error) {
	return s.sendStored(ctx, 0, refundID)
}

// sendStored reads a refund as MySQL has it, the refund of some seats refundID if not 0,
// else paymentID's whole refund, and sends it when it is due.
func (s *Service) sendStored(ctx context.Context, paymentID, refundID int) (bool, error) {
	if s.Provider == nil {
		return false, errNoProvider
	}
	var d dueRefund
	var err error
	if refundID != 0 {
		if d.part, err = s.DB.Refund.Get(ctx, refundID); err != nil {
			return false, fmt.Errorf("load refund: %w", database.Classify(err))
		}
		paymentID = d.part.PaymentID
	}
	if d.p, err = s.DB.Payment.Get(ctx, paymentID); err != nil {
		return false, fmt.Errorf("load payment: %w", database.Classify(err))
	}
	if !d.due() {
		return false, nil
	}
	if d.o, err = s.DB.Order.Get(ctx, d.p.OrderID); err != nil {
		return false, fmt.Errorf("load order: %w", database.Classify(err))
	}
	if d.part == nil {
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
	st := d.state()
	req := payments.RefundRequest{Reference: d.p.Reference, OrderID: nodeid.Encode(nodeid.Order, d.o.ID),
		IdempotencyKey: fmt.Sprintf("%s-refund-%d", d.key(), st.attempts), Reason: st.reason}
	var ans *payments.Refund
	if d.part != nil {
		req.AmountCents, req.SeatRefundID = d.part.AmountCents, d.part.ID
	} else {
		// Refunds of some seats returned part of it already: the rest goes back, said exactly.
		parts, err := s.DB.Refund.Query().Where(refund.PaymentID(d.p.ID)).Select(refund.FieldAmountCents).Ints(ctx)
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
// as it is when it is no longer in the state d was read with. A payment refunded at the provider with no refund
// decided in SeatFlow (its dashboard) is recorded with that reason.
func (s *Service) writeRefund(ctx context.Context, c *ent.Client, d dueRefund, onlyIfAsRead bool, status seatflow.RefundStatus,
	reference string, failed bool) error {
	add := 0
	if failed {
		add = 1
	}
	if d.part != nil {
		u := c.Refund.Update().Where(refund.ID(d.part.ID)).SetStatus(status).AddAttempts(add).SetUpdatedAt(s.Now())
		if onlyIfAsRead {
			u.Where(refund.StatusEQ(d.part.Status), refund.Attempts(d.part.Attempts))
		}
		if reference != "" {
			u.SetReference(reference)
		}
		return u.Exec(ctx)
	}
	u := c.Payment.Update().Where(payment.ID(d.p.ID)).SetRefundStatus(status).AddRefundAttempts(add).SetUpdatedAt(s.Now())
	switch {
	case onlyIfAsRead: // read due: its status is set
		u.Where(payment.RefundStatusEQ(*d.p.RefundStatus), payment.RefundAttempts(d.p.RefundAttempts))
	case d.p.RefundStatus == nil: // refunded from outside SeatFlow (the provider's dashboard)
		u.SetRefundReason("refunded at the provider")
	}
	if reference != "" {
		u.SetRefundReference(reference)
	}
	return u.Exec(ctx)
}
