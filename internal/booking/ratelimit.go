package booking

import (
	"context"
	"time"

	"github.com/go-redis/redis_rate/v10"

	"seatflow"
	"seatflow/internal/rdb"
)

// DefaultHoldRate is a per-user hold rate that a person never reaches but that stops one
// client from sweeping a hall.
var DefaultHoldRate = redis_rate.PerMinute(20)

// rateLimit spends one request of the user's budget for kind (hold, order); a zero rate
// is no limit.
func (s *Service) rateLimit(ctx context.Context, kind, userID string, rate redis_rate.Limit) error {
	if rate.IsZero() {
		return nil
	}
	res, err := s.limiter.Allow(ctx, s.Keys.UserRate(kind, userID), rate)
	if err != nil {
		return rdb.Classify(kind+" rate limit", err)
	}
	if res.Allowed == 0 {
		e := seatflow.Errorf(seatflow.ERATELIMITED, "too many requests, try again in %s", res.RetryAfter.Round(time.Second))
		e.Extensions = map[string]any{"retryAfterMs": res.RetryAfter.Milliseconds()}
		return e
	}
	return nil
}
