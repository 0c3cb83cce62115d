package booking

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow/ent/order"
)

// expiryBatch bounds the due entries one pass claims.
const expiryBatch = 100

// RunExpiryWorker expires due orders every interval until ctx ends. Every instance runs
// one: each due entry of the delay queue is claimed by whoever removes it (ZREM returns 1
// to exactly one worker).
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
// how many it expired. An entry whose order was extended meanwhile goes back at its new
// expiry; one that failed goes back to be retried a little later.
func (s *Service) ExpireDue(ctx context.Context) (int, error) {
	now := s.now()
	key := s.Keys.OrdersExpiry()
	due, err := s.RDB.ZRangeByScore(ctx, key, &redis.ZRangeBy{Min: "-inf", Max: strconv.FormatInt(now.UnixMilli(), 10), Count: expiryBatch}).Result()
	if err != nil {
		return 0, unavailable("expiry queue", err)
	}
	expired := 0
	for _, member := range due {
		if n, err := s.RDB.ZRem(ctx, key, member).Result(); err != nil || n == 0 {
			continue // another worker claimed it
		}
		id, err := strconv.Atoi(member)
		if err != nil {
			continue
		}
		done, err := s.Expire(ctx, id)
		if err != nil {
			s.RDB.ZAdd(ctx, key, redis.Z{Score: float64(now.Add(time.Minute).UnixMilli()), Member: member})
			continue
		}
		if done {
			expired++
			continue
		}
		// Extended meanwhile (its ZADD may have raced our ZREM): requeue at the new expiry.
		if o, err := s.DB.Order.Get(ctx, id); err == nil && o.Status == order.StatusPENDING_PAYMENT {
			s.RDB.ZAdd(ctx, key, redis.Z{Score: float64(o.ExpiresAt.UnixMilli()), Member: member})
		}
	}
	return expired, nil
}
