package booking

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/seatblock"
	"seatflow/internal/database"
	"seatflow/internal/seats"
)

// maxIdempotencyKey is the column size of orders.idempotency_key.
const maxIdempotencyKey = 128

// HoldSeatsInput asks to hold seats of a showtime for the caller: SeatIDs (each an ADULT
// ticket) or Seats (each with its ticket type), exactly one of the two.
type HoldSeatsInput struct {
	ShowtimeID     int               `json:"showtimeId"`
	SeatIDs        []int             `json:"seatIds"`
	Seats          []SeatTicketInput `json:"seats"`
	IdempotencyKey string            `json:"idempotencyKey"`
	// UseBlocked lets the hold take BLOCKED house seats too (admins only: the resolver
	// refuses anyone else). The seats taken leave the house seats in the order's
	// transaction.
	UseBlocked *bool `json:"useBlocked"`
	// NeedsAccessible says the customer needs an accessible seat: only then are ACCESSIBLE
	// seats held while other seats are free.
	NeedsAccessible *bool `json:"needsAccessible"`
	// AdmissionPass is the caller's pass from the showtime's on-sale queue, needed while
	// the queue gates holds (NOT_ADMITTED without a valid one).
	AdmissionPass *string `json:"admissionPass"`
}

// useBlocked reports whether the hold may take blocked seats.
func (in HoldSeatsInput) useBlocked() bool { return in.UseBlocked != nil && *in.UseBlocked }

// SeatTicketInput is a seat to hold and the ticket type it is held as.
type SeatTicketInput struct {
	SeatID     int                 `json:"seatId"`
	TicketType seatflow.TicketType `json:"ticketType"`
}

// tickets are the seats asked for with their ticket types, SeatIDs being ADULT each.
func (in HoldSeatsInput) tickets() []SeatTicketInput {
	if in.Seats != nil {
		return in.Seats
	}
	out := make([]SeatTicketInput, len(in.SeatIDs))
	for i, id := range in.SeatIDs {
		out[i] = SeatTicketInput{SeatID: id, TicketType: seatflow.TicketAdult}
	}
	return out
}

// seatIDs are the seats asked for, in the order given.
func (in HoldSeatsInput) seatIDs() []int {
	if in.Seats == nil {
		return in.SeatIDs
	}
	out := make([]int, len(in.Seats))
	for i, t := range in.Seats {
		out[i] = t.SeatID
	}
	return out
}

// validate is the one check of a hold's input, before anything is marked or held.
func (in HoldSeatsInput) validate(userID string) error {
	ids := in.seatIDs()
	switch {
	case userID == "":
		return seatflow.Errorf(seatflow.EUNAUTHENTICATED, "sign in to hold seats")
	case (in.SeatIDs != nil) == (in.Seats != nil):
		return seatflow.Errorf(seatflow.EINVALID, "give either seatIds or seats: exactly one of the two")
	case len(ids) == 0:
		return seatflow.Errorf(seatflow.EINVALID, "choose at least one seat")
	case len(ids) > seatflow.MaxSeatsPerOrder:
		return seatflow.Errorf(seatflow.EINVALID, "at most %d seats per request", seatflow.MaxSeatsPerOrder)
	case in.IdempotencyKey == "" || len(in.IdempotencyKey) > maxIdempotencyKey:
		return seatflow.Errorf(seatflow.EINVALID, "idempotencyKey must be 1 to %d characters", maxIdempotencyKey)
	}
	// Refused rather than hashed: a key is looked up in Redis (its marker) and in MySQL (its
	// order's unique index), and only white space at the end compares otherwise in the two
	// (utf8mb4_bin pads); stored as sent, a key stays readable for support, and keys already
	// stored keep matching.
	if err := seatflow.CheckKey(in.IdempotencyKey); err != nil {
		return seatflow.Errorf(seatflow.EINVALID, "idempotencyKey %v: send the key as it is compared, byte for byte", err)
	}
	if IsOffer(in.IdempotencyKey) {
		return seatflow.Errorf(seatflow.EINVALID, "idempotencyKey may not start with %q: the waiting list's offers use it", offerKeyPrefix)
	}
	if err := seatflow.CheckSeatsOnce(ids); err != nil {
		return err
	}
	for _, t := range in.Seats {
		if !t.TicketType.Valid() {
			return seatflow.Errorf(seatflow.EINVALID, "unknown ticket type %q", t.TicketType)
		}
	}
	return nil
}

// HoldSeats holds seats of an on-sale showtime for the user and creates a pending order.
// The same idempotency key returns the user's first order with that key (whatever the
// rest of the input); a duplicate arriving while the first is in flight gets IN_PROGRESS.
// A failure after the seats were held releases them at once and is not remembered, so a
// retry really retries.
func (s *Service) HoldSeats(ctx context.Context, userID string, in HoldSeatsInput) (*seatflow.Order, error) {
	if err := in.validate(userID); err != nil {
		return nil, err
	}
	// Replays count too: each costs a look-up, and a client replaying in a loop is limited
	// like one holding in a loop.
	if err := s.rateLimit(ctx, "hold", userID, s.HoldRate); err != nil {
		return nil, err
	}
	first, err := s.markInFlight(ctx, userID, in.IdempotencyKey)
	if err != nil {
		return nil, err
	}
	if !first {
		return s.repeated(ctx, userID, in.IdempotencyKey)
	}
	o, err := s.hold(ctx, userID, in)
	// The marker's bookkeeping runs whatever became of the request, on a clean-up deadline
	// of its own from here.
	cleanup, cancel := cleanupContext(ctx)
	defer cancel()
	if err != nil {
		s.forget(cleanup, userID, in.IdempotencyKey)
		// An order with this key older than the marker's day may hold these very seats; only
		// a user who holds seats here can have one, so a rush of lost races costs no lookup.
		if code := seatflow.ErrorCode(err); code == seatflow.ESEATSUNAVAILABLE || code == seatflow.ELIMIT {
			if n, _ := s.Seats.Count(ctx, in.ShowtimeID, userID); n > 0 {
				if earlier, _ := s.byIdempotencyKey(ctx, userID, in.IdempotencyKey); earlier != nil {
					return earlier, nil
				}
			}
		}
		return nil, err
	}
	s.settle(cleanup, userID, in.IdempotencyKey, o)
	return o, nil
}

func (s *Service) hold(ctx context.Context, userID string, in HoldSeatsInput) (*seatflow.Order, error) {
	st, err := s.onSale(ctx, in.ShowtimeID)
	if err != nil {
		return nil, err
	}
	layout, err := s.Layouts.Of(ctx, st.HallID)
	if err != nil {
		return nil, fmt.Errorf("hold seats: load hall: %w", err)
	}
	lines, amount, err := priceLines(st, layout, in.tickets())
	if err != nil {
		return nil, err
	}
	seatIDs := in.seatIDs()

	token := uuid.NewString()
	req := seats.HoldRequest{ShowtimeID: st.ID, Layout: layout, SeatIDs: seatIDs, Token: token,
		UserID: userID, Limit: st.PurchaseLimit, AllowGaps: st.AllowSeatGaps, UseBlocked: in.useBlocked(),
		NeedsAccessible: in.NeedsAccessible != nil && *in.NeedsAccessible,
		Admission:       s.admission(st, userID, in.AdmissionPass)}
	// Not cancelled with the request: a hold applied in Redis must also reach MySQL or be
	// released below, whenever the client goes away (but by the request's deadline).
	ctx, cancel := detach(ctx)
	defer cancel()
	err = s.Seats.Hold(ctx, req)
	if errors.Is(err, seats.ErrNoSeatMap) {
		// The showtime is on sale but Redis lost its seats (a restart): rebuild them from
		// MySQL now rather than wait for the reconciler, then try once more.
		if _, initErr := s.Hashes.InitSeats(ctx, st.ID, st.HallID); initErr == nil {
			err = s.Seats.Hold(ctx, req)
		}
	}
	if err != nil {
		return nil, err
	}

	var created *ent.Order
	err = s.retryDeadlock(ctx, func(tx *ent.Tx) error {
		var err error
		created, err = s.createOrder(ctx, tx, st, newOrder{userID: userID, token: token, key: in.IdempotencyKey,
			lines: lines, amount: amount, ttl: s.HoldTTL})
		if err != nil {
			return err
		}
		if in.useBlocked() { // house seats taken by an admin's hold stop being house seats
			if _, err := tx.SeatBlock.Delete().Where(seatblock.ShowtimeID(st.ID), seatblock.SeatIDIn(seatIDs...)).Exec(ctx); err != nil {
				return fmt.Errorf("unblock held seats: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		// Give the seats back at once, even if the request was cancelled or its deadline
		// passed meanwhile.
		rctx, cancel := cleanupContext(ctx)
		s.release(rctx, st.ID, token, userID, seatIDs)
		var le *limitExceeded
		if errors.As(err, &le) {
			s.correctCount(rctx, st.ID, userID, le)
			cancel()
			return nil, le.err
		}
		cancel()
		if ent.IsConstraintError(err) { // the same key committed by a request whose marker expired
			if o, _ := s.byIdempotencyKey(ctx, userID, in.IdempotencyKey); o != nil {
				return o, nil
			}
		}
		return nil, fmt.Errorf("hold seats: %w", database.Classify(err))
	}
	return toOrder(created, lines), nil
}

// newOrder is a pending order to create over seats held in Redis under token.
type newOrder struct {
	userID, token, key string
	lines              []seatflow.OrderLine
	amount             int
	ttl                time.Duration // the hold's life from now
}

// createOrder creates o as a pending order of st inside tx, with its lines and occupancy,
// counts its seats in the user's purchase count and refuses it (limitExceeded) when that
// passes the showtime's limit. A hold's and a waiting-list offer's transaction.
func (s *Service) createOrder(ctx context.Context, tx *ent.Tx, st *seatflow.Showtime, o newOrder) (*ent.Order, error) {
	now := s.Now.Now()
	created, err := tx.Order.Create().SetUserID(o.userID).SetShowtimeID(st.ID).SetHoldToken(o.token).
		SetIdempotencyKey(o.key).SetStatus(seatflow.OrderPending).SetAmountCents(o.amount).
		SetCurrency(st.Currency).SetExpiresAt(now.Add(o.ttl)).SetCreatedAt(now).Save(ctx)
	if err != nil {
		return nil, fmt.Errorf("create order: %w", err)
	}
	lines := o.lines
	if err := tx.OrderSeat.MapCreateBulk(lines, func(c *ent.OrderSeatCreate, i int) {
		c.SetOrderID(created.ID).SetSeatID(lines[i].SeatID).SetTicketType(lines[i].TicketType).
			SetAmountCents(lines[i].AmountCents)
	}).Exec(ctx); err != nil {
		return nil, fmt.Errorf("create order seats: %w", err)
	}
	count, err := s.occupy(ctx, tx, created, lineSeats(lines), true)
	if err != nil {
		if database.Conflict(err) {
			return nil, seatflow.Errorf(seatflow.ESEATSUNAVAILABLE, "some of these seats were just taken")
		}
		return nil, err
	}
	// The limit counts seats, whatever their ticket types.
	return created, checkLimit(st, count, len(lines))
}

// priceLines prices each seat asked for at its (kind, ticket type) price: the order's
// lines in seat order and their sum. A seat of a kind the showtime sells to nobody is
// SEATS_UNAVAILABLE (as before ticket types); a kind sold, but not to that ticket type, is
// BAD_USER_INPUT naming the seat. Nothing is held before every seat has its price.
func priceLines(st *seatflow.Showtime, layout *seats.Layout, asked []SeatTicketInput) ([]seatflow.OrderLine, int, error) {
	lines := make([]seatflow.OrderLine, len(asked))
	amount := 0
	for i, t := range asked {
		kind, ok := layout.Kind(t.SeatID)
		if !ok {
			return nil, 0, seatflow.Errorf(seatflow.EINVALID, "seat %d is not in this showtime's hall", t.SeatID)
		}
		price, ok := st.PriceOf(kind, t.TicketType)
		if !ok {
			if !st.SellsKind(kind) {
				return nil, 0, seatflow.Errorf(seatflow.ESEATSUNAVAILABLE, "seat %d is not for sale at this showtime", t.SeatID)
			}
			return nil, 0, seatflow.Errorf(seatflow.EINVALID, "seat %s (%s) has no %s price at this showtime",
				layout.Label(t.SeatID), kind, t.TicketType)
		}
		lines[i] = seatflow.OrderLine{ShowtimeID: st.ID, SeatID: t.SeatID, TicketType: t.TicketType, AmountCents: price}
		amount += price
	}
	return sortLines(lines), amount, nil
}

// onSale is the showtime of a hold, read through the catalog's cache, once it is on sale
// and its sales are open. A closed sale still stops holds at once: the hold's transaction
// counts the seats only while MySQL has the showtime ON_SALE (occupy), in the statement
// that holds the showtime's row until the transaction ends, so a sale closed while a hold
// is under way refuses it, and a hold that committed did so before the sale closed. A
// refusal is read again from MySQL: a cache a moment behind (a sale opened on another
// instance) never refuses a hold that MySQL would take. Read from MySQL for every hold,
// the showtime was a seventh statement per hold, where the transaction has six.
func (s *Service) onSale(ctx context.Context, showID int) (*seatflow.Showtime, error) {
	st, err := s.Catalog.Showtime(ctx, showID)
	if err == nil && st.Status == seatflow.ShowtimeOnSale && s.salesClosed(st) == nil {
		return st, nil
	}
	if st, err = s.Catalog.FreshShowtime(ctx, showID); err != nil {
		return nil, err
	}
	if st.Status != seatflow.ShowtimeOnSale {
		return nil, errNotOnSale
	}
	// Its sales may have closed by themselves before the closer moved its status.
	if err := s.salesClosed(st); err != nil {
		return nil, err
	}
	return st, nil
}
