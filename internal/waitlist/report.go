package waitlist

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/ent/order"
	"seatflow/ent/waitlistentry"
	"seatflow/internal/database"
	"seatflow/internal/rdb"
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
	sales, err := s.Sales.ShowtimeSales(ctx, showID)
	if err != nil {
		return nil, err
	}
	r.SeatsSold = sales.SoldThroughWaitingList
	return r, nil
}

// Recount sets the showtime's count of waiting entries in Redis from MySQL (the
// reconciler's repair of a count lost or drifted) and reports whether it changed it. The
// count is read before MySQL and written only if it still holds what was read (a
// compare-and-set): a join, leave or offer that changes it meanwhile wins, and the next
// run looks again. One whose commit the MySQL read saw but whose change of the count
// comes after the write leaves the count off by one until the next run.
func (s *Service) Recount(ctx context.Context, showID int) (bool, error) {
	key := s.Keys.Waitlist(showID)
	had, err := s.RDB.Get(ctx, key).Int()
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, rdb.Classify("read the waiting-list count", err)
	}
	n, err := s.DB.WaitlistEntry.Query().Where(waitlistentry.ShowtimeID(showID), waitlistentry.StateEQ(waitlistentry.StateWAITING)).Count(ctx)
	if err != nil {
		return false, fmt.Errorf("count waiting entries: %w", database.Classify(err))
	}
	if had == n {
		return false, nil
	}
	wrote, err := recountScript.Run(ctx, s.RDB, []string{key}, had, n).Int()
	if err != nil {
		return false, rdb.Classify("recount the waiting list", err)
	}
	return wrote == 1, nil
}

// recountScript sets KEYS[1] from ARGV[1] (a missing key reads 0) to ARGV[2] (0 deletes
// it) if it still holds ARGV[1]; it returns 1 when it wrote.
var recountScript = redis.NewScript(`
if tonumber(redis.call('GET', KEYS[1]) or '0') ~= tonumber(ARGV[1]) then return 0 end
if tonumber(ARGV[2]) <= 0 then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], ARGV[2]) end
return 1`)
