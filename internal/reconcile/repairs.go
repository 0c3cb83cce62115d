package reconcile

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/internal/seats"
)

// active is what MySQL says about one hold token of a showtime: its order is pending or
// paid and covers these seats.
type active struct {
	userID  string
	paid    bool
	seats   []int
	created time.Time // the order's creation: a re-held seat is held since then
}

// showtime reconciles one showtime: repair 3 (rebuild a missing hash, under the show lock
// InitSeats takes), then, holding the same lock, repair 9 (the purchase counts, MySQL
// alone, so it runs even when the hash is lost again) and repairs 2, 7, 4, 5, 8 and 6
// against one reading of Redis followed by one of MySQL. Redis is read first, on purpose:
// a seat sold in Redis was paid in MySQL before, so the later MySQL read always sees that
// order. Last, with the lock released (an offer is a hold, which takes no show lock but
// must not wait behind one), the waiting list's repairs 10 and 11 (waitlist.go).
func (x *run) showtime(ctx context.Context, sh *ent.Showtime) error {
	states, err := x.seatRepairs(ctx, sh)
	if err != nil {
		return err
	}
	return x.waitlist(ctx, sh.ID, states)
}

// seatRepairs is showtime's repairs 3, 9, 2, 7, 4, 5, 8 and 6; it returns the last reading
// of the seats (nil when the showtime was skipped or its hash is missing).
func (x *run) seatRepairs(ctx context.Context, sh *ent.Showtime) (map[int]seats.State, error) {
	showID, hallID := sh.ID, sh.HallID
	r := x.r
	exists, err := r.Seats.Exists(ctx, showID)
	if err != nil {
		return nil, err
	}
	if !exists {
		if x.take(kindHashes, 1) == 0 {
			return nil, nil
		}
		built, err := r.Sales.InitSeats(ctx, showID, hallID)
		if err != nil {
			return nil, fmt.Errorf("rebuild seat hash: %w", err)
		}
		if built {
			x.done(kindHashes, 1, showID)
		}
	}

	lock, err := r.Sales.LockShow(ctx, showID)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		x.c.Log.Warn("reconcile: showtime stays locked, skipped this run", "showtime", showID, "err", err)
		return nil, nil
	}
	defer lock.Release(context.WithoutCancel(ctx))

	if err := x.recountPurchases(ctx, showID); err != nil {
		return nil, err
	}
	states, counts, tokens, err := x.read(ctx, showID)
	if err != nil || len(states) == 0 {
		return nil, err // no hash: it was lost again after the rebuild, the next run rebuilds it
	}
	fixed := 0
	for _, repair := range []func(context.Context, int, map[int]seats.State, map[string]*active) (int, error){
		x.fixPaidSeats, x.reholdPendingSeats, x.releaseOrphanHolds, x.releaseSoldOrphans,
	} {
		n, err := repair(ctx, showID, states, tokens)
		if err != nil {
			return nil, err
		}
		fixed += n
	}
	if fixed > 0 { // the seats changed: count against a fresh reading
		if states, counts, tokens, err = x.read(ctx, showID); err != nil {
			return nil, err
		}
	}
	if err := x.repairBlocks(ctx, showID, states, tokens); err != nil {
		return nil, err
	}
	x.reportOverLimit(sh, tokens)
	return states, x.recountLimits(ctx, showID, states, counts, tokens)
}

// reportOverLimit reports the users whose pending and paid orders of the showtime hold
// more seats than its purchase limit: nothing SeatFlow does puts a user there (holds and
// late payments are checked in Redis), so one means a bug or a manual change. Nothing is
// repaired: which order to cancel is a person's call.
func (x *run) reportOverLimit(sh *ent.Showtime, tokens map[string]*active) {
	if sh.PurchaseLimit <= 0 {
		return
	}
	seatsOf := map[string]int{}
	for _, a := range tokens {
		seatsOf[a.userID] += len(a.seats)
	}
	for _, u := range sortedKeys(seatsOf) {
		if seatsOf[u] > sh.PurchaseLimit {
			x.rep.UsersOverLimit++
			usersOverLimitTotal.Inc()
			x.c.Log.Error("reconcile: a user holds or bought more seats than the purchase limit",
				"showtime", sh.ID, "user", u, "seats", seatsOf[u], "limit", sh.PurchaseLimit)
		}
	}
}

// read takes one reading of a showtime: seats and counts from Redis, then the active
// orders' tokens from MySQL.
func (x *run) read(ctx context.Context, showID int) (map[int]seats.State, map[string]int, map[string]*active, error) {
	states, counts, err := x.r.Seats.Audit(ctx, showID)
	if err != nil {
		return nil, nil, nil, err
	}
	occ, err := x.r.Sales.ActiveOccupancy(ctx, showID)
	if err != nil {
		return nil, nil, nil, err
	}
	tokens := map[string]*active{}
	for _, o := range occ {
		a := tokens[o.Token]
		if a == nil {
			a = &active{userID: o.UserID, paid: o.Sold, created: o.HeldAt}
			tokens[o.Token] = a
		}
		a.seats = append(a.seats, o.SeatID)
	}
	return states, counts, tokens, nil
}

// sortedKeys returns the keys of m in order, so repairs run in a repeatable order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// fixPaidSeats is repair 2: a paid order's seats must be sold to its token. Seats still
// held by the token (confirm never ran) are confirmed; free ones (lost, or released by a
// late expiry) are restored. A seat held or sold by another token is a double sale in
// Redis: it is logged as an error and counted, never taken from its holder.
func (x *run) fixPaidSeats(ctx context.Context, showID int, states map[int]seats.State, tokens map[string]*active) (int, error) {
	fixed := 0
	for _, token := range sortedKeys(tokens) {
		a := tokens[token]
		if !a.paid {
			continue
		}
		var held, free []int
		for _, id := range a.seats {
			st, ok := states[id]
			switch {
			case ok && st.Status == seatflow.SeatSold && st.Token == token:
			case ok && st.Status == seatflow.SeatHeld && st.Token == token:
				held = append(held, id)
			case ok && (st.Status == seatflow.SeatAvailable || st.Returned):
				// A seat returned to the waiting list is nobody's in Redis: the order has it.
				free = append(free, id)
			case ok && st.Status == seatflow.SeatBlocked:
				// A house seat over a paid seat: the order wins, repairBlocks frees the seat
				// and the next run restores it.
			case ok:
				x.conflict(showID, strconv.Itoa(id), token, string(st.Status)+" by "+st.Token)
			default:
				x.conflict(showID, strconv.Itoa(id), token, "missing from the seat hash")
			}
		}
		held = held[:x.take(kindPaidSeats, len(held))]
		n, err := x.r.Seats.Confirm(ctx, showID, token, held)
		if err != nil {
			return fixed, err
		}
		x.left[kindPaidSeats] += len(held) - n // budget is spent on repairs made only
		x.done(kindPaidSeats, n, showID)
		fixed += n

		free = free[:x.take(kindPaidSeats, len(free))]
		n, conflicts, err := x.r.Seats.Restore(ctx, showID, token, a.userID, free)
		if err != nil {
			return fixed, err
		}
		x.left[kindPaidSeats] += len(free) - n
		for _, seatID := range conflicts { // taken between our reading and the script
			x.conflict(showID, seatID, token, "taken since the reading")
		}
		x.done(kindPaidSeats, n, showID)
		fixed += n
	}
	return fixed, nil
}

// reholdPendingSeats is repair 7: a pending order's seats that Redis shows free (or
// returned to the waiting list, nobody's in Redis either) are held
// for its token again (held since the order was created, as a rebuilt hash holds them),
// and the watchers are told by the script's delta. Redis lost between holdSeats' script
// and its order's commit leaves exactly that: a hash rebuilt from MySQL in between shows
// the seats free, and only MySQL's unique occupancy stops a second buyer from taking them.
// Seats another token has in Redis are left alone: that token is a hold whose order
// cannot commit (the occupancy is taken), released by repair 4, and the next run re-holds.
func (x *run) reholdPendingSeats(ctx context.Context, showID int, states map[int]seats.State, tokens map[string]*active) (int, error) {
	fixed := 0
	for _, token := range sortedKeys(tokens) {
		a := tokens[token]
		if a.paid {
			continue
		}
		var free []int
		for _, id := range a.seats {
			if st, ok := states[id]; ok && (st.Status == seatflow.SeatAvailable || st.Returned) {
				free = append(free, id)
			}
		}
		free = free[:x.take(kindPendingSeats, len(free))]
		n, others, err := x.r.Seats.Rehold(ctx, showID, token, a.userID, a.created, free)
		if err != nil {
			return fixed, err
		}
		x.left[kindPendingSeats] += len(free) - n
		if len(others) > 0 {
			x.c.Log.Warn("reconcile: seats of a pending order taken by another token since the reading, left for the next run",
				"showtime", showID, "token", token, "seats", others)
		}
		x.done(kindPendingSeats, n, showID)
		fixed += n
	}
	return fixed, nil
}

// conflict reports a seat of a paid order that another token has in Redis: a double
// sale for a person to resolve (refund one buyer). It is never resolved by taking the seat.
func (x *run) conflict(showID int, seatID, paidToken, redisState string) {
	x.c.Log.Error("reconcile: paid seat taken by another token in Redis (double sale), left alone",
		"showtime", showID, "seat", seatID, "paidToken", paidToken, "redis", redisState)
	x.rep.PaidSeatConflicts++
	paidSeatConflictsTotal.Inc()
}

// byToken groups by token the seats in state status that pick accepts.
func byToken(states map[int]seats.State, status seatflow.SeatStatus, pick func(int, seats.State) bool) map[string][]int {
	out := map[string][]int{}
	for id, st := range states {
		if st.Status == status && pick(id, st) {
			out[st.Token] = append(out[st.Token], id)
		}
	}
	for _, ids := range out {
		slices.Sort(ids)
	}
	return out
}

// releaseOrphanHolds is repair 4: seats held by a token no pending or paid order has
// (holdSeats died between the hold and the order commit, or a release was lost) are
// freed, but only when held longer ago than Grace: a younger hold may be about to commit.
// Seats returned to the waiting list have no token and are not orphans (repair 11).
// Counts are left to recountLimits (the orphan's user is unknown).
func (x *run) releaseOrphanHolds(ctx context.Context, showID int, states map[int]seats.State, tokens map[string]*active) (int, error) {
	cutoff := x.now.Add(-x.c.Grace)
	orphans := byToken(states, seatflow.SeatHeld, func(_ int, st seats.State) bool {
		return st.Token != "" && tokens[st.Token] == nil && st.HeldAt.Before(cutoff)
	})
	return x.release(ctx, showID, kindOrphanHolds, orphans)
}

// releaseSoldOrphans is repair 5: seats sold to a token no paid order has, or to one whose
// paid order no longer occupies them (refunded seats whose release was lost), are freed.
// No grace is needed: a seat becomes sold only after its order's PAID commit, and a seat
// stops being a paid order's only by a commit, both of which the MySQL read (made after
// the Redis read) sees.
func (x *run) releaseSoldOrphans(ctx context.Context, showID int, states map[int]seats.State, tokens map[string]*active) (int, error) {
	orphans := byToken(states, seatflow.SeatSold, func(id int, st seats.State) bool {
		a := tokens[st.Token]
		return a == nil || !a.paid || !slices.Contains(a.seats, id)
	})
	return x.release(ctx, showID, kindSoldOrphans, orphans)
}

func (x *run) release(ctx context.Context, showID int, kind string, orphans map[string][]int) (int, error) {
	freed := 0
	for _, token := range sortedKeys(orphans) {
		ids := orphans[token]
		ids = ids[:x.take(kind, len(ids))]
		if len(ids) == 0 {
			break
		}
		n, err := x.r.Seats.Release(ctx, showID, token, "", ids)
		if err != nil {
			return freed, err
		}
		x.left[kind] += len(ids) - n
		x.done(kind, n, showID)
		freed += n
	}
	return freed, nil
}

// recountLimits is repair 6: each user's count must equal the seats of their pending and
// paid orders. Only users whose count differs are written, each with a compare-and-set
// (seats.Store.Recount), so a hold or release racing the recount wins and the next run
// looks again. While a young hold without an order is in flight its user is unknown and
// its count cannot be judged, so the showtime's counts wait for the next run.
func (x *run) recountLimits(ctx context.Context, showID int, states map[int]seats.State, counts map[string]int, tokens map[string]*active) error {
	cutoff := x.now.Add(-x.c.Grace)
	for _, st := range states {
		// A seat returned to the waiting list is in nobody's count: not a hold in flight.
		if st.Status == seatflow.SeatHeld && !st.Returned && tokens[st.Token] == nil && !st.HeldAt.Before(cutoff) {
			return nil // a hold in flight: its user's count is unknown until it commits
		}
	}
	want := map[string]int{}
	for _, a := range tokens {
		want[a.userID] += len(a.seats)
	}
	users := sortedKeys(counts)
	for _, u := range sortedKeys(want) {
		if _, ok := counts[u]; !ok {
			users = append(users, u)
		}
	}
	for _, u := range users {
		if counts[u] == want[u] {
			continue
		}
		if x.take(kindLimits, 1) == 0 {
			return nil
		}
		ok, err := x.r.Seats.Recount(ctx, showID, u, counts[u], want[u])
		if err != nil {
			return err
		}
		if ok {
			x.done(kindLimits, 1, showID)
		} else {
			x.left[kindLimits]++
		}
	}
	return nil
}
