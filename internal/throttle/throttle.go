// Package throttle keeps every client's query-cost budget: a leaky bucket (GCRA, through
// go-redis/redis_rate: one Lua round trip) in Redis, so all instances draw from the same
// budget. To keep that round trip off most requests, an instance leases a slice of a
// client's budget at a time and spends it locally until it runs out or its lease ends; a
// client spread over N instances can overdraw by at most N leases.
package throttle

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/sony/gobreaker/v2"

	"seatflow"
	"seatflow/internal/rdb"
)

// Leases: at least how many points an instance takes from Redis at a time (and for how
// many queries of the cost at hand), for how long, for how many clients at most (the least
// recently seen lose theirs).
const (
	defaultLease  = 100
	leaseQueries  = 32
	leaseLife     = time.Second
	leasedClients = 100_000
)

// Budget is the cost budget of every client. A zero Capacity turns throttling off.
type Budget struct {
	Limiter *redis_rate.Limiter
	// KeyPrefix is prepended to a client's key in Redis (keys.Keys.CostBudget).
	KeyPrefix string
	// Capacity is the most a client may spend at once; Restore how many points come back
	// per second.
	Capacity, Restore int
	// Now is the clock of the leases; time.Now when nil.
	Now seatflow.ClockFunc

	breakerOnce sync.Once
	breaker     *gobreaker.CircuitBreaker[*redis_rate.Result] // Redis away: allowN

	mu     sync.Mutex
	leases *simplelru.LRU[string, *lease]
	local  *simplelru.LRU[string, *bucket] // the fallback buckets, while Redis is away
}

// metricFallback counts the spends charged to this instance's local bucket because Redis
// could not be reached: reads keep being served, each instance budgets on its own.
var metricFallback = promauto.NewCounter(prometheus.CounterOpts{
	Name: "seatflow_budget_fallback_total",
	Help: "Query-cost spends charged to the instance's local bucket because the budget's Redis was unreachable.",
})

// bucket is a client's budget on this instance alone: Capacity points, refilled at
// Restore a second.
type bucket struct {
	points float64
	at     time.Time
}

// spendLocal takes cost from client's local bucket (Redis unreachable): the same budget,
// kept per instance, so a client spread over N instances may spend N budgets until Redis
// is back.
func (b *Budget) spendLocal(client string, cost int, st Status, now time.Time) (bool, Status) {
	metricFallback.Inc()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.local == nil {
		b.local, _ = simplelru.NewLRU[string, *bucket](leasedClients, nil)
	}
	bk, ok := b.local.Get(client)
	if !ok {
		bk = &bucket{points: float64(b.Capacity), at: now}
		b.local.Add(client, bk)
	}
	bk.points = min(float64(b.Capacity), bk.points+now.Sub(bk.at).Seconds()*float64(b.Restore))
	bk.at = now
	if bk.points < float64(cost) {
		st = st.Available(int(bk.points))
		wait := time.Second
		if b.Restore > 0 {
			wait = time.Duration((float64(cost) - bk.points) / float64(b.Restore) * float64(time.Second))
		}
		st.RetryAfter = max(wait, time.Millisecond)
		return false, st
	}
	bk.points -= float64(cost)
	return true, st.Available(int(bk.points))
}

// lease is the slice of a client's budget this instance may spend without asking Redis.
type lease struct {
	points    int
	available int // what Redis said was left after the lease, for the client's status
	until     time.Time
}

// Status is what a spend tells the client (extensions.cost.throttleStatus).
type Status struct {
	MaximumAvailable   int     `json:"maximumAvailable"`
	CurrentlyAvailable int     `json:"currentlyAvailable"`
	RestoreRate        float64 `json:"restoreRate"`
	// RetryAfter is how long a refused client should wait; zero when the spend was allowed.
	RetryAfter time.Duration `json:"-"`
}

// Available returns s showing n points available: never more than MaximumAvailable. An
// instance may hold a lease's points beside what Redis has refilled since (the overdraw
// the package comment bounds), but a client is never told it has more than its budget.
func (s Status) Available(n int) Status {
	s.CurrentlyAvailable = min(n, s.MaximumAvailable)
	return s
}

// On reports whether the budget limits anything.
func (b *Budget) On() bool { return b != nil && b.Capacity > 0 && b.Limiter != nil }

// Spend takes cost points from client's budget and reports whether it could; a refusal
// carries how long to wait. When Redis cannot be reached the client's local bucket on this
// instance is charged instead (seatflow_budget_fallback_total); only a request whose own
// context ended fails.
//
// What a lease holds and the spend does not use is never thrown away: a lease that ran out
// of time is renewed with what it still holds counted in (Redis is asked for the cost plus
// a fresh lease minus what is held, or, when the points held cover both, only for the
// budget's state), so a client coming back once a second pays what it spends, not a lease
// a second. A refusal reports what the bucket really holds (the wait redis_rate gives back
// is the shortfall), not zero.
func (b *Budget) Spend(ctx context.Context, client string, cost int) (bool, Status, error) {
	if b == nil {
		return true, Status{}, nil
	}
	st := Status{MaximumAvailable: b.Capacity, RestoreRate: float64(b.Restore)}
	if !b.On() {
		st.CurrentlyAvailable = b.Capacity
		return true, st, nil
	}
	now := b.Now.Now()
	b.mu.Lock()
	if b.leases == nil {
		b.leases, _ = simplelru.NewLRU[string, *lease](leasedClients, nil)
	}
	held := 0
	if l, ok := b.leases.Get(client); ok {
		if now.Before(l.until) && l.points >= cost {
			l.points -= cost
			st = st.Available(l.available + l.points)
			b.mu.Unlock()
			return true, st, nil
		}
		// Taken in hand and counted in: the new lease takes only what it lacks, and a
		// spend of the same client at the same time does not count them again.
		held, l.points = l.points, 0
	}
	b.mu.Unlock()

	limit := redis_rate.Limit{Rate: b.Restore, Burst: b.Capacity, Period: time.Second}
	key := b.KeyPrefix + client
	// The spend and a fresh lease (which may be the spend itself) less what is held; 0 when
	// the points held cover them: Redis only tells the bucket's state.
	want := max(max(cost, b.leaseFor(cost))-held, 0)
	res, err := b.allowN(ctx, key, limit, want)
	if need := cost - held; err == nil && res.Allowed == 0 && want > 0 && want > need {
		want = max(need, 0)
		res, err = b.allowN(ctx, key, limit, want)
	}
	if err != nil {
		b.keep(client, held, 0, now, false)
		if ctx.Err() != nil {
			return false, st, rdb.Classify("query cost budget", err)
		}
		// Redis unreachable (or found so within awayFor): the reads the caches or MySQL
		// can serve are never refused for want of a budget; this instance budgets the
		// client alone until it is back.
		ok, st := b.spendLocal(client, cost, st, now)
		return ok, st, nil
	}
	remaining := res.Remaining
	if res.Allowed == 0 && want > 0 { // refused: Remaining is 0, the wait says what is there
		remaining = b.shortOf(want, res.RetryAfter)
		held = b.keep(client, held, remaining, now, false)
		st = st.Available(remaining + held)
		st.RetryAfter = max(res.RetryAfter, time.Millisecond)
		return false, st, nil
	}
	points := b.keep(client, held+want-cost, remaining, now, true)
	return true, st.Available(remaining + points), nil
}

// keep puts points back into client's lease (beside what spends of the same client at the
// same time put there) and returns what the lease holds; renewed, the lease lives another
// leaseLife and tells remaining as what Redis holds besides it.
func (b *Budget) keep(client string, points, remaining int, now time.Time, renewed bool) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	l, ok := b.leases.Get(client)
	if !ok {
		if points == 0 && !renewed {
			return 0
		}
		l = &lease{available: remaining}
		b.leases.Add(client, l)
	}
	l.points += points
	if renewed {
		l.available, l.until = remaining, now.Add(leaseLife)
	}
	return l.points
}

// shortOf is what a bucket that refused n points holds: redis_rate answers a refusal
// with no remaining count but with the wait until n fit, the shortfall at the restore rate.
func (b *Budget) shortOf(n int, wait time.Duration) int {
	return min(max(n-int(math.Ceil(wait.Seconds()*float64(b.Restore))), 0), b.Capacity)
}

// leaseFor is how many points to lease for queries of cost: enough for a few dozen such
// queries, at least defaultLease, at most an eighth of the budget (what one instance can
// overdraw a client by).
func (b *Budget) leaseFor(cost int) int {
	return min(max(cost*leaseQueries, defaultLease), max(b.Capacity/8, 1))
}

// Refund gives back points a query was charged but did not use (its actual cost was
// lower than requested) to the client's lease on this instance, and returns how many it
// kept: a lease that ran out of time keeps them too, the next spend counts them in.
func (b *Budget) Refund(client string, points int) int {
	if !b.On() || points <= 0 {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.leases == nil {
		return 0
	}
	l, ok := b.leases.Get(client)
	if !ok {
		return 0
	}
	l.points += points
	return points
}
