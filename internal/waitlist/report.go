package waitlist

import (
	"context"
	"fmt"

	"seatflow"
	"seatflow/ent/order"
	"seatflow/ent/waitlistentry"
	"seatflow/internal/database"
	"seatflow/internal/reports"
)

// Report counts a showtime's waiting list: its entries by status, and the seats sold
// through its offers (paid, not refunded). NOT_FOUND for an unknown showtime.
func (s *Service) Report(ctx context.Context, showID int) (*seatflow.WaitlistReport, error) {
	if _, err := s.Catalog.FreshShowtime(ctx, showID); err != nil {
		return nil, err
	}
	rows, err := s.DB.WaitlistEntry.Query().Where(waitlistentry.ShowtimeID(showID)).
		Select(waitlistentry.FieldState, waitlistentry.FieldOrderID).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("waiting-list report: %w", database.Classify(err))
	}
	r := &seatflow.WaitlistReport{ShowtimeID: showID, Entries: len(rows)}
	var orderIDs []int
	for _, e := range rows {
		switch {
		case e.OrderID != nil:
			orderIDs = append(orderIDs, *e.OrderID)
		case e.State == waitlistentry.StateWAITING:
			r.Waiting++
		case e.State == waitlistentry.StateLEFT:
			r.Left++
		}
	}
	r.Offered = len(orderIDs)
	if len(orderIDs) == 0 {
		return r, nil
	}
	orders, err := s.DB.Order.Query().Where(order.IDIn(orderIDs...)).Select(order.FieldStatus).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("waiting-list report: offers: %w", database.Classify(err))
	}
	for _, o := range orders {
		switch seatflow.OfferStatus(o.Status) {
		case seatflow.WaitlistAccepted:
			r.Accepted++
		case seatflow.WaitlistDeclined:
			r.Declined++
		case seatflow.WaitlistExpired:
			r.Expired++
		}
	}
	sold, err := reports.SoldThroughOffers(ctx, s.DB, []int{showID})
	r.SeatsSold = sold[showID]
	return r, err
}

// Recount sets the showtime's count of waiting entries in Redis from MySQL (the
// reconciler's repair of a count lost or drifted) and reports whether it changed it.
func (s *Service) Recount(ctx context.Context, showID int) (bool, error) {
	n, err := s.DB.WaitlistEntry.Query().Where(waitlistentry.ShowtimeID(showID), waitlistentry.StateEQ(waitlistentry.StateWAITING)).Count(ctx)
	if err != nil {
		return false, fmt.Errorf("count waiting entries: %w", database.Classify(err))
	}
	had, _ := s.RDB.Get(ctx, s.Keys.Waitlist(showID)).Int()
	if had == n {
		return false, nil
	}
	if n == 0 {
		err = s.RDB.Del(ctx, s.Keys.Waitlist(showID)).Err()
	} else {
		err = s.RDB.Set(ctx, s.Keys.Waitlist(showID), n, 0).Err()
	}
	return err == nil, err
}
