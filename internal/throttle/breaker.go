package throttle

import (
	"context"
	"errors"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/sony/gobreaker/v2"
)

// awayFor is how long, after Redis failed a spend, the instance budgets on its own
// without asking Redis again; then one spend asks it (gobreaker's half-open state) and
// the others stay local until it answers. Without it every request waited for its own
// failed dial (a silent Redis: the whole dial or read timeout) before falling back, so a
// Redis gone quiet made every catalog read as slow as the timeout.
const awayFor = time.Second

// errAway is a spend not sent to Redis: it failed within awayFor, or a spend is asking it
// whether it is back.
var errAway = errors.New("the budget's Redis is away")

// allowN asks Redis for n points of the client's bucket, unless Redis was found away
// (errAway). A spend whose own context ended says nothing about Redis.
func (b *Budget) allowN(ctx context.Context, key string, limit redis_rate.Limit, n int) (*redis_rate.Result, error) {
	b.breakerOnce.Do(func() {
		b.breaker = gobreaker.NewCircuitBreaker[*redis_rate.Result](gobreaker.Settings{
			Name:         "cost-budget",
			MaxRequests:  1,
			Timeout:      awayFor,
			ReadyToTrip:  func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= 1 },
			IsSuccessful: func(err error) bool { var g callerGone; return err == nil || errors.As(err, &g) },
		})
	})
	res, err := b.breaker.Execute(func() (*redis_rate.Result, error) {
		res, err := b.Limiter.AllowN(ctx, key, limit, n)
		if err != nil && ctx.Err() != nil {
			return nil, callerGone{err}
		}
		return res, err
	})
	var g callerGone
	switch {
	case errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests):
		return nil, errAway
	case errors.As(err, &g):
		return nil, g.err
	}
	return res, err
}

// callerGone is a spend that failed because its own context ended: not Redis' failure.
type callerGone struct{ err error }

func (g callerGone) Error() string { return g.err.Error() }
