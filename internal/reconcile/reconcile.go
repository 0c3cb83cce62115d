package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/reconcilerun"
	"seatflow/internal/background"
	"seatflow/internal/keys"
	"seatflow/internal/redislock"
	"seatflow/internal/seats"
)

// Sales is what the reconciler needs of package sales: the seat-hash rebuild, the
// showtime lock it shares with it, and the seats active orders occupy.
type Sales interface {
	InitSeats(ctx context.Context, showID, hallID int) (bool, error)
	LockShow(ctx context.Context, showID int) (*redislock.Lock, error)
	ActiveOccupancy(ctx context.Context, showID int) ([]seats.Occupancy, error)
	// Blocked lists a showtime's house seats as MySQL records them; DropBlocks deletes
	// the block rows of some of its seats.
	Blocked(ctx context.Context, showID int) ([]int, error)
	DropBlocks(ctx context.Context, showID int, seatIDs []int) error
}

// Orders is what the reconciler needs of package booking: expiring an order, and the two
// ways a refund gets sent again (a due refund, a payment's whole refund or the refund of
// some seats; a cancelled showtime's order).
type Orders interface {
	Expire(ctx context.Context, orderID int) (bool, error)
	SendRefund(ctx context.Context, refundID int) (bool, error)
	RefundCancelledShowtime(ctx context.Context, orderID int) (bool, error)
}

// Waitlist is what the reconciler needs of package waitlist: the showtime's count of
// waiting entries in Redis set from MySQL when it drifted (Recount, a compare-and-set that
// loses to a join or offer racing it), and the seats returned to its waiting list offered
// now, or put on sale when no waiting entry fits them (OfferReturned).
type Waitlist interface {
	Recount(ctx context.Context, showID int) (bool, error)
	OfferReturned(ctx context.Context, showID int) (int, error)
}

// ErrBusy is returned by RunOnce when another run (on any instance) holds the reconcile
// lock; the scheduler skips this round, a caller of runReconcile sees IN_PROGRESS.
var ErrBusy = seatflow.Errorf(seatflow.EINPROGRESS, "a reconciler run is already in progress; try again shortly")

// Defaults for a zero Config field.
const (
	DefaultBatch        = 500
	DefaultGrace        = 2 * time.Minute
	DefaultExpiryBuffer = time.Minute
	DefaultLockTTL      = time.Minute
	DefaultRefundBatch  = 20
	DefaultRefundGrace  = time.Minute
	// DefaultReturnedGrace: the offerer sweeps every showtime with entries waiting each
	// second, so a seat returned to the list and still unoffered after 5 s was missed (its
	// instance died, or nobody waits any more and no sweep visits it).
	DefaultReturnedGrace = 5 * time.Second
)

// showPage is how many showtime ids one query of the scan reads.
const showPage = 100

// Config tunes a Reconciler; zero fields take the defaults above.
type Config struct {
	// Batch bounds every repair kind per run (orders expired, seats fixed, hashes rebuilt,
	// counts set in Redis and in MySQL) and the showtimes one run scans, so a run is bounded in time and memory
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
	// RefundBatch bounds the refunds one run sends: each is a call to the payment provider,
	// and the run must end within LockTTL.
	RefundBatch int
	// RefundGrace is how long a due refund is left to the request that made it due (which
	// sends it at once) before a run sends it.
	RefundGrace time.Duration
	// ReturnedGrace is how long a seat may stay returned to a showtime's waiting list
	// ("4|MS") before a run asks the waiting list to offer it (DefaultReturnedGrace),
	// measured on Redis' clock, which stamped its return.
	ReturnedGrace time.Duration
	// Now is the clock; time.Now when nil.
	Now seatflow.ClockFunc
	// Log receives one line per run that repaired something and every error;
	// slog.Default when nil.
	Log *slog.Logger
	// EmptyAtStart says the seat Redis starts empty at every start (embedded mode's
	// in-process Redis): the seat hashes built until the scan has gone through every
	// showtime once are the expected start-up work, logged at INFO as built seat maps,
	// not as drift.
	EmptyAtStart bool
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
	if c.RefundBatch <= 0 {
		c.RefundBatch = DefaultRefundBatch
	}
	if c.RefundGrace <= 0 {
		c.RefundGrace = DefaultRefundGrace
	}
	if c.ReturnedGrace <= 0 {
		c.ReturnedGrace = DefaultReturnedGrace
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	return c
}

// Reconciler repairs drift between Redis seat state and MySQL orders, one bounded run at a
// time across all instances (docs/DESIGN.md "Reconciler").
//
// Showtimes (ON_SALE and CLOSED) are scanned in id order from a cursor kept in the
// Reconciler: a run continues where the previous run of this instance stopped, goes to
// the end, and the run after that starts again from the first id. A showtime whose repairs
// did not fit in a run's budget is visited again first by the next run. Instances keep
// their own cursors (the lock lets one work at a time); each still sweeps every showtime.
type Reconciler struct {
	DB    *ent.Client
	Seats *seats.Store
	// Orders expires pending orders and sends refunds through booking's own paths.
	Orders Orders
	Sales  Sales
	// Waitlist recounts the waiting lists' counts and offers returned seats left
	// unoffered; nil skips both repairs.
	Waitlist Waitlist
	RDB      redis.UniversalClient
	Keys     keys.Keys
	Config

	mu     sync.Mutex
	cursor int  // last showtime id fully reconciled; 0 = start from the first
	swept  bool // a scan has reached the last showtime since the start
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
	x := &run{r: r, c: c, now: c.Now.Now(), touched: map[int]bool{}, left: map[string]int{}}
	for _, k := range []string{kindExpired, kindPaidSeats, kindHashes, kindOrphanHolds, kindSoldOrphans, kindLimits, kindPendingSeats, kindBlocks, kindPurchaseCounts, kindWaitlistCounts, kindReturnedSeats} {
		x.left[k] = c.Batch
	}
	x.left[kindRefunds] = c.RefundBatch
	x.rep.StartedAt = x.now
	startup := c.EmptyAtStart && !r.swept
	err = x.expireOrders(runCtx)
	if err == nil {
		err = x.scanShowtimes(runCtx)
	}
	if err == nil { // last: provider calls must not starve the seat repairs of the run's time
		err = x.retryRefunds(runCtx)
	}
	finished := c.Now.Now()
	x.rep.FinishedAt = &finished
	for id := range x.touched {
		x.rep.ShowtimeIDs = append(x.rep.ShowtimeIDs, id)
	}
	slices.Sort(x.rep.ShowtimeIDs)
	if x.rep.repaired() {
		if serr := r.store(context.WithoutCancel(ctx), &x.rep); serr != nil {
			err = errors.Join(err, serr)
		}
		x.log(startup)
	}
	if x.reachedEnd {
		r.swept = true
	}
	if err != nil {
		runsTotal.WithLabelValues("error").Inc()
		return &x.rep, fmt.Errorf("reconcile: %w", err)
	}
	runsTotal.WithLabelValues("ok").Inc()
	return &x.rep, nil
}

// log writes the line of a run that repaired something. The seat hashes an empty Redis
// needs at start (startup) are built seat maps, at INFO; every other repair is drift
// between the stores (a crash, a lost Redis, a stopped worker), at WARN.
func (x *run) log(startup bool) {
	rep := x.rep
	if startup && rep.HashesRebuilt > 0 {
		x.c.Log.Info("built seat maps from the database (the embedded Redis starts empty)", "showtimes", rep.HashesRebuilt)
		rep.HashesRebuilt = 0
	}
	if rep.repaired() {
		x.c.Log.Warn("reconcile: repaired drift", "expiredCancelled", rep.ExpiredCancelled,
			"paidSeatsFixed", rep.PaidSeatsFixed, "hashesRebuilt", rep.HashesRebuilt,
			"orphanHoldsReleased", rep.OrphanHoldsReleased, "soldOrphansReleased", rep.SoldOrphansReleased,
			"limitsRecounted", rep.LimitsRecounted, "pendingSeatsReheld", rep.PendingSeatsReheld, "blocksRepaired", rep.BlocksRepaired, "refundsRetried", rep.RefundsRetried,
			"purchaseCountsRecounted", rep.PurchaseCountsRecounted, "waitlistCountsRecounted", rep.WaitlistCountsRecounted,
			"returnedSeatsOffered", rep.ReturnedSeatsOffered,
			"refundsOutstanding", rep.RefundsOutstanding, "showtimes", rep.ShowtimeIDs)
	}
}

// Run calls RunOnce now and then every interval until ctx ends. Every instance runs one;
// the lock makes one of them do the work each round.
func (r *Reconciler) Run(ctx context.Context, every time.Duration) {
	log := r.Config.withDefaults().Log
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		err := background.Pass(ctx, background.ReconcileRun, func(ctx context.Context) error {
			_, err := r.RunOnce(ctx)
			if errors.Is(err, ErrBusy) {
				return nil // another instance runs it: not a failure
			}
			return err
		})
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
			SoldOrphansReleased: row.SoldOrphansReleased, LimitsRecounted: row.LimitsRecounted,
			PendingSeatsReheld: row.PendingSeatsReheld, BlocksRepaired: row.BlocksRepaired,
			RefundsRetried: row.RefundsRetried, RefundsOutstanding: row.RefundsOutstanding,
			PurchaseCountsRecounted: row.PurchaseCountsRecounted, WaitlistCountsRecounted: row.WaitlistCountsRecounted,
			ReturnedSeatsOffered: row.ReturnedSeatsOffered, ShowtimeIDs: row.Showtimes}
	}
	return out, nil
}

func (r *Reconciler) store(ctx context.Context, rep *Report) error {
	err := r.DB.ReconcileRun.Create().SetStartedAt(rep.StartedAt).SetFinishedAt(*rep.FinishedAt).
		SetExpiredCancelled(rep.ExpiredCancelled).SetPaidSeatsFixed(rep.PaidSeatsFixed).
		SetHashesRebuilt(rep.HashesRebuilt).SetOrphanHoldsReleased(rep.OrphanHoldsReleased).
		SetSoldOrphansReleased(rep.SoldOrphansReleased).SetLimitsRecounted(rep.LimitsRecounted).
		SetPendingSeatsReheld(rep.PendingSeatsReheld).SetBlocksRepaired(rep.BlocksRepaired).
		SetRefundsRetried(rep.RefundsRetried).SetRefundsOutstanding(rep.RefundsOutstanding).
		SetPurchaseCountsRecounted(rep.PurchaseCountsRecounted).SetWaitlistCountsRecounted(rep.WaitlistCountsRecounted).
		SetReturnedSeatsOffered(rep.ReturnedSeatsOffered).SetShowtimes(rep.ShowtimeIDs).Exec(ctx)
	if err != nil {
		return fmt.Errorf("store run: %w", err)
	}
	return nil
}
