package throttle

import (
	"context"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"seatflow/internal/rdb"
	"seatflow/internal/tooling/testenv"
)

func newBudget(t *testing.T, capacity, restore int) *Budget {
	t.Helper()
	r := testenv.NewRedis(t)
	return &Budget{Limiter: rdb.NewLimiter(r.Client), KeyPrefix: r.Keys.CostBudget(), Capacity: capacity, Restore: restore}
}

func TestSpendUntilEmpty(t *testing.T) {
	b := newBudget(t, 1000, 1)
	ctx := context.Background()
	spent := 0
	for {
		ok, st, err := b.Spend(ctx, "addr:a", 7)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			if st.RetryAfter <= 0 || st.CurrentlyAvailable >= 7 {
				t.Fatalf("refused with %+v: want a wait and less than the cost available", st)
			}
			break
		}
		spent += 7
		if st.MaximumAvailable != 1000 || st.CurrentlyAvailable != 1000-spent {
			t.Fatalf("after spending %d: %+v", spent, st)
		}
	}
	// At most one lease (100) past what the budget held, none lost: the rest of the
	// lease was spent locally, so the client got what the bucket had, give or take 7.
	if spent < 1000-7 || spent > 1000 {
		t.Fatalf("spent %d of 1000", spent)
	}
	if ok, _, _ := b.Spend(ctx, "addr:b", 500); !ok {
		t.Fatal("another client shares the budget")
	}
}

func TestRefundAndConcurrentInstances(t *testing.T) {
	r := testenv.NewRedis(t)
	ctx := context.Background()
	// Three instances on one Redis: each leases; together they never spend more than the
	// budget plus one lease each.
	var instances []*Budget
	for range 3 {
		instances = append(instances, &Budget{Limiter: rdb.NewLimiter(r.Client), KeyPrefix: r.Keys.CostBudget(),
			Capacity: 2000, Restore: 1})
	}
	var mu sync.Mutex
	spent := 0
	var wg sync.WaitGroup
	for _, b := range instances {
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					ok, _, err := b.Spend(ctx, "user:x", 3)
					if err != nil {
						t.Error(err)
						return
					}
					if !ok {
						return
					}
					mu.Lock()
					spent += 3
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if spent > 2000+3*defaultLease || spent < 2000-3*defaultLease {
		t.Fatalf("three instances spent %d of a 2000 budget", spent)
	}

	b := newBudget(t, 100, 1)
	if ok, _, _ := b.Spend(ctx, "c", 100); !ok {
		t.Fatal("could not spend the whole budget")
	}
	if ok, _, _ := b.Spend(ctx, "c", 10); ok {
		t.Fatal("spent past the budget")
	}
	b.Refund("c", 60) // the query used 40 of its 100
	if ok, st, _ := b.Spend(ctx, "c", 50); !ok || st.CurrentlyAvailable != 10 {
		t.Fatalf("after a refund of 60: ok %v, %+v", ok, st)
	}
}

// TestAvailableNeverAboveBudget: a lease's leftover points beside a bucket Redis has
// refilled since are spendable, but the status never shows more than the budget (a
// client read currentlyAvailable 50063 of a maximumAvailable 50000).
func TestAvailableNeverAboveBudget(t *testing.T) {
	ctx := context.Background()
	b := newBudget(t, 1000, 1_000_000) // refilled at once
	if ok, _, err := b.Spend(ctx, "c", 10); !ok || err != nil {
		t.Fatal(ok, err)
	}
	// Larger than the lease's points: the leftover is kept beside a new lease from a
	// bucket that is full again.
	ok, st, err := b.Spend(ctx, "c", 120)
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	if st.CurrentlyAvailable > st.MaximumAvailable || st.CurrentlyAvailable < st.MaximumAvailable-120 {
		t.Fatalf("status %+v: want at most the budget, and no less than it minus the spend", st)
	}
	if got := st.Available(st.MaximumAvailable + 696); got.CurrentlyAvailable != st.MaximumAvailable {
		t.Errorf("a refund past the budget shows %d of %d", got.CurrentlyAvailable, st.MaximumAvailable)
	}
}

func TestOff(t *testing.T) {
	var b *Budget
	if ok, _, err := b.Spend(context.Background(), "x", 1<<30); !ok || err != nil {
		t.Fatal("a nil budget refused")
	}
	if ok, _, _ := (&Budget{}).Spend(context.Background(), "x", 1<<30); !ok {
		t.Fatal("a zero budget refused")
	}
}

// TestKeysUnderPrefix: the budgets' counters live under the deployment's prefix, not under
// redis_rate's own "rate:" in front of it.
func TestKeysUnderPrefix(t *testing.T) {
	r := testenv.NewRedis(t)
	b := &Budget{Limiter: rdb.NewLimiter(r.Client), KeyPrefix: r.Keys.CostBudget(), Capacity: 1000, Restore: 10}
	if ok, _, err := b.Spend(context.Background(), "addr:k", 7); err != nil || !ok {
		t.Fatalf("spend = %v, %v", ok, err)
	}
	n, err := r.Client.Exists(context.Background(), r.Keys.CostBudget()+"addr:k").Result()
	if err != nil || n != 1 {
		t.Errorf("budget key %q exists = %d, %v; want 1", r.Keys.CostBudget()+"addr:k", n, err)
	}
	if out := testenv.KeysOutside(t, r.Client, r.Keys.Prefix); len(out) > 0 {
		t.Errorf("keys outside the prefix %q: %q", r.Keys.Prefix, out)
	}
}

// TestRedisUnreachable: with the budget's Redis gone (a closed port), spends are charged to
// the instance's local bucket and say so in the metric; the budget still limits.
func TestRedisUnreachable(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	// go-redis' pool retries a failed dial after a 1 s sleep; let it see the pool closed.
	t.Cleanup(func() { c.Close(); time.Sleep(1500 * time.Millisecond) })
	b := &Budget{Limiter: rdb.NewLimiter(c), KeyPrefix: "sft-down:cost:", Capacity: 100, Restore: 1}
	at := time.Now()
	b.Now = func() time.Time { return at } // no refill during the test
	before := testutil.ToFloat64(metricFallback)
	ctx := context.Background()
	served := 0
	for i := 0; i < 20; i++ {
		ok, st, err := b.Spend(ctx, "addr:down", 7)
		if err != nil {
			t.Fatalf("spend %d: %v, want the local bucket charged", i, err)
		}
		if ok {
			served++
		} else if st.RetryAfter <= 0 {
			t.Fatalf("refused without a wait: %+v", st)
		}
	}
	if served != 14 {
		t.Errorf("served %d of 20 spends of 7 from a budget of 100, want 14", served)
	}
	if got := testutil.ToFloat64(metricFallback) - before; got != 20 {
		t.Errorf("seatflow_budget_fallback_total grew by %v, want 20", got)
	}
}

// TestLeaseNotThrownAway: a client that comes back once a lease has run out of time
// (myOrders once a second) pays what it spends, not a fresh lease each time: the points a
// lease held are counted in when it is renewed. Each instance used to lease an eighth of
// the budget for a second and throw the rest away, draining a client who spent a few
// points a second.
func TestLeaseNotThrownAway(t *testing.T) {
	b := newBudget(t, 10_000, 1)
	at := time.Now()
	b.Now = func() time.Time { return at }
	ctx := context.Background()
	for i := range 50 {
		ok, st, err := b.Spend(ctx, "user:slow", 40)
		if err != nil || !ok {
			t.Fatalf("spend %d of 40 points (%d spent of 10,000): ok %v, %v, %+v", i, 40*i, ok, err, st)
		}
		if want := 10_000 - 40*(i+1) + 10*i; st.CurrentlyAvailable < want || st.CurrentlyAvailable > want+5 {
			t.Fatalf("after %d spends of 40 and %d refunds of 10: %d available, want %d (and the restore of the test's seconds)",
				i+1, i, st.CurrentlyAvailable, want)
		}
		if b.Refund("user:slow", 10) != 10 { // the query used 30 of its 40
			t.Fatal("the refund was not kept")
		}
		at = at.Add(2 * leaseLife) // the lease runs out before the next query
	}
	// Everything not spent is still there: in Redis, or in the lease this instance holds.
	ok, st, err := b.Spend(ctx, "user:slow", 10_000-50*30)
	if err != nil || !ok || st.CurrentlyAvailable > 5 {
		t.Fatalf("the rest of the budget (8,500) could not be spent: ok %v, %v, %+v", ok, err, st)
	}
}

// TestRefusalSaysWhatIsLeft: a refusal reports what the bucket holds, not 0 (a client was
// told 0 points were available right after an answer reporting 13,264).
func TestRefusalSaysWhatIsLeft(t *testing.T) {
	b := newBudget(t, 1000, 1)
	ctx := context.Background()
	ok, st, err := b.Spend(ctx, "addr:r", 700)
	if !ok || err != nil || st.CurrentlyAvailable != 300 {
		t.Fatalf("spend 700 of 1000: ok %v, %v, %+v; want 300 left", ok, err, st)
	}
	ok, refused, err := b.Spend(ctx, "addr:r", 400)
	if ok || err != nil {
		t.Fatalf("spend 400 with 300 left: ok %v, %v", ok, err)
	}
	if refused.CurrentlyAvailable < 300 || refused.CurrentlyAvailable > 305 || refused.RetryAfter < 90*time.Second {
		t.Fatalf("refusal %+v: want the 300 points left (give or take the seconds of the test) and a wait of ~100 s", refused)
	}
	ok, st, err = b.Spend(ctx, "addr:r", refused.CurrentlyAvailable-5)
	if !ok || err != nil || st.CurrentlyAvailable > 10 {
		t.Fatalf("spending what the refusal said was left: ok %v, %v, %+v", ok, err, st)
	}
}

// TestConcurrentSpendsKeepTheirLeases: spends of one client at the same time on one
// instance (a crowd's guest sessions on their address' budget) each renew the lease; none
// overwrites what another leased, so the client gets its whole budget. A lease replaced by
// another spend's used to lose its points: 1,000 browsers behind one address emptied a
// backstop of 2,000,000 points with 600 subscriptions.
func TestConcurrentSpendsKeepTheirLeases(t *testing.T) {
	b := newBudget(t, 1_000_000, 1)
	ctx := context.Background()
	var mu sync.Mutex
	spent := 0
	var wg sync.WaitGroup
	for range 400 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ok, _, err := b.Spend(ctx, "crowd:x", 600) // a lease of 19,200: 32 spends
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					return
				}
				mu.Lock()
				spent += 600
				mu.Unlock()
				runtime.Gosched() // let the others spend in between, as requests do
			}
		}()
	}
	wg.Wait()
	// What was not spent is less than a spend in the lease and a spend in Redis.
	if spent < 1_000_000-2*600 || spent > 1_000_000+20 {
		t.Fatalf("400 spenders at once got %d of a budget of 1,000,000", spent)
	}
}

// TestRedisSilent: a Redis that takes connections and never answers costs the instance one
// read timeout, not one per request: after a failed spend the budget is kept locally for
// awayFor without asking Redis, then asks again once and goes back to Redis when it answers.
// Each spend used to wait out its own timeout before falling back.
func TestRedisSilent(t *testing.T) {
	opt, err := redis.ParseURL(testenv.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	sw := newSwitch(t, opt.Addr)
	c := redis.NewClient(&redis.Options{Addr: sw.addr, MaxRetries: -1, DialTimeout: 300 * time.Millisecond,
		ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond})
	t.Cleanup(func() { c.Close() })
	prefix := testenv.RandomName("sft-silent") + ":cost:"
	t.Cleanup(func() { testenv.DeletePrefix(testenv.NewRedisClient(t), prefix) })
	b := &Budget{Limiter: rdb.NewLimiter(c), KeyPrefix: prefix, Capacity: 100_000, Restore: 1}
	ctx := context.Background()
	spend := func(client string) {
		t.Helper()
		if ok, _, err := b.Spend(ctx, client, 10_000); err != nil || !ok {
			t.Fatalf("spend: ok %v, err %v", ok, err)
		}
	}
	spend("addr:warm") // Redis answers: the bucket is in Redis
	sw.silence()
	before := testutil.ToFloat64(metricFallback)
	start := time.Now()
	for i := range 20 {
		spend(fmt.Sprintf("addr:%d", i)) // a new client each time: no lease to spend from
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("20 spends with Redis silent took %v: each waited for Redis (300 ms timeout), want one wait", took)
	}
	if got := testutil.ToFloat64(metricFallback) - before; got != 20 {
		t.Errorf("seatflow_budget_fallback_total grew by %v, want 20", got)
	}
	sw.restore()
	time.Sleep(awayFor + 100*time.Millisecond)
	spend("addr:back")
	left, err := testenv.NewRedisClient(t).Exists(ctx, prefix+"addr:back").Result()
	if err != nil || left != 1 {
		t.Errorf("after Redis came back the spend was not charged in Redis (key exists: %d, %v)", left, err)
	}
}

// connSwitch forwards connections to a Redis, or, silenced, takes them and never answers
// (a Redis behind a dead link: no refusal, no reset).
type connSwitch struct {
	addr   string
	silent atomic.Bool
}

func newSwitch(t *testing.T, target string) *connSwitch {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &connSwitch{addr: ln.Addr().String()}
	var conns sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		conns.Wait()
	})
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open = append(open, in)
			mu.Unlock()
			conns.Add(1)
			go func() {
				defer conns.Done()
				defer in.Close()
				if s.silent.Load() {
					_, _ = io.Copy(io.Discard, in)
					return
				}
				out, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer out.Close()
				go func() { s.forward(out, in); out.Close() }()
				_, _ = io.Copy(in, out)
			}()
		}
	}()
	return s
}

// forward copies what the client sends to Redis until silenced: then it is dropped.
func (s *connSwitch) forward(out io.Writer, in io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := in.Read(buf)
		if n > 0 && !s.silent.Load() {
			if _, werr := out.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// silence drops what is forwarded and has new connections hang; restore forwards new ones.
func (s *connSwitch) silence() { s.silent.Store(true) }
func (s *connSwitch) restore() { s.silent.Store(false) }
