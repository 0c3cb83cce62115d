// Package tickets owns tickets and the door: the tickets of PAID orders (made and revoked
// inside booking's and the catalog's transactions), their signed codes and QR images, the
// keys that sign them, check-in (online and offline scans) and the live check-in count. It
// never changes an order, a payment or a seat; a ticket's admission is decided by MySQL
// alone (the conditional update of its row), never by Redis.
package tickets

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/order"
	"seatflow/ent/ticket"
	"seatflow/internal/database"
	"seatflow/internal/keys"
	"seatflow/internal/showfeed"
)

// Service is the tickets and the door of every showtime.
type Service struct {
	DB   *ent.Client
	Keys *Keyring
	// RDB and RedisKeys carry the admissions' announcements (one channel per showtime).
	RDB       redis.UniversalClient
	RedisKeys keys.Keys
	// Now is the clock; time.Now when nil.
	Now seatflow.ClockFunc
	Log *slog.Logger

	feeds      showfeed.Registry[*feed]
	announcing announcing
}

func (s *Service) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// IssueIn makes the tickets of an order that becomes PAID, one per seat, inside tx (the
// transaction that makes it PAID), signed with the current key. Tickets the order has
// already keep theirs (unique order and seat).
func (s *Service) IssueIn(ctx context.Context, tx *ent.Tx, orderID, showID int, lines []seatflow.OrderLine) error {
	return s.issue(ctx, tx.Client(), orderID, showID, lines, nil)
}

// issue makes the tickets through c (a transaction's client, or the service's own), each
// of its line's ticket type.
func (s *Service) issue(ctx context.Context, c *ent.Client, orderID, showID int, lines []seatflow.OrderLine, revokedAt *time.Time) error {
	if len(lines) == 0 {
		return nil
	}
	key, err := s.Keys.signing(ctx, c.TicketKey, false)
	if err != nil {
		return fmt.Errorf("issue tickets: %w", err)
	}
	now := s.Now.Now()
	bulk := make([]*ent.TicketCreate, len(lines))
	for i, l := range lines {
		revoked := revokedAt
		if l.Refunded() { // a seat refunded before its ticket was made
			revoked = l.RefundedAt
		}
		bulk[i] = c.Ticket.Create().SetOrderID(orderID).SetShowtimeID(showID).SetSeatID(l.SeatID).
			SetTicketType(l.TicketType).SetKeyID(key.id).SetCreatedAt(now).SetNillableRevokedAt(revoked)
	}
	if err := c.Ticket.CreateBulk(bulk...).OnConflictColumns(ticket.FieldOrderID, ticket.FieldSeatID).DoNothing().Exec(ctx); err != nil {
		return fmt.Errorf("issue tickets of order %d: %w", orderID, err)
	}
	return nil
}

// RevokeOrderIn revokes the tickets of an order inside tx (its refund's transaction).
func (s *Service) RevokeOrderIn(ctx context.Context, tx *ent.Tx, orderID int) error {
	_, err := tx.Ticket.Update().Where(ticket.OrderID(orderID), ticket.RevokedAtIsNil()).SetRevokedAt(s.Now.Now()).Save(ctx)
	if err != nil {
		return fmt.Errorf("revoke tickets of order %d: %w", orderID, err)
	}
	return nil
}

// RevokeSeatsIn revokes the tickets of some seats of an order inside tx (the transaction
// that refunds those seats), the order's other tickets staying valid. A ticket already
// checked in is not taken back: it returns the seats of such tickets and revokes nothing,
// and the caller ends its transaction. lock reads the tickets with a locking read (MySQL;
// the embedded SQLite runs one transaction at a time), so a check-in racing the refund
// waits for its end and then finds the ticket revoked.
func (s *Service) RevokeSeatsIn(ctx context.Context, tx *ent.Tx, orderID int, seatIDs []int, lock bool) (checkedIn []int, err error) {
	q := tx.Ticket.Query().Where(ticket.OrderID(orderID), ticket.SeatIDIn(seatIDs...))
	if lock {
		q = q.ForUpdate()
	}
	rows, err := q.All(ctx)
	if err != nil {
		return nil, fmt.Errorf("read tickets of order %d: %w", orderID, err)
	}
	for _, r := range rows {
		if r.CheckedInAt != nil && r.RevokedAt == nil {
			checkedIn = append(checkedIn, r.SeatID)
		}
	}
	if len(checkedIn) > 0 {
		return checkedIn, nil
	}
	_, err = tx.Ticket.Update().Where(ticket.OrderID(orderID), ticket.SeatIDIn(seatIDs...), ticket.RevokedAtIsNil()).
		SetRevokedAt(s.Now.Now()).Save(ctx)
	if err != nil {
		return nil, fmt.Errorf("revoke tickets of order %d: %w", orderID, err)
	}
	return nil, nil
}

// RevokeShowtimeIn revokes every ticket of a showtime inside tx (its cancellation's).
func (s *Service) RevokeShowtimeIn(ctx context.Context, tx *ent.Tx, showID int) error {
	_, err := tx.Ticket.Update().Where(ticket.ShowtimeID(showID), ticket.RevokedAtIsNil()).SetRevokedAt(s.Now.Now()).Save(ctx)
	if err != nil {
		return fmt.Errorf("revoke tickets of showtime %d: %w", showID, err)
	}
	return nil
}

// OfOrder returns the tickets of an order, one per seat in seat order: none unless it is
// PAID. A PAID order without its tickets (paid before tickets existed) gets them now,
// revoked at once if its showtime was cancelled.
func (s *Service) OfOrder(ctx context.Context, o *seatflow.Order, showtimeCancelled bool) ([]*seatflow.Ticket, error) {
	if o.Status != seatflow.OrderPaid {
		return []*seatflow.Ticket{}, nil
	}
	rows, err := s.DB.Ticket.Query().Where(ticket.OrderID(o.ID)).Order(ent.Asc(ticket.FieldSeatID)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("tickets of order %d: %w", o.ID, database.Classify(err))
	}
	if len(rows) < len(o.SeatIDs) {
		var revoked *time.Time
		if showtimeCancelled {
			now := s.Now.Now()
			revoked = &now
		}
		if err := s.issue(ctx, s.DB, o.ID, o.ShowtimeID, o.Lines, revoked); err != nil {
			return nil, database.Classify(err)
		}
		return s.OfOrder(ctx, o, false)
	}
	out := make([]*seatflow.Ticket, len(rows))
	for i, r := range rows {
		out[i] = toTicket(r, o.UserID)
	}
	return out, nil
}

// Ticket returns a ticket with its customer, nil when there is none.
func (s *Service) Ticket(ctx context.Context, id int) (*seatflow.Ticket, error) {
	r, err := s.DB.Ticket.Get(ctx, id)
	if ent.IsNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("load ticket: %w", database.Classify(err))
	}
	user, err := s.DB.Order.Query().Where(order.ID(r.OrderID)).Select(order.FieldUserID).String(ctx)
	if err != nil {
		return nil, fmt.Errorf("load ticket's order: %w", database.Classify(err))
	}
	return toTicket(r, user), nil
}

// Code returns ticket t's code for showtime st (its own), signed with the ticket's key.
func (s *Service) Code(ctx context.Context, t *seatflow.Ticket, st *seatflow.Showtime) (string, error) {
	key, err := s.Keys.byID(ctx, t.KeyID)
	if err != nil {
		return "", err
	}
	return sign(key, t, st)
}

// Revoked returns a showtime's revoked tickets, revoked at or after since (all when nil),
// oldest first: the revocation list of offline scanners.
func (s *Service) Revoked(ctx context.Context, showID int, since *time.Time) ([]seatflow.RevokedTicket, error) {
	q := s.DB.Ticket.Query().Where(ticket.ShowtimeID(showID), ticket.RevokedAtNotNil())
	if since != nil {
		q = q.Where(ticket.RevokedAtGTE(*since))
	}
	rows, err := q.Order(ent.Asc(ticket.FieldRevokedAt), ent.Asc(ticket.FieldID)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("revoked tickets: %w", database.Classify(err))
	}
	out := make([]seatflow.RevokedTicket, len(rows))
	for i, r := range rows {
		out[i] = seatflow.RevokedTicket{TicketID: r.ID, RevokedAt: *r.RevokedAt}
	}
	return out, nil
}

func toTicket(r *ent.Ticket, userID string) *seatflow.Ticket {
	t := &seatflow.Ticket{ID: r.ID, OrderID: r.OrderID, ShowtimeID: r.ShowtimeID, SeatID: r.SeatID, TicketType: r.TicketType, KeyID: r.KeyID,
		CreatedAt: r.CreatedAt, CheckedInAt: r.CheckedInAt, RevokedAt: r.RevokedAt, UserID: userID}
	if r.CheckInNonce != nil {
		t.CheckInNonce = *r.CheckInNonce
	}
	return t
}
