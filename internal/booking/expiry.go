package booking

import (
	"context"
	_ "embed"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/internal/rdb"
)

// expiryBatch bounds the due entries one pass claims.
const expiryBatch = 100

//go:embed lua/claim.lua
var claimSrc string

// claimScript takes the due orders out of the expiry queue; its KEYS, ARGV and reply
// are in lua/claim.lua.
var claimScript = redis.NewScript(claimSrc)

// ExpiryQueue is the delay queue of pending orders (DESIGN.md "sf:orders:expiry"): member
// the order id, score its expiry in ms. It only says when to look at an order; the order's
// row in MySQL decides what is due.
type ExpiryQueue struct {
	RDB redis.UniversalClient
	Key string
}

// Add puts an order in the queue at its expiry, or moves it there.
func (q *ExpiryQueue) Add(ctx context.Context, orderID int, at time.Time) error {
	err := q.RDB.ZAdd(ctx, q.Key, redis.Z{Score: float64(at.UnixMilli()), Member: strconv.Itoa(orderID)}).Err()
	return rdb.Classify("expiry queue: add", err)
}

// Remove takes an order out of the queue (it was paid or ended).
func (q *ExpiryQueue) Remove(ctx context.Context, orderID int) error {
	return rdb.Classify("expiry queue: remove", q.RDB.ZRem(ctx, q.Key, strconv.Itoa(orderID)).Err())
}

// Claim takes up to n orders due by now out of the queue in one round trip and returns
// their ids; no other worker gets them.
func (q *ExpiryQueue) Claim(ctx context.Context, now time.Time, n int) ([]int, error) {
	members, err := claimScript.Run(ctx, q.RDB, []string{q.Key}, now.UnixMilli(), n).StringSlice()
	if err != nil {
		return nil, rdb.Classify("expiry queue: claim", err)
	}
	ids := make([]int, 0, len(members))
	for _, m := range members {
		if id, err := strconv.Atoi(m); err == nil {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// RunExpiryWorker expires due orders every interval until ctx ends. Every instance runs
// one; the queue's claim gives each due order to one of them.
func (s *Service) RunExpiryWorker(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		_, _ = s.ExpireDue(ctx)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// ExpireDue claims the orders due by now from the delay queue and expires them; it returns
// how many it expired. An order extended meanwhile goes back at its new expiry; one that
// failed goes back to be retried a minute later.
func (s *Service) ExpireDue(ctx context.Context) (int, error) {
	now := s.now()
	q := s.queue()
	due, err := q.Claim(ctx, now, expiryBatch)
	if err != nil {
		return 0, err
	}
	expired := 0
	for _, id := range due {
		done, err := s.Expire(ctx, id)
		switch {
		case err != nil:
			_ = q.Add(ctx, id, now.Add(time.Minute))
		case done:
			expired++
		default:
			// Extended meanwhile (its Add may have raced the claim): requeue at the new expiry.
			if o, err := s.DB.Order.Get(ctx, id); err == nil && o.Status == seatflow.OrderPending {
				_ = q.Add(ctx, id, o.ExpiresAt)
			}
		}
	}
	return expired, nil
}
