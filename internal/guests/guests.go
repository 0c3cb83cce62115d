// Package guests starts guest sessions: a signed token of auth's (role guest, a random
// session id) that an anonymous browser sends like any token, so that its query-cost
// budget and its websockets are counted apart from everyone else behind its address.
// Sessions started per client address are rate-limited in Redis; the per-address limits
// stay, sized for a crowd, as the backstop behind the sessions' own.
package guests

import (
	"context"
	"time"

	"github.com/go-redis/redis_rate/v10"

	"seatflow"
	"seatflow/internal/auth"
	"seatflow/internal/keys"
	"seatflow/internal/rdb"
)

// DefaultTTL is how long a guest session lives when TTL is not set: an evening.
const DefaultTTL = 24 * time.Hour

// Service starts guest sessions.
type Service struct {
	Auth    *auth.Authenticator
	Limiter *redis_rate.Limiter
	Keys    keys.Keys
	// Rate is how many sessions one client address may start (zero: no limit).
	Rate redis_rate.Limit
	// TTL is a session's lifetime (DefaultTTL when zero).
	TTL time.Duration
	// CostBudget is what a session may spend at once, as the cost budget counts it.
	CostBudget int
}

// Start starts a guest session for ctx's caller, counted against its address' rate:
// RATE_LIMITED, with retryAfterMs, past it.
func (s *Service) Start(ctx context.Context) (*seatflow.GuestSession, error) {
	if err := rdb.Allow(ctx, s.Limiter, s.Keys.GuestSessionRate(auth.ClientAddr(ctx)), s.Rate, "guest session rate",
		"too many guest sessions started from this address"); err != nil {
		return nil, err
	}
	ttl := s.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	tok, g, err := s.Auth.IssueGuest(min(ttl, s.Auth.MaxTTL()))
	if err != nil {
		return nil, err
	}
	return &seatflow.GuestSession{Token: tok, ExpiresAt: g.ExpiresAt, CostBudget: s.CostBudget}, nil
}
