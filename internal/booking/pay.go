package booking

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/order"
	"seatflow/internal/background"
	"seatflow/internal/database"
	"seatflow/internal/seats"
)

// maxPaymentRef is the column size of orders.payment_ref.
const maxPaymentRef = 191

// settlement is a payment to apply to an order: the customer's payOrder (test provider) or
// a provider's confirmation (the webhook).
type settlement struct {
	provider    string
	reference   string
	amountCents int
	currency    string
	// claim, when set, runs first in every transaction that applies the payment: it records
	// the provider's event, so a second delivery of it waits there and then changes nothing
	// (Service.claim).
	claim func(ctx context.Context, tx *ent.Tx) error
}

func (p settlement) claimIn(ctx context.Context, tx *ent.Tx) error {
	if p.claim == nil {
		return nil
	}
	return p.claim(ctx, tx)
}

var (
	// errAlreadyPaid: the order is paid with this very payment; nothing to do.
	errAlreadyPaid = errors.New("the order is already paid with this payment")
	// errSeatsGone wraps the ORDER_EXPIRED of a late payment that cannot have its seats:
	// the payment was recorded with its refund due.
	errSeatsGone = errors.New("the late payment cannot have its seats; refund recorded")
	// errOverLimit: the customer holds or bought the showtime's purchase limit meanwhile.
	errOverLimit = errors.New("over the purchase limit")
)

// Why a payment is refunded instead of taking the seats: the code and message the
// customer reads and the reason recorded with the refund.
var (
	lateSeatsGone = lateRefund{seatflow.EORDEREXPIRED, "the hold expired and the seats went to another buyer; the payment will be refunded",
		"the seats went to another buyer before the payment arrived"}
	lateOverLimit = lateRefund{seatflow.EORDEREXPIRED, "the hold expired and the seats you hold or bought since then reach this showtime's purchase limit; the payment will be refunded",
		"a late payment would put the customer over the showtime's purchase limit"}
	lateTooLate = lateRefund{seatflow.EORDEREXPIRED, "the hold expired too long ago to be rescued; the payment will be refunded",
		"the payment arrived after the late-payment window"}
	lateSalesClosed = lateRefund{seatflow.ENOTONSALE, "this showtime's sales have closed; the payment will be refunded",
		"the payment arrived after the showtime's sales closed"}
)

type lateRefund struct{ code, message, reason string }

// DefaultLateWindow is how long after its hold expired an order's payment may still take
// its seats (docs/DESIGN.md "Orders": a payment that arrives just after expiry).
const DefaultLateWindow = 30 * time.Minute

// refusal is why an order cannot take a payment. payOrder shows err to the customer; a
// provider's confirmation is refunded instead, unless the order already tracks this very
// payment (tracked: a late payment whose refund is recorded).
type refusal struct {
	err     *seatflow.Error
	tracked bool
}

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

func refuse(code, msg string) *refusal { return &refusal{err: seatflow.Errorf(code, "%s", msg)} }

// PayOrder records the payment of a pending order and marks its seats sold: the client's
// own confirmation, accepted only from the test provider (with a real one it is FORBIDDEN:
// the provider confirms, through ApplyPaymentEvent). Paying again with the same paymentRef
// returns the paid order. A payment arriving after the hold expired first tries to take
// the same seats again; if another buyer has them it fails with ORDER_EXPIRED and the order
// is marked refundRequired. A retry of the payment that paid the order marks its seats sold
// if they are not yet (the first attempt's answer may have been lost after its commit).
func (s *Service) PayOrder(ctx context.Context, userID string, orderID int, paymentRef string) (*seatflow.Order, error) {
	if s.Provider == nil || !s.Provider.ConfirmedByClient() {
		return nil, seatflow.Errorf(seatflow.EFORBIDDEN, "payments are confirmed by the provider")
	}
	if paymentRef == "" || len(paymentRef) > maxPaymentRef {
		return nil, seatflow.Errorf(seatflow.EINVALID, "paymentRef must be 1 to %d characters", maxPaymentRef)
	}
	if err := seatflow.CheckKey(paymentRef); err != nil { // compared with the stored one
		return nil, seatflow.Errorf(seatflow.EINVALID, "paymentRef %v", err)
	}
	if err := s.rateLimit(ctx, "order", userID, s.OrderRate); err != nil {
		return nil, err
	}
	o, err := s.own(ctx, userID, orderID)
	if err != nil {
		return nil, err
	}
	if err := s.seatsReachable(ctx, o.ShowtimeID); err != nil {
		return nil, err
	}
	paid, err := s.pay(ctx, o.ID, settlement{provider: s.Provider.Name(), reference: paymentRef,
		amountCents: o.AmountCents, currency: o.Currency})
	if errors.Is(err, errAlreadyPaid) {
		// A retry of the payment that paid it: finish what that one may have left undone
		// (its answer lost after the commit, its seats still HELD), rather than leave the
		// seats to the reconciler's paid-seat repair.
		return s.confirmPaid(ctx, o.ID)
	}
	if errors.Is(err, errRefunding) {
		return nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "this payment is being refunded")
	}
	return paid, err
}

// pay applies a payment to an order: PAID and its seats sold, or, when the hold has
// expired, the late-payment rescue. It returns errAlreadyPaid, a *refusal, or errSeatsGone
// (wrapping ORDER_EXPIRED) when the order does not become paid by it.
func (s *Service) pay(ctx context.Context, orderID int, p settlement) (*seatflow.Order, error) {
	// Two rounds at most: a conditional update that lost a race is decided on a reload.
	for range 2 {
		o, err := s.DB.Order.Get(ctx, orderID)
		if err != nil {
			return nil, fmt.Errorf("pay order: %w", database.Classify(err))
		}
		now := s.Now.Now()
		switch {
		case o.Status == seatflow.OrderPaid && o.PaymentRef == p.reference:
			return nil, errAlreadyPaid
		case o.Status == seatflow.OrderPaid:
			return nil, refuse(seatflow.EINVALIDSTATE, "the order is already paid")
		case o.Status == seatflow.OrderCancelled:
			return nil, refuse(seatflow.EINVALIDSTATE, "the order was cancelled")
		case o.Status == seatflow.OrderExpired && o.RefundRequired:
			return nil, &refusal{err: expiredErr(), tracked: o.PaymentRef == p.reference}
		}
		st, err := s.Catalog.FreshShowtime(ctx, o.ShowtimeID)
		if err != nil {
			return nil, fmt.Errorf("pay order: %w", err)
		}
		if st.Status == seatflow.ShowtimeCancelled {
			// Its seats are not for sale any more, whatever the order's state.
			return nil, refuse(seatflow.EINVALIDSTATE, "the showtime was cancelled; the order cannot be paid")
		}
		if st.SalesEnded(now, s.SalesCloseAfter) {
			// The film is on: no payment takes seats any more, pending order or expired
			// one. It is recorded and refunded, and a pending order ends.
			return s.refundLate(ctx, o, p, lateSalesClosed)
		}
		if o.Status == seatflow.OrderExpired || !o.ExpiresAt.After(now) {
			paid, err := s.payLate(ctx, o, st, p)
			if errors.Is(err, errChanged) {
				continue
			}
			return paid, err
		}
		// Read before the commit: after it, the seats are confirmed without waiting for MySQL.
		lines, err := s.orderLines(ctx, o.ID, o.ShowtimeID)
		if err != nil {
			return nil, fmt.Errorf("pay order: %w", err)
		}
		seatIDs := lineSeats(lines)
		err = s.withTx(ctx, func(tx *ent.Tx) error {
			if err := p.claimIn(ctx, tx); err != nil {
				return err
			}
			n, err := tx.Order.Update().Where(order.ID(o.ID), order.StatusEQ(seatflow.OrderPending),
				order.HoldToken(o.HoldToken), order.ExpiresAtGT(now)).
				SetStatus(seatflow.OrderPaid).SetPaidAt(now).SetPaymentRef(p.reference).Save(ctx)
			if err != nil {
				return fmt.Errorf("mark paid: %w", err)
			} else if n == 0 {
				return errChanged
			}
			if err := s.issueIn(ctx, tx, o.ID, o.ShowtimeID, lines); err != nil {
				return err
			}
			_, err = s.recordPayment(ctx, tx, o.ID, p, seatflow.PaymentSucceeded, "")
			return err
		})
		if errors.Is(err, errChanged) {
			continue
		} else if err != nil {
			return nil, fmt.Errorf("pay order: %w", database.Classify(err))
		}
		return s.afterPaid(ctx, o.ID, o.ShowtimeID, o.HoldToken, seatIDs)
	}
	return nil, errChangedMeanwhile()
}

// afterPaid marks a paid order's seats sold, then reads the order back. The payment is
// committed, so a Redis failure here is not the customer's: the reconciler's paid-seat
// repair finishes the job. The seats go first: a MySQL slow enough to run past the
// request's deadline costs the answer (a retry returns the paid order), not the seats.
func (s *Service) afterPaid(ctx context.Context, orderID, showID int, token string, seatIDs []int) (*seatflow.Order, error) {
	ctx, cancel := detach(ctx) // the payment is committed: finish whatever the client does
	defer cancel()
	if n, err := s.Seats.Confirm(ctx, showID, token, seatIDs); err != nil {
		background.Failed(ctx, s.Log, background.ConfirmSeats, err, "order", orderID)
	} else if n < len(seatIDs) {
		background.Failed(ctx, s.Log, background.ConfirmSeats,
			fmt.Errorf("%d of the paid order's %d seats are sold to it in Redis", n, len(seatIDs)), "order", orderID)
	}
	s.dequeue(ctx, orderID)
	o, err := s.reload(ctx, orderID)
	if err == nil {
		s.spendPass(ctx, showID, o.UserID, o.CreatedAt)
	}
	return o, err
}

// confirmPaid marks a paid order's seats sold (again: Confirm is idempotent) and reads it back.
func (s *Service) confirmPaid(ctx context.Context, orderID int) (*seatflow.Order, error) {
	o, err := s.DB.Order.Get(ctx, orderID)
	if err != nil {
		return nil, fmt.Errorf("pay order: %w", database.Classify(err))
	}
	seatIDs, err := s.seatIDs(ctx, orderID)
	if err != nil {
		return nil, fmt.Errorf("pay order: %w", err)
	}
	return s.afterPaid(ctx, orderID, o.ShowtimeID, o.HoldToken, seatIDs)
}

func expiredErr() *seatflow.Error { return lateSeatsGone.err() }

func (l lateRefund) err() *seatflow.Error {
	return seatflow.Errorf(l.code, "%s", l.message)
}

var errChanged = errors.New("order changed meanwhile")

// payLate rescues a payment that arrived after the hold expired, within the late window
// and the purchase limit (the seats are held again as a hold would be, minus the gap
// rule: the customer chose them when they were free). The seats move to a fresh
// hold token (taking over the old token's seats if they are still held): the expiry path
// releases by the old token after its commit, and with a new token that late release
// cannot free the seats just paid for. The seats are taken inside the transaction, after
// its claim, so a second delivery of the same confirmation waits before touching them.
func (s *Service) payLate(ctx context.Context, o *ent.Order, st *seatflow.Showtime, p settlement) (*seatflow.Order, error) {
	if s.Now.Now().Sub(o.ExpiresAt) > s.LateWindow {
		return s.refundLate(ctx, o, p, lateTooLate)
	}
	layout, err := s.Layouts.Of(ctx, st.HallID)
	if err != nil {
		return nil, fmt.Errorf("pay order: load hall: %w", err)
	}
	lines, err := s.orderLines(ctx, o.ID, o.ShowtimeID)
	if err != nil {
		return nil, err
	}
	seatIDs := lineSeats(lines)
	token := uuid.NewString()
	ctx, cancel := detach(ctx) // a re-hold applied in Redis must reach MySQL or be released
	defer cancel()
	held := false
	// Not run again on a deadlock: the seats are taken in Redis inside it (the provider
	// delivers the payment again).
	err = s.withTx(ctx, func(tx *ent.Tx) error {
		if err := p.claimIn(ctx, tx); err != nil {
			return err
		}
		// First the order, which locks its row: another payment of the same order (another
		// PaymentIntent confirmed at the same moment) waits here until this one commits or
		// rolls back, then finds the order changed instead of taking its seats away and
		// giving up on it. Not if a concurrent late payment already gave up on it.
		n, err := tx.Order.Update().Where(order.ID(o.ID), order.HoldToken(o.HoldToken),
			order.StatusIn(seatflow.OrderPending, seatflow.OrderExpired), order.RefundRequired(false)).
			SetStatus(seatflow.OrderPaid).SetHoldToken(token).SetPaidAt(s.Now.Now()).SetPaymentRef(p.reference).Save(ctx)
		if err != nil {
			return fmt.Errorf("mark paid: %w", err)
		} else if n == 0 {
			return errChanged
		}
		// No gap rule: the customer had these seats and has paid for them. The limit holds:
		// the customer may have held others since, and a still-held seat of this order
		// (the take-over) is counted already.
		err = s.Seats.Hold(ctx, seats.HoldRequest{ShowtimeID: o.ShowtimeID, Layout: layout, SeatIDs: seatIDs,
			Token: token, UserID: o.UserID, Limit: st.PurchaseLimit, AllowGaps: true, TakeOver: o.HoldToken})
		switch seatflow.ErrorCode(err) {
		case "":
		case seatflow.ESEATSUNAVAILABLE:
			return errSeatsGone
		case seatflow.ELIMIT:
			return errOverLimit
		default:
			return err
		}
		held = true
		// Expiry deleted the occupancy; a still-pending order keeps its rows: rewrite them.
		if err := s.vacate(ctx, tx, o, nil); err != nil {
			return err
		}
		count, err := s.occupy(ctx, tx, o, seatIDs, false)
		if err != nil {
			return err
		}
		// Counted in MySQL too, as a hold is: Redis may have lost the customer's count.
		if checkLimit(st, count, len(seatIDs)) != nil {
			return errOverLimit
		}
		if err := s.issueIn(ctx, tx, o.ID, o.ShowtimeID, lines); err != nil {
			return err
		}
		_, err = s.recordPayment(ctx, tx, o.ID, p, seatflow.PaymentSucceeded, "")
		return err
	})
	if err != nil {
		if held {
			s.release(ctx, o.ShowtimeID, token, o.UserID, seatIDs)
		}
		switch {
		case errors.Is(err, errSeatsGone), ent.IsConstraintError(err): // MySQL has another active order on a seat
			return s.refundLate(ctx, o, p, lateSeatsGone)
		case errors.Is(err, errOverLimit):
			return s.refundLate(ctx, o, p, lateOverLimit)
		case errors.Is(err, errChanged): // paid or given up on meanwhile: pay decides again
			return nil, errChanged
		}
		return nil, fmt.Errorf("pay order late: %w", database.Classify(err))
	}
	return s.afterPaid(ctx, o.ID, o.ShowtimeID, token, seatIDs)
}

// refundLate ends an order whose late payment cannot have its seats (why: taken by
// someone else, over the purchase limit, past the late window, the showtime's sales
// closed). One transaction: the order EXPIRED (if it was still pending), refundRequired,
// and the payment recorded with its refund due; then the seats are released and the
// refund sent (the reconciler sends it if this does not).
func (s *Service) refundLate(ctx context.Context, o *ent.Order, p settlement, why lateRefund) (*seatflow.Order, error) {
	ended := false
	var paymentID int
	err := s.withTx(ctx, func(tx *ent.Tx) error {
		if err := p.claimIn(ctx, tx); err != nil {
			return err
		}
		if o.Status == seatflow.OrderPending {
			n, err := s.endIn(ctx, tx, o, seatflow.OrderExpired)
			if err != nil {
				return err
			}
			ended = n
		}
		n, err := tx.Order.Update().Where(order.ID(o.ID), order.StatusEQ(seatflow.OrderExpired), order.RefundRequired(false)).
			SetRefundRequired(true).SetPaymentRef(p.reference).Save(ctx)
		if err != nil {
			return fmt.Errorf("mark refund required: %w", err)
		} else if n == 0 {
			return errChanged
		}
		paymentID, err = s.recordPayment(ctx, tx, o.ID, p, seatflow.PaymentSucceeded, why.reason)
		return err
	})
	if errors.Is(err, errChanged) {
		// Paid, or given up on, by a concurrent payment of the same order: this one if it
		// was a retry of it; another one's outcome refuses this payment, which the caller
		// then records beside it and refunds (a confirmation) or shows (payOrder).
		now, err := s.DB.Order.Get(context.WithoutCancel(ctx), o.ID)
		switch {
		case err != nil:
			return nil, fmt.Errorf("mark refund required: %w", database.Classify(err))
		case now.Status == seatflow.OrderPaid && now.PaymentRef == p.reference:
			return s.reload(ctx, o.ID)
		case now.Status == seatflow.OrderPaid:
			return nil, refuse(seatflow.EINVALIDSTATE, "the order is already paid")
		}
		return nil, &refusal{err: why.err(), tracked: now.RefundRequired && now.PaymentRef == p.reference}
	} else if err != nil {
		return nil, fmt.Errorf("mark refund required: %w", database.Classify(err))
	}
	if ended {
		s.releaseEnded(ctx, o)
	}
	s.trySendRefund(ctx, paymentID)
	return nil, fmt.Errorf("%w: %w", errSeatsGone, why.err())
}
