package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow/ent"
	"seatflow/ent/order"
	"seatflow/ent/reconcilerun"
	"seatflow/ent/showtime"
	"seatflow/internal/booking"
	"seatflow/internal/keys"
	"seatflow/internal/redislock"
	"seatflow/internal/seats"
)

// ErrBusy is returned by RunOnce when another run (on any instance) holds the reconcile
// lock; the caller logs it and skips this round.
var ErrBusy = errors.New("reconcile: another run is in progress")

// Defaults for a zero Config field.
const (
	DefaultBatch        = 500
	DefaultGrace        = 2 * time.Minute
	DefaultExpiryBuffer = time.Minute
	DefaultLockTTL      = time.Minute
)

// showPage is how many showtime ids one query of the scan reads.
const showPage = 100

// Config tunes a Reconciler; zero fields take the defaults above.
type Config struct {
	// Batch bounds every repair kind per run (orders expired, seats fixed, hashes rebuilt,
	// counts set) and the showtimes one run scans, so a run is bounded in time and memory
	// whatever the backlog (memory: one showtime's seats and active orders at a time). A
	// backlog of N items of one kind converges in ceil(N/Batch) runs, plus one when the
	// scan starts past part of it (see Reconciler): with the default 500 and a run every
	// 30 s, 5,000 drifted seats take 10–11 runs, about 5 minutes.
	Batch int
	// Grace is how old an orphan hold must be before it is released. It must exceed any
	// hold→commit time of holdSeats: a younger hold may be on its way to MySQL.
	Grace time.Duration
	// ExpiryBuffer is how long after expires_at a pending order is left to the expiry
	// worker before the scan expires it.
	ExpiryBuffer time.Duration
	// LockTTL is the life of the run lock, and so the longest a run may take.
	LockTTL time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Log receives one line per run that repaired something and every error;
	// slog.Default when nil.
	Log *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Batch <= 0 {
		c.Batch = DefaultBatch
	}
	if c.Grace <= 0 {
		c.Grace = DefaultGrace
	}
	if c.ExpiryBuffer <= 0 {
		c.ExpiryBuffer = DefaultExpiryBuffer
	}
	if c.LockTTL <= 0 {
		c.LockTTL = DefaultLockTTL
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	return c
}

// Reconciler repairs drift between Redis seat state and MySQL orders, one bounded run at a
// time across all instances (DESIGN.md "Reconciler").
//
// Showtimes (ON_SALE and CLOSED) are scanned in id order from a cursor kept in the
// Reconciler: a run continues where the previous run of this instance stopped, goes to
// the end, and the run after that starts again from the first id. A showtime whose repairs
// did not fit in a run's budget is visited again first by the next run. Instances keep
// their own cursors (the lock lets one work at a time); each still sweeps every showtime.
type Reconciler struct {
	DB      *ent.Client
	Seats   *seats.Store
	Booking *booking.Service
	RDB     redis.UniversalClient
	Keys    keys.Keys
	Config

	mu     sync.Mutex
	cursor int // last showtime id fully reconciled; 0 = start from the first
}

// RunOnce runs every repair once, each bounded by Batch, and returns what it repaired. It
// returns ErrBusy when another run holds the lock. A run that repaired something is
// stored (see Runs) and logged in one line; on an error the partial report is returned
// with it.
func (r *Reconciler) RunOnce(ctx context.Context) (*Report, error) {
	c := r.Config.withDefaults()
	lock, ok, err := redislock.TryAcquire(ctx, r.RDB, r.Keys.ReconcileLock(), c.LockTTL)
	if err != nil {
		runsTotal.WithLabelValues("error").Inc()
		return nil, fmt.Errorf("reconcile: take lock: %w", err)
	}
	if !ok {
		runsTotal.WithLabelValues("busy").Inc()
		return nil, ErrBusy
	}
	defer lock.Release(context.WithoutCancel(ctx))
	r.mu.Lock()
	defer r.mu.Unlock()

	// A run never outlives its lock, or two could overlap.
	runCtx, cancel := context.WithTimeout(ctx, c.LockTTL)
	defer cancel()
	x := &run{r: r, c: c, now: c.Now(), touched: map[int]bool{}, left: map[string]int{}}
	for _, k := range []string{kindExpired, kindPaidSeats, kindHashes, kindOrphanHolds, kindSoldOrphans, kindLimits} {
		x.left[k] = c.Batch
	}
	x.rep.StartedAt = x.now
	err = x.expireOrders(runCtx)
	if err == nil {
		err = x.scanShowtimes(runCtx)
	}
	finished := c.Now()
	x.rep.FinishedAt = &finished
	for id := range x.touched {
		x.rep.ShowtimeIDs = append(x.rep.ShowtimeIDs, id)
	}
	slices.Sort(x.rep.ShowtimeIDs)
	if x.rep.repaired() {
		if serr := r.store(context.WithoutCancel(ctx), &x.rep); serr != nil {
			err = errors.Join(err, serr)
		}
		c.Log.Info("reconcile: repaired drift", "expiredCancelled", x.rep.ExpiredCancelled,
			"paidSeatsFixed", x.rep.PaidSeatsFixed, "hashesRebuilt", x.rep.HashesRebuilt,
			"orphanHoldsReleased", x.rep.OrphanHoldsReleased, "soldOrphansReleased", x.rep.SoldOrphansReleased,
			"limitsRecounted", x.rep.LimitsRecounted, "showtimes", x.rep.ShowtimeIDs)
	}
	if err != nil {
		runsTotal.WithLabelValues("error").Inc()
		return &x.rep, fmt.Errorf("reconcile: %w", err)
	}
	runsTotal.WithLabelValues("ok").Inc()
	return &x.rep, nil
}

// Run calls RunOnce now and then every interval until ctx ends. Every instance runs one;
// the lock makes one of them do the work each round.
func (r *Reconciler) Run(ctx context.Context, every time.Duration) {
	log := r.Config.withDefaults().Log
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		_, err := r.RunOnce(ctx)
		switch {
		case errors.Is(err, ErrBusy):
			log.Debug("reconcile: skipped, another instance is running")
		case err != nil && ctx.Err() == nil:
			log.Error("reconcile: run failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Runs returns the stored runs (those that repaired something), newest first, at most
// first of them.
func (r *Reconciler) Runs(ctx context.Context, first int) ([]*Report, error) {
	if first <= 0 || first > 1000 {
		first = 1000
	}
	rows, err := r.DB.ReconcileRun.Query().
		Order(ent.Desc(reconcilerun.FieldStartedAt), ent.Desc(reconcilerun.FieldID)).Limit(first).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("reconcile runs: %w", err)
	}
	out := make([]*Report, len(rows))
	for i, row := range rows {
		finished := row.FinishedAt
		out[i] = &Report{StartedAt: row.StartedAt, FinishedAt: &finished, ExpiredCancelled: row.ExpiredCancelled,
			PaidSeatsFixed: row.PaidSeatsFixed, HashesRebuilt: row.HashesRebuilt, OrphanHoldsReleased: row.OrphanHoldsReleased,
			SoldOrphansReleased: row.SoldOrphansReleased, LimitsRecounted: row.LimitsRecounted, ShowtimeIDs: row.Showtimes}
	}
	return out, nil
}

func (r *Reconciler) store(ctx context.Context, rep *Report) error {
	err := r.DB.ReconcileRun.Create().SetStartedAt(rep.StartedAt).SetFinishedAt(*rep.FinishedAt).
		SetExpiredCancelled(rep.ExpiredCancelled).SetPaidSeatsFixed(rep.PaidSeatsFixed).
		SetHashesRebuilt(rep.HashesRebuilt).SetOrphanHoldsReleased(rep.OrphanHoldsReleased).
		SetSoldOrphansReleased(rep.SoldOrphansReleased).SetLimitsRecounted(rep.LimitsRecounted).
		SetShowtimes(rep.ShowtimeIDs).Exec(ctx)
	if err != nil {
		return fmt.Errorf("store run: %w", err)
	}
	return nil
}

// run is the state of one RunOnce: the report, what is left of each repair's budget, and
// whether a showtime had more drift than fitted (then the scan stops there).
type run struct {
	r         *Reconciler
	c         Config
	now       time.Time
	rep       Report
	left      map[string]int
	truncated bool
	touched   map[int]bool
}

// take reserves up to want items of kind's budget and returns how many it got; getting
// fewer marks the run truncated.
func (x *run) take(kind string, want int) int {
	n := min(want, x.left[kind])
	if n < want {
		x.truncated = true
	}
	x.left[kind] -= n
	return n
}

// done counts n repairs of kind on a showtime (budget already taken by take).
func (x *run) done(kind string, n, showID int) {
	if n <= 0 {
		return
	}
	repairsTotal.WithLabelValues(kind).Add(float64(n))
	x.touched[showID] = true
	switch kind {
	case kindExpired:
		x.rep.ExpiredCancelled += n
	case kindPaidSeats:
		x.rep.PaidSeatsFixed += n
	case kindHashes:
		x.rep.HashesRebuilt += n
	case kindOrphanHolds:
		x.rep.OrphanHoldsReleased += n
	case kindSoldOrphans:
		x.rep.SoldOrphansReleased += n
	case kindLimits:
		x.rep.LimitsRecounted += n
	}
}

// expireOrders is repair 1: pending orders past expires_at + ExpiryBuffer (their expiry
// enqueue was lost, or the worker is down) are expired through booking's normal path,
// which frees their seats and gives the user's count back. At most Batch per run, oldest
// first.
func (x *run) expireOrders(ctx context.Context) error {
	due, err := x.r.DB.Order.Query().
		Where(order.StatusEQ(order.StatusPENDING_PAYMENT), order.ExpiresAtLT(x.now.Add(-x.c.ExpiryBuffer))).
		Order(ent.Asc(order.FieldExpiresAt), ent.Asc(order.FieldID)).Limit(x.left[kindExpired]).
		Select(order.FieldID, order.FieldShowtimeID).All(ctx)
	if err != nil {
		return fmt.Errorf("expired orders: %w", err)
	}
	x.left[kindExpired] -= len(due)
	for _, o := range due {
		ok, err := x.r.Booking.Expire(ctx, o.ID)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			x.c.Log.Error("reconcile: expire order", "order", o.ID, "err", err)
			continue
		}
		if ok {
			x.done(kindExpired, 1, o.ShowtimeID)
		}
	}
	return nil
}

// scanShowtimes runs repairs 2–6 on ON_SALE and CLOSED showtimes from the cursor on, at
// most Batch showtimes, stopping at the first showtime with more drift than the budgets
// left (the next run starts there).
func (x *run) scanShowtimes(ctx context.Context) error {
	r := x.r
	after := r.cursor
	defer func() { r.cursor = after }()
	for visited := 0; visited < x.c.Batch; {
		want := min(showPage, x.c.Batch-visited)
		page, err := r.DB.Showtime.Query().
			Where(showtime.StatusIn(showtime.StatusON_SALE, showtime.StatusCLOSED), showtime.IDGT(after)).
			Order(ent.Asc(showtime.FieldID)).Limit(want).Select(showtime.FieldID, showtime.FieldHallID).All(ctx)
		if err != nil {
			return fmt.Errorf("showtimes: %w", err)
		}
		for _, sh := range page {
			if err := x.showtime(ctx, sh.ID, sh.HallID); err != nil {
				return fmt.Errorf("showtime %d: %w", sh.ID, err)
			}
			if x.truncated {
				after = sh.ID - 1
				return nil
			}
			after = sh.ID
			visited++
		}
		if len(page) < want {
			after = 0 // reached the end: the next run starts from the first showtime
			return nil
		}
	}
	return nil
}

// active is what MySQL says about one hold token of a showtime: its order is pending or
// paid and covers these seats.
type active struct {
	userID string
	paid   bool
	seats  []int
}

// showtime reconciles one showtime: repair 3 (rebuild a missing hash, under the show lock
// InitSeats takes), then, holding the same lock, repairs 2, 4, 5 and 6 against one
// reading of Redis followed by one of MySQL. Redis is read first, on purpose: a seat
// sold in Redis was paid in MySQL before, so the later MySQL read always sees that order.
func (x *run) showtime(ctx context.Context, showID, hallID int) error {
	r := x.r
	exists, err := r.Seats.Exists(ctx, showID)
	if err != nil {
		return err
	}
	if !exists {
		if x.take(kindHashes, 1) == 0 {
			return nil
		}
		built, err := r.Booking.InitSeats(ctx, showID, hallID)
		if err != nil {
			return fmt.Errorf("rebuild seat hash: %w", err)
		}
		if built {
			x.done(kindHashes, 1, showID)
		}
	}

	lock, err := r.Booking.LockShow(ctx, showID)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		x.c.Log.Warn("reconcile: showtime stays locked, skipped this run", "showtime", showID, "err", err)
		return nil
	}
	defer lock.Release(context.WithoutCancel(ctx))

	states, counts, tokens, err := x.read(ctx, showID)
	if err != nil || len(states) == 0 {
		return err // no hash: it was lost again after the rebuild, the next run rebuilds it
	}
	fixed := 0
	for _, repair := range []func(context.Context, int, map[int]seats.State, map[string]*active) (int, error){
		x.fixPaidSeats, x.releaseOrphanHolds, x.releaseSoldOrphans,
	} {
		n, err := repair(ctx, showID, states, tokens)
		if err != nil {
			return err
		}
		fixed += n
	}
	if fixed > 0 { // the seats changed: count against a fresh reading
		if states, counts, tokens, err = x.read(ctx, showID); err != nil {
			return err
		}
	}
	return x.recountLimits(ctx, showID, states, counts, tokens)
}

// read takes one reading of a showtime: seats and counts from Redis, then the active
// orders' tokens from MySQL.
func (x *run) read(ctx context.Context, showID int) (map[int]seats.State, map[string]int, map[string]*active, error) {
	states, counts, err := x.r.Seats.Audit(ctx, showID)
	if err != nil {
		return nil, nil, nil, err
	}
	occ, err := x.r.Booking.ActiveOccupancy(ctx, showID)
	if err != nil {
		return nil, nil, nil, err
	}
	tokens := map[string]*active{}
	for _, o := range occ {
		a := tokens[o.Token]
		if a == nil {
			a = &active{userID: o.UserID, paid: o.Sold}
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
			case ok && st.Status == seats.StatusSold && st.Token == token:
			case ok && st.Status == seats.StatusHeld && st.Token == token:
				held = append(held, id)
			case ok && st.Status == seats.StatusAvailable:
				free = append(free, id)
			case ok:
				x.conflict(showID, strconv.Itoa(id), token, st.Status+" by "+st.Token)
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

// conflict reports a seat of a paid order that another token has in Redis: a double
// sale for a person to resolve (refund one buyer). It is never resolved by taking the seat.
func (x *run) conflict(showID int, seatID, paidToken, redisState string) {
	x.c.Log.Error("reconcile: paid seat taken by another token in Redis (double sale), left alone",
		"showtime", showID, "seat", seatID, "paidToken", paidToken, "redis", redisState)
	x.rep.PaidSeatConflicts++
	paidSeatConflictsTotal.Inc()
}

// byToken groups the seats in state status whose token pick accepts.
func byToken(states map[int]seats.State, status string, pick func(seats.State) bool) map[string][]int {
	out := map[string][]int{}
	for id, st := range states {
		if st.Status == status && pick(st) {
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
// Counts are left to recountLimits (the orphan's user is unknown).
func (x *run) releaseOrphanHolds(ctx context.Context, showID int, states map[int]seats.State, tokens map[string]*active) (int, error) {
	cutoff := x.now.Add(-x.c.Grace)
	orphans := byToken(states, seats.StatusHeld, func(st seats.State) bool {
		return st.Token != "" && tokens[st.Token] == nil && st.HeldAt.Before(cutoff)
	})
	return x.release(ctx, showID, kindOrphanHolds, orphans)
}

// releaseSoldOrphans is repair 5: seats sold to a token no paid order has are freed. No
// grace is needed: a seat becomes sold only after its order's PAID commit, which the
// MySQL read (made after the Redis read) sees.
func (x *run) releaseSoldOrphans(ctx context.Context, showID int, states map[int]seats.State, tokens map[string]*active) (int, error) {
	orphans := byToken(states, seats.StatusSold, func(st seats.State) bool {
		a := tokens[st.Token]
		return a == nil || !a.paid
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
		if st.Status == seats.StatusHeld && tokens[st.Token] == nil && !st.HeldAt.Before(cutoff) {
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
