package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow"

	"seatflow/ent"
	"seatflow/ent/order"
	"seatflow/ent/orderseat"
	"seatflow/ent/showtime"
	"seatflow/ent/waitlistentry"
	"seatflow/internal/seats"
)

// Violation is one broken invariant, described for a person.
type Violation struct {
	ShowtimeID int
	Message    string
}

func (v Violation) String() string { return fmt.Sprintf("showtime %d: %s", v.ShowtimeID, v.Message) }

// Verify checks the invariants that must hold whenever no request is in flight:
//   - no seat belongs to two active (PENDING_PAYMENT or PAID) orders, and every active
//     order's seats not refunded are in seat_occupancy under that order, its refunded
//     seats are not, and its amount is the sum of its lines not refunded;
//   - for every showtime on sale or closed, Redis equals MySQL: a seat of a pending order
//     is held by its token, a seat of a paid order is sold to its token, a seat with a
//     block row (a house seat) is BLOCKED, every other sellable seat is free; no seat of
//     an active order has a block row;
//   - each user's count in Redis equals the seats of their active orders;
//   - each user's purchase count in MySQL (their purchase_counts row, 0 when missing)
//     equals their seat_occupancies rows for the showtime;
//   - the waiting list (docs/DESIGN.md "Waiting list"): a free seat may be returned to it
//     ("4|MS") for DefaultReturnedGrace at most, after which it should have been offered
//     or put on sale; the showtime's count of waiting entries in Redis equals MySQL's
//     entries WAITING; a WAITING entry has no offer's order and an OFFERED one has one
//     (an offer's seats are its pending order's, checked with every pending order's).
//
// It returns every violation it finds (none means the stores agree).
func Verify(ctx context.Context, db *ent.Client, store *seats.Store) ([]Violation, error) {
	var out []Violation
	active, err := db.Order.Query().Where(order.StatusIn(seatflow.OrderPending, seatflow.OrderPaid)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("verify: orders: %w", err)
	}
	byID := make(map[int]*ent.Order, len(active))
	ids := make([]int, 0, len(active))
	for _, o := range active {
		byID[o.ID] = o
		ids = append(ids, o.ID)
	}
	seatRows, err := db.OrderSeat.Query().Where(orderseat.OrderIDIn(ids...)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("verify: order seats: %w", err)
	}
	occRows, err := db.SeatOccupancy.Query().WithOrder(func(q *ent.OrderQuery) { q.Select(order.FieldUserID) }).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("verify: occupancy: %w", err)
	}
	type seatKey struct{ show, seat int }
	owner := map[seatKey]*ent.Order{}
	refunded := map[seatKey]int{} // a refunded seat of an active order: the order
	amount := map[int]int{}       // an active order's lines not refunded, summed
	for _, r := range seatRows {
		o := byID[r.OrderID]
		k := seatKey{o.ShowtimeID, r.SeatID}
		if r.RefundedAt != nil {
			refunded[k] = o.ID
			continue
		}
		if r.AmountCents != nil {
			amount[o.ID] += *r.AmountCents
		}
		if prev := owner[k]; prev != nil {
			out = append(out, Violation{o.ShowtimeID, fmt.Sprintf("seat %d is in active orders %d and %d", r.SeatID, prev.ID, o.ID)})
			continue
		}
		owner[k] = o
	}
	occupied := map[seatKey]int{}
	for _, r := range occRows {
		occupied[seatKey{r.ShowtimeID, r.SeatID}] = r.OrderID
		if byID[r.OrderID] == nil {
			out = append(out, Violation{r.ShowtimeID, fmt.Sprintf("seat %d is occupied by order %d, which is not active", r.SeatID, r.OrderID)})
		}
	}
	for k, o := range owner {
		if occupied[k] != o.ID {
			out = append(out, Violation{k.show, fmt.Sprintf("seat %d of active order %d has no occupancy row", k.seat, o.ID)})
		}
	}
	for k, orderID := range refunded {
		if occupied[k] == orderID {
			out = append(out, Violation{k.show, fmt.Sprintf("seat %d was refunded but is still occupied by order %d", k.seat, orderID)})
		}
	}
	for _, o := range active {
		if got, ok := amount[o.ID]; ok && got != o.AmountCents {
			out = append(out, Violation{o.ShowtimeID, fmt.Sprintf("order %d's amount is %d, its lines not refunded add up to %d", o.ID, o.AmountCents, got)})
		}
	}

	shows, err := db.Showtime.Query().Where(showtime.StatusIn(seatflow.ShowtimeOnSale, seatflow.ShowtimeClosed)).
		WithHall(func(q *ent.HallQuery) { q.WithSeats() }).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("verify: showtimes: %w", err)
	}
	blockRows, err := db.SeatBlock.Query().All(ctx)
	if err != nil {
		return nil, fmt.Errorf("verify: blocked seats: %w", err)
	}
	blocked := map[seatKey]bool{}
	for _, b := range blockRows {
		blocked[seatKey{b.ShowtimeID, b.SeatID}] = true
	}
	waiting, vs, err := verifyEntries(ctx, db)
	if err != nil {
		return nil, err
	}
	out = append(out, vs...)
	// A seat's return time is Redis' clock (delta.lua's returnedOrFree): its age is too.
	now, err := store.RDB.Time(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("verify: Redis' clock: %w", err)
	}
	for _, sh := range shows {
		states, _, err := store.States(ctx, sh.ID)
		if err != nil {
			return nil, fmt.Errorf("verify: seats of showtime %d: %w", sh.ID, err)
		}
		if len(states) == 0 {
			out = append(out, Violation{sh.ID, "has no seat hash in Redis"})
			continue
		}
		counts := map[string]int{}
		for _, seat := range sh.Edges.Hall.Edges.Seats {
			st, inHash := states[seat.ID]
			if !seat.Sellable {
				if inHash {
					out = append(out, Violation{sh.ID, fmt.Sprintf("unsellable seat %d is in the seat hash", seat.ID)})
				}
				continue
			}
			o := owner[seatKey{sh.ID, seat.ID}]
			want := seats.State{Status: seatflow.SeatAvailable}
			if blocked[seatKey{sh.ID, seat.ID}] {
				want.Status = seatflow.SeatBlocked
				if o != nil {
					out = append(out, Violation{sh.ID, fmt.Sprintf("seat %d is blocked in MySQL but in active order %d", seat.ID, o.ID)})
				}
			}
			if o != nil {
				counts[o.UserID]++
				want = seats.State{Status: seatflow.SeatHeld, Token: o.HoldToken}
				if o.Status == seatflow.OrderPaid {
					want.Status = seatflow.SeatSold
				}
			}
			if inHash && st.Returned && want.Status == seatflow.SeatAvailable {
				// Returned to the waiting list: fine while its offer may still be on its way.
				if age := now.Sub(st.HeldAt); age > DefaultReturnedGrace {
					out = append(out, Violation{sh.ID, fmt.Sprintf("seat %d was returned to the waiting list %s ago and is neither offered nor on sale",
						seat.ID, age.Round(time.Millisecond))})
				}
				continue
			}
			if !inHash || st.Status != want.Status || st.Token != want.Token {
				out = append(out, Violation{sh.ID, fmt.Sprintf("seat %d is %s in Redis but %s in MySQL", seat.ID, describe(st, inHash), describe(want, true))})
			}
		}
		listed, err := store.RDB.Get(ctx, store.Keys.Waitlist(sh.ID)).Int()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("verify: waiting-list count of showtime %d: %w", sh.ID, err)
		}
		if listed != waiting[sh.ID] {
			out = append(out, Violation{sh.ID, fmt.Sprintf("the waiting list counts %d entries waiting in Redis but %d in MySQL", listed, waiting[sh.ID])})
		}
		limits, err := store.Counts(ctx, sh.ID)
		if err != nil {
			return nil, fmt.Errorf("verify: counts of showtime %d: %w", sh.ID, err)
		}
		users := map[string]bool{}
		for u := range limits {
			users[u] = true
		}
		for u := range counts {
			users[u] = true
		}
		names := make([]string, 0, len(users))
		for u := range users {
			names = append(names, u)
		}
		sort.Strings(names)
		for _, u := range names {
			if limits[u] != counts[u] {
				out = append(out, Violation{sh.ID, fmt.Sprintf("user %s counts %d seats in Redis but has %d active", strconv.Quote(u), limits[u], counts[u])})
			}
			if sh.PurchaseLimit > 0 && counts[u] > sh.PurchaseLimit {
				out = append(out, Violation{sh.ID, fmt.Sprintf("user %s has %d active seats, over the purchase limit of %d", strconv.Quote(u), counts[u], sh.PurchaseLimit)})
			}
		}
	}
	vs, err = verifyPurchaseCounts(ctx, db, shows, occRows)
	if err != nil {
		return nil, err
	}
	out = append(out, vs...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].ShowtimeID < out[j].ShowtimeID })
	return out, nil
}

// verifyEntries counts each showtime's waiting entries and reports the entries whose
// offer does not match their state: WAITING with an order, OFFERED without one.
func verifyEntries(ctx context.Context, db *ent.Client) (map[int]int, []Violation, error) {
	rows, err := db.WaitlistEntry.Query().Where(waitlistentry.StateIn(waitlistentry.StateWAITING, waitlistentry.StateOFFERED)).
		Select(waitlistentry.FieldShowtimeID, waitlistentry.FieldState, waitlistentry.FieldOrderID).All(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("verify: waiting-list entries: %w", err)
	}
	waiting := map[int]int{}
	var out []Violation
	for _, e := range rows {
		switch {
		case e.State == waitlistentry.StateWAITING && e.OrderID != nil:
			out = append(out, Violation{e.ShowtimeID, fmt.Sprintf("waiting-list entry %d is WAITING but has the offer's order %d", e.ID, *e.OrderID)})
		case e.State == waitlistentry.StateWAITING:
			waiting[e.ShowtimeID]++
		case e.OrderID == nil:
			out = append(out, Violation{e.ShowtimeID, fmt.Sprintf("waiting-list entry %d is OFFERED without an order", e.ID)})
		}
	}
	return waiting, out, nil
}

// verifyPurchaseCounts reports every customer of the showtimes whose purchase count in
// MySQL differs from their occupancy rows (occRows, with their orders' users), the rule
// of internal/booking/limit.go. A missing row counts 0 seats.
func verifyPurchaseCounts(ctx context.Context, db *ent.Client, shows []*ent.Showtime, occRows []*ent.SeatOccupancy) ([]Violation, error) {
	type key struct {
		show int
		user string
	}
	checked := make(map[int]bool, len(shows))
	for _, sh := range shows {
		checked[sh.ID] = true
	}
	rows, err := db.PurchaseCount.Query().All(ctx)
	if err != nil {
		return nil, fmt.Errorf("verify: purchase counts: %w", err)
	}
	counted := map[key]int{}
	for _, r := range rows {
		if checked[r.ShowtimeID] {
			counted[key{r.ShowtimeID, r.UserID}] = r.Seats
		}
	}
	occupied := map[key]int{}
	for _, r := range occRows {
		k := key{r.ShowtimeID, r.Edges.Order.UserID}
		occupied[k]++
		if _, ok := counted[k]; !ok && checked[k.show] {
			counted[k] = 0
		}
	}
	keys := make([]key, 0, len(counted))
	for k := range counted {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int { return cmp.Or(cmp.Compare(a.show, b.show), strings.Compare(a.user, b.user)) })
	var out []Violation
	for _, k := range keys {
		if counted[k] != occupied[k] {
			out = append(out, Violation{k.show, fmt.Sprintf("user %s's purchase count in MySQL is %d, their orders occupy %d seats",
				strconv.Quote(k.user), counted[k], occupied[k])})
		}
	}
	return out, nil
}

func describe(s seats.State, present bool) string {
	if !present {
		return "missing"
	}
	if s.Token == "" {
		return string(s.Status)
	}
	return string(s.Status) + " by " + s.Token
}
