package booking

import (
	"context"
	"fmt"

	"seatflow"
	"seatflow/ent/order"
	"seatflow/internal/database"
)

// ExpireAtSalesClose ends the pending orders of the showtimes whose sales have closed by
// themselves (SalesCloseAfter after their start): EXPIRED at once, their seats freed, as
// at the end of their hold. No payment could take them any more (pay refunds it), so no
// customer is left counting down to a payment that cannot be taken. A paid order stays
// paid. It reports how many orders it ended; every end is a conditional update, so
// instances running it at once, or a payment arriving meanwhile, end no order twice. The
// sales closer (package sales) calls it after closing the showtimes due.
func (s *Service) ExpireAtSalesClose(ctx context.Context) (int, error) {
	// Pending orders are few (holds of the last minutes): their showtimes are the ones
	// to look at, read from MySQL.
	showIDs, err := s.DB.Order.Query().Where(order.StatusEQ(seatflow.OrderPending)).Unique(true).
		Select(order.FieldShowtimeID).Ints(ctx)
	if err != nil {
		return 0, fmt.Errorf("expire at sales close: %w", database.Classify(err))
	}
	ended := 0
	for _, showID := range showIDs {
		st, err := s.Catalog.FreshShowtime(ctx, showID)
		if err != nil {
			return ended, fmt.Errorf("expire at sales close: %w", err)
		}
		if !st.SalesEnded(s.Now.Now(), s.SalesCloseAfter) {
			continue
		}
		pending, err := s.DB.Order.Query().Where(order.ShowtimeID(showID), order.StatusEQ(seatflow.OrderPending)).All(ctx)
		if err != nil {
			return ended, fmt.Errorf("expire at sales close: %w", database.Classify(err))
		}
		for _, o := range pending {
			done, err := s.finish(ctx, o, seatflow.OrderExpired)
			if err != nil {
				return ended, err
			}
			if done {
				ended++
			}
		}
	}
	return ended, nil
}
