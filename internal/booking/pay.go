package booking

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/order"
	"seatflow/ent/seatoccupancy"
	"seatflow/internal/database"
	"seatflow/internal/seats"
)

// maxPaymentRef is the column size of orders.payment_ref.
const maxPaymentRef = 191

// PayOrder records the payment of a pending order and marks its seats sold. Paying again
// with the same paymentRef returns the paid order. A payment arriving after the hold
// expired first tries to take the same seats again; if another buyer has them it fails
// with ORDER_EXPIRED and the order is marked refundRequired.
func (s *Service) PayOrder(ctx context.Context, userID string, orderID int, paymentRef string) (*seatflow.Order, error) {
	if paymentRef == "" || len(paymentRef) > maxPaymentRef {
		return nil, seatflow.Errorf(seatflow.EINVALID, "paymentRef must be 1 to %d characters", maxPaymentRef)
	}
	if err := s.rateLimit(ctx, "order", userID, s.OrderRate); err != nil {
		return nil, err
	}
	// Two rounds at most: a conditional update that lost a race is decided on a reload.
	for range 2 {
		o, err := s.own(ctx, userID, orderID)
		if err != nil {
			return nil, err
		}
		now := s.now()
		switch {
		case o.Status == seatflow.OrderPaid:
			if o.PaymentRef == paymentRef {
				return s.withSeats(ctx, o)
			}
			return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "the order is already paid")
		case o.Status == seatflow.OrderCancelled:
			return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "the order was cancelled")
		case o.Status == seatflow.OrderExpired && o.RefundRequired:
			return nil, expiredErr()
		}
		st, err := s.Catalog.FreshShowtime(ctx, o.ShowtimeID)
		if err != nil {
			return nil, fmt.Errorf("pay order: %w", err)
		}
		if st.Status == seatflow.ShowtimeCancelled {
			// Its seats are not for sale any more, whatever the order's state.
			return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "the showtime was cancelled; the order cannot be paid")
		}
		if o.Status == seatflow.OrderExpired || !o.ExpiresAt.After(now) {
			return s.payLate(ctx, o, st, paymentRef)
		}
		n, err := s.DB.Order.Update().Where(order.ID(o.ID), order.StatusEQ(seatflow.OrderPending),
			order.HoldToken(o.HoldToken), order.ExpiresAtGT(now)).
			SetStatus(seatflow.OrderPaid).SetPaidAt(now).SetPaymentRef(paymentRef).Save(ctx)
		if err != nil {
			return nil, fmt.Errorf("pay order: %w", database.Classify(err))
		}
		if n == 0 {
			continue
		}
		return s.afterPaid(ctx, o.ID, o.ShowtimeID, o.HoldToken)
	}
	return nil, errChangedMeanwhile()
}

// afterPaid marks a paid order's seats sold. The payment is committed, so a Redis failure
// here is not the customer's: the reconciler's paid-seat repair finishes the job.
func (s *Service) afterPaid(ctx context.Context, orderID, showID int, token string) (*seatflow.Order, error) {
	ctx = context.WithoutCancel(ctx) // the payment is committed: finish whatever the client does
	o, err := s.reload(ctx, orderID)
	if err != nil {
		return nil, err
	}
	_, _ = s.Seats.Confirm(ctx, showID, token, o.SeatIDs)
	_ = s.queue().Remove(ctx, orderID)
	return o, nil
}

func expiredErr() error {
	return seatflow.Errorf(seatflow.EORDEREXPIRED, "the hold expired and the seats went to another buyer; the payment will be refunded")
}

var errChanged = errors.New("order changed meanwhile")

// payLate rescues a payment that arrived after the hold expired. The seats move to a fresh
// hold token (taking over the old token's seats if they are still held): the expiry path
// releases by the old token after its commit, and with a new token that late release
// cannot free the seats just paid for.
func (s *Service) payLate(ctx context.Context, o *ent.Order, st *seatflow.Showtime, paymentRef string) (*seatflow.Order, error) {
	layout, err := s.Layouts.Of(ctx, st.HallID)
	if err != nil {
		return nil, fmt.Errorf("pay order: load hall: %w", err)
	}
	seatIDs, err := s.seatIDs(ctx, o.ID)
	if err != nil {
		return nil, err
	}
	token := uuid.NewString()
	ctx = context.WithoutCancel(ctx) // a re-hold applied in Redis must reach MySQL or be released
	// No limit and no gap rule: the customer had these seats and has paid for them.
	err = s.Seats.Hold(ctx, seats.HoldRequest{ShowtimeID: o.ShowtimeID, Layout: layout, SeatIDs: seatIDs, Token: token,
		UserID: o.UserID, AllowGaps: true, TakeOver: o.HoldToken})
	if seatflow.ErrorCode(err) == seatflow.ESEATSUNAVAILABLE {
		return s.refund(ctx, o, paymentRef)
	} else if err != nil {
		return nil, err
	}
	now := s.now()
	err = s.withTx(ctx, func(tx *ent.Tx) error {
		// Not if a concurrent late payment of the same order already gave up on it.
		n, err := tx.Order.Update().Where(order.ID(o.ID), order.HoldToken(o.HoldToken),
			order.StatusIn(seatflow.OrderPending, seatflow.OrderExpired), order.RefundRequired(false)).
			SetStatus(seatflow.OrderPaid).SetHoldToken(token).SetPaidAt(now).SetPaymentRef(paymentRef).Save(ctx)
		if err != nil {
			return fmt.Errorf("mark paid: %w", err)
		}
		if n == 0 {
			return errChanged
		}
		// Expiry deleted the occupancy; a still-pending order keeps its rows: rewrite them.
		if _, err := tx.SeatOccupancy.Delete().Where(seatoccupancy.OrderID(o.ID)).Exec(ctx); err != nil {
			return fmt.Errorf("delete occupancy: %w", err)
		}
		return insertOccupancy(ctx, tx, o, seatIDs)
	})
	if err != nil {
		_, _ = s.Seats.Release(ctx, o.ShowtimeID, token, o.UserID, seatIDs)
		switch {
		case ent.IsConstraintError(err): // MySQL has another active order on a seat
			return s.refund(ctx, o, paymentRef)
		case errors.Is(err, errChanged):
			return nil, errChangedMeanwhile()
		}
		return nil, fmt.Errorf("pay order late: %w", database.Classify(err))
	}
	return s.afterPaid(ctx, o.ID, o.ShowtimeID, token)
}

// refund ends an order whose seats went to someone else while its payment was on the way.
func (s *Service) refund(ctx context.Context, o *ent.Order, paymentRef string) (*seatflow.Order, error) {
	if o.Status == seatflow.OrderPending {
		if _, err := s.finish(ctx, o, seatflow.OrderExpired); err != nil {
			return nil, err
		}
	}
	n, err := s.DB.Order.Update().Where(order.ID(o.ID), order.StatusEQ(seatflow.OrderExpired)).
		SetRefundRequired(true).SetPaymentRef(paymentRef).Save(ctx)
	if err != nil {
		return nil, fmt.Errorf("mark refund required: %w", database.Classify(err))
	}
	if n == 0 { // paid by a concurrent retry of the same payment
		if p, err := s.reload(ctx, o.ID); err == nil && p.Status == seatflow.OrderPaid {
			return p, nil
		}
	}
	return nil, expiredErr()
}
