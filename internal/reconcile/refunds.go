package reconcile

import (
	"context"
	"fmt"

	"entgo.io/ent/dialect/sql"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/order"
	"seatflow/ent/payment"
	"seatflow/ent/predicate"
	"seatflow/ent/refund"
	"seatflow/ent/showtime"
)

// retryRefunds sends the money that should go back and has not (after the seat repairs).
// Paid orders of a cancelled showtime get their refund; refunds (a payment's whole refund,
// of any payment of an order: the one that paid it and any other it could not take, or
// the refund of some seats, refundSeats) made due but never sent (a crash after the
// commit, the provider unreachable) or reported failed by the provider are sent again
// once RefundGrace old (a younger one is being sent by its request). At most RefundBatch
// per run, each through booking. Last, it counts the refunds still unconfirmed, so the
// report shows money not yet returned even when nothing could be done about it.
func (x *run) retryRefunds(ctx context.Context) error {
	owed, err := x.r.DB.Order.Query().
		Where(order.StatusEQ(seatflow.OrderPaid), inCancelledShowtime(),
			order.HasPaymentsWith(payment.StatusEQ(seatflow.PaymentSucceeded), noWholeRefund())).
		Order(ent.Asc(order.FieldID)).Limit(x.left[kindRefunds]).Select(order.FieldID, order.FieldShowtimeID).All(ctx)
	if err != nil {
		return fmt.Errorf("orders of cancelled showtimes: %w", err)
	}
	for _, o := range owed {
		x.send(ctx, o.ID, o.ShowtimeID, x.r.Orders.RefundCancelledShowtime)
	}
	due, err := x.r.DB.Refund.Query().
		Where(refund.StatusIn(seatflow.RefundRequired, seatflow.RefundFailed),
			refund.AttemptsLT(seatflow.MaxRefundAttempts), refund.UpdatedAtLT(x.now.Add(-x.c.RefundGrace))).
		Order(ent.Asc(refund.FieldID)).Limit(max(x.left[kindRefunds], 0)).
		WithOrder(func(q *ent.OrderQuery) { q.Select(order.FieldShowtimeID) }).All(ctx)
	if err != nil {
		return fmt.Errorf("due refunds: %w", err)
	}
	for _, r := range due {
		if x.left[kindRefunds] <= 0 {
			break
		}
		x.send(ctx, r.ID, r.Edges.Order.ShowtimeID, x.r.Orders.SendRefund)
	}
	unconfirmed := []seatflow.RefundStatus{seatflow.RefundRequired, seatflow.RefundPending, seatflow.RefundFailed}
	n, err := x.r.DB.Refund.Query().Where(refund.StatusIn(unconfirmed...)).Count(ctx)
	if err != nil {
		return fmt.Errorf("outstanding refunds: %w", err)
	}
	x.rep.RefundsOutstanding = n
	return nil
}

// noWholeRefund matches payments with no whole refund decided (no refunds row of theirs
// with whole set).
func noWholeRefund() predicate.Payment {
	return func(s *sql.Selector) {
		r := sql.Table(refund.Table)
		s.Where(sql.NotExists(sql.Select(r.C(refund.FieldID)).From(r).
			Where(sql.And(sql.ColumnsEQ(r.C(refund.FieldPaymentID), s.C(payment.FieldID)), sql.EQ(r.C(refund.FieldWhole), true)))))
	}
}

// send sends one refund through booking (id: the order's, or the refund's, as
// sendRefund takes it) and counts it when the provider took it; a failure is logged and
// left to the next run.
func (x *run) send(ctx context.Context, id, showID int, sendRefund func(context.Context, int) (bool, error)) {
	x.left[kindRefunds]--
	sent, err := sendRefund(ctx, id)
	if err != nil {
		x.c.Log.Error("reconcile: refund not sent", "id", id, "err", err)
	}
	if sent {
		x.done(kindRefunds, 1, showID)
	}
}

// inCancelledShowtime matches orders whose showtime is CANCELLED (orders have no edge to
// their showtime: a subquery).
func inCancelledShowtime() func(*sql.Selector) {
	return func(s *sql.Selector) {
		s.Where(sql.In(s.C(order.FieldShowtimeID),
			sql.Select(showtime.FieldID).From(sql.Table(showtime.Table)).
				Where(sql.EQ(showtime.FieldStatus, string(seatflow.ShowtimeCancelled)))))
	}
}
