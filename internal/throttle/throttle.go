// Package throttle keeps every client's query-cost budget: a leaky bucket (GCRA, through
// go-redis/redis_rate: one Lua round trip) in Redis, so all instances draw from the same
// budget. To keep that round trip off most requests, an instance leases a slice of a
// client's budget at a time and spends it locally until it runs out or its lease ends; a
// client spread over N instances can overdraw by at most N leases.
package throttle

import (
	"context"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

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
	Now func() time.Time

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

func (b *Budget) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// Spend takes cost points from client's budget and reports whether it could; a refusal
// carries how long to wait. When Redis cannot be reached the client's local bucket on this
// instance is charged instead (seatflow_budget_fallback_total); only a request whose own
// context ended fails.
func (b *Budget) Spend(ctx context.Context, client string, cost int) (bool, Status, error) {
	if b == nil {
		return true, Status{}, nil
	}
	st := Status{MaximumAvailable: b.Capacity, RestoreRate: float64(b.Restore)}
	if !b.On() {
		st.CurrentlyAvailable = b.Capacity
		return true, st, nil
	}
	now := b.now()
	b.mu.Lock()
	if b.leases == nil {
		b.leases, _ = simplelru.NewLRU[string, *lease](leasedClients, nil)
	}
	leftover := 0
	if l, ok := b.leases.Get(client); ok && now.Before(l.until) {
		if l.points >= cost {
			l.points -= cost
			st = st.Available(l.available + l.points)
			b.mu.Unlock()
			return true, st, nil
		}
		leftover = l.points // kept: the new lease adds to it
	}
	b.mu.Unlock()

	limit := redis_rate.Limit{Rate: b.Restore, Burst: b.Capacity, Period: time.Second}
	need := cost - leftover
	want := max(need, b.leaseFor(cost))
	res, err := b.Limiter.AllowN(ctx, b.KeyPrefix+client, limit, want)
	if err == nil && res.Allowed == 0 && want > need {
		res, err = b.Limiter.AllowN(ctx, b.KeyPrefix+client, limit, need)
		want = need
	}
	if err != nil {
		if ctx.Err() != nil {
			return false, st, rdb.Classify("query cost budget", err)
		}
		// Redis unreachable: the reads the caches or MySQL can serve are never refused
		// for want of a budget; this instance budgets the client alone until it is back.
		ok, st := b.spendLocal(client, cost, st, now)
		return ok, st, nil
	}
	st = st.Available(res.Remaining + leftover)
	if res.Allowed == 0 {
		st.RetryAfter = max(res.RetryAfter, time.Millisecond)
		return false, st, nil
	}
	points := leftover + want - cost
	b.mu.Lock()
	b.leases.Add(client, &lease{points: points, available: res.Remaining, until: now.Add(leaseLife)})
	b.mu.Unlock()
	st = st.Available(res.Remaining + points)
	return true, st, nil
}

// leaseFor is how many points to lease for queries of cost: enough for a few dozen such
// queries, at least defaultLease, at most an eighth of the budget (what one instance can
// overdraw a client by).
func (b *Budget) leaseFor(cost int) int {
	return min(max(cost*leaseQueries, defaultLease), max(b.Capacity/8, 1))
}

// Refund gives back points a query was charged but did not use (its actual cost was
// lower than requested) to the client's lease on this instance.
func (b *Budget) Refund(client string, points int) {
	if !b.On() || points <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.leases == nil {
		return
	}
	if l, ok := b.leases.Get(client); ok && b.now().Before(l.until) {
		l.points += points
	}
}
