package booking

import (
	"context"

	"github.com/go-redis/redis_rate/v10"

	"seatflow/internal/rdb"
)

// DefaultHoldRate is a per-user hold rate that a person never reaches but that stops one
// client from sweeping a hall.
var DefaultHoldRate = redis_rate.PerMinute(20)

// LimitOrderChange spends one of the user's order changes (pay, cancel, extend), for
// another service whose changes count as such (joining and leaving a waiting list):
// RATE_LIMITED past the budget.
func (s *Service) LimitOrderChange(ctx context.Context, userID string) error {
	return s.rateLimit(ctx, "order", userID, s.OrderRate)
}

// rateLimit spends one request of the user's budget for kind (hold, order); a zero rate
// is no limit.
func (s *Service) rateLimit(ctx context.Context, kind, userID string, rate redis_rate.Limit) error {
	return rdb.Allow(ctx, s.limiter, s.Keys.UserRate(kind, userID), rate, kind+" rate limit", "too many requests")
}
