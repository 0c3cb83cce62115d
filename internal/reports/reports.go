// Package reports owns the sales reports (admin showtimeSales and salesReport): a
// showtime's seats sold, held and available, its revenue and refunds, its sales by ticket
// type and its check-ins, computed from MySQL as the orders are, with one aggregate
// statement per report whatever the number of showtimes. It reads; it never writes.
package reports

import (
	"context"
	"fmt"
	"strings"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/showtime"
	"seatflow/internal/database"
)

// Catalog lists the showtimes of a range of days (package catalog), each day counted in
// its showtime's cinema's time zone.
type Catalog interface {
	ShowtimesBetween(ctx context.Context, cinemaID *int, from, to string) ([]int, error)
}

// Service computes sales reports. Now is the clock that decides which holds have expired.
type Service struct {
	DB      *ent.Client
	Catalog Catalog
	Now     seatflow.ClockFunc
}

// ShowtimeSales is one showtime's report; an unknown showtime is NOT_FOUND.
func (s *Service) ShowtimeSales(ctx context.Context, showID int) (*seatflow.SalesReport, error) {
	ok, err := s.DB.Showtime.Query().Where(showtime.ID(showID)).Exist(ctx)
	if err != nil {
		return nil, fmt.Errorf("showtime sales: %w", database.Classify(err))
	} else if !ok {
		return nil, seatflow.Errorf(seatflow.ENOTFOUND, "showtime not found")
	}
	out, err := s.compute(ctx, []int{showID})
	if err != nil {
		return nil, err
	}
	return out[showID], nil
}

// SalesReport is the report of every showtime (of one cinema, or of all when cinemaID is
// nil) starting on the days from to to, both included, in start order. The range is at
// most seatflow.MaxReportDays days; a longer one, or to before from, is BAD_USER_INPUT.
func (s *Service) SalesReport(ctx context.Context, cinemaID *int, from, to string) ([]*seatflow.ShowtimeSales, error) {
	if err := checkRange(from, to); err != nil {
		return nil, err
	}
	ids, err := s.Catalog.ShowtimesBetween(ctx, cinemaID, from, to)
	if err != nil {
		return nil, err
	}
	reports, err := s.compute(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]*seatflow.ShowtimeSales, len(ids))
	for i, id := range ids {
		out[i] = &seatflow.ShowtimeSales{ShowtimeID: id, Sales: reports[id]}
	}
	return out, nil
}

// checkRange is the rule of a report's days: from to to, to not before from, at most
// seatflow.MaxReportDays days.
func checkRange(from, to string) error {
	first, err1 := time.Parse(time.DateOnly, from)
	last, err2 := time.Parse(time.DateOnly, to)
	switch {
	case err1 != nil || err2 != nil:
		return seatflow.Errorf(seatflow.EINVALID, "from and to are dates in the form YYYY-MM-DD")
	case last.Before(first):
		return seatflow.Errorf(seatflow.EINVALID, "to (%s) is before from (%s)", to, from)
	case last.Sub(first) >= seatflow.MaxReportDays*24*time.Hour:
		return seatflow.Errorf(seatflow.EINVALID, "a report covers at most %d days", seatflow.MaxReportDays)
	}
	return nil
}

// The measures of the report's one statement, its first column.
const (
	measureLines   = "lines"   // order lines by showtime, state (sold, held) and ticket type
	measureMoney   = "money"   // money received and refunded by showtime
	measureSeats   = "seats"   // sellable seats by showtime
	measureCheckIn = "checkin" // tickets checked in by showtime
	measureBlocked = "blocked" // house seats by showtime
)

// Line states of the statement, as it writes them (lines of orders in neither state are
// not read).
const (
	stateSold = "sold"
	stateHeld = "held"
)

// reportSQL is the one statement of a report: five aggregates over the showtimes IN (%s),
// each grouped by showtime, their rows told apart by the measure. Each part is an indexed
// read: orders by (showtime_id, status) with their lines by (order_id, seat_id) and their
// applied payment by (order_id, provider, reference); payments by order; seats by hall;
// tickets by (showtime_id, revoked_at); house seats by (showtime_id, seat_id).
//
// Lines' b counts those of orders that were waiting-list offers (an entry's order_id).
// A line is sold when it is not refunded, its order is PAID and the payment the order was
// settled with has no whole refund decided (a cancelled showtime's orders stay PAID while
// refunded); held when its order is PENDING_PAYMENT and its hold has not expired. Money
// counts the payments that took money (SUCCEEDED, MISMATCH); refunded what their refunds
// (by payment_id) return: the refunds of some seats, and a whole refund the rest.
const reportSQL = `
SELECT 'lines' AS measure, l.showtime_id, l.state, l.ticket_type, COUNT(*) AS n, COALESCE(SUM(l.amount_cents), 0) AS a,
  COALESCE(SUM(l.offered), 0) AS b
FROM (
  SELECT o.showtime_id AS showtime_id, l.ticket_type AS ticket_type, l.amount_cents AS amount_cents,
    CASE WHEN o.status = 'PAID' THEN 'sold' ELSE 'held' END AS state,
    CASE WHEN EXISTS (SELECT 1 FROM waitlist_entries w WHERE w.order_id = o.id) THEN 1 ELSE 0 END AS offered
  FROM orders o JOIN order_seats l ON l.order_id = o.id
  WHERE o.showtime_id IN (%[1]s) AND l.refunded_at IS NULL AND (
    (o.status = 'PAID' AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.order_id = o.id
      AND p.reference = o.payment_ref AND p.status IN ('SUCCEEDED', 'MISMATCH')
      AND EXISTS (SELECT 1 FROM refunds r WHERE r.payment_id = p.id AND r.whole)))
    OR (o.status = 'PENDING_PAYMENT' AND o.expires_at > ?))
) l
GROUP BY l.showtime_id, l.state, l.ticket_type
UNION ALL
SELECT 'money', o.showtime_id, '', '', COUNT(*), COALESCE(SUM(p.amount_cents), 0),
  COALESCE(SUM((SELECT COALESCE(SUM(r.amount_cents), 0) FROM refunds r WHERE r.payment_id = p.id)), 0)
FROM payments p JOIN orders o ON o.id = p.order_id
WHERE o.showtime_id IN (%[1]s) AND p.status IN ('SUCCEEDED', 'MISMATCH')
GROUP BY o.showtime_id
UNION ALL
SELECT 'seats', s.id, '', '', COUNT(*), 0, 0
FROM showtimes s JOIN seats t ON t.hall_id = s.hall_id
WHERE s.id IN (%[1]s) AND t.sellable
GROUP BY s.id
UNION ALL
SELECT 'checkin', k.showtime_id, '', '', COUNT(*), 0, 0
FROM tickets k
WHERE k.showtime_id IN (%[1]s) AND k.revoked_at IS NULL AND k.checked_in_at IS NOT NULL
GROUP BY k.showtime_id
UNION ALL
SELECT 'blocked', b.showtime_id, '', '', COUNT(*), 0, 0
FROM seat_blocks b
WHERE b.showtime_id IN (%[1]s)
GROUP BY b.showtime_id`

// compute reports on the showtimes ids with reportSQL, one statement.
func (s *Service) compute(ctx context.Context, ids []int) (map[int]*seatflow.SalesReport, error) {
	out := make(map[int]*seatflow.SalesReport, len(ids))
	for _, id := range ids {
		r := &seatflow.SalesReport{ByTicketType: make([]seatflow.TicketTypeSales, len(seatflow.TicketTypes))}
		for i, t := range seatflow.TicketTypes {
			r.ByTicketType[i].TicketType = t
		}
		out[id] = r
	}
	if len(ids) == 0 {
		return out, nil
	}
	in := "?" + strings.Repeat(", ?", len(ids)-1)
	var args []any
	for part := range 5 {
		for _, id := range ids {
			args = append(args, id)
		}
		if part == 0 {
			args = append(args, s.Now.Now())
		}
	}
	rows, err := s.DB.QueryContext(ctx, fmt.Sprintf(reportSQL, in), args...)
	if err != nil {
		return nil, fmt.Errorf("sales report: %w", database.Classify(err))
	}
	defer rows.Close()
	sellable := map[int]int{}
	for rows.Next() {
		var measure, state, typ string
		var showID, n, a, b int
		if err := rows.Scan(&measure, &showID, &state, &typ, &n, &a, &b); err != nil {
			return nil, fmt.Errorf("sales report: %w", database.Classify(err))
		}
		r := out[showID]
		if r == nil {
			continue
		}
		switch measure {
		case measureLines:
			switch state {
			case stateHeld:
				r.Held += n
			case stateSold:
				r.Sold += n
				r.SoldThroughWaitingList += b
				for i := range r.ByTicketType {
					if string(r.ByTicketType[i].TicketType) == typ {
						r.ByTicketType[i].Count += n
						r.ByTicketType[i].AmountCents += a
					}
				}
			}
		case measureMoney:
			r.RevenueCents, r.RefundedCents = a-b, b
		case measureSeats:
			sellable[showID] = n
		case measureCheckIn:
			r.CheckedIn = n
		case measureBlocked:
			r.Blocked = n
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sales report: %w", database.Classify(err))
	}
	for id, r := range out {
		r.Available = max(0, sellable[id]-r.Sold-r.Held-r.Blocked)
	}
	return out, nil
}
