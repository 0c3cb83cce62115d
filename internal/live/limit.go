package live

import (
	"context"
	"sync"

	"seatflow"
)

type subscriptionLimitKey struct{}

// subscriptionLimit counts the open subscriptions of one websocket connection.
type subscriptionLimit struct {
	mu   sync.Mutex
	open int
	max  int
}

// LimitSubscriptions returns a context under which at most max seat-map subscriptions
// may be open at once; the websocket transport sets it on each connection's context so
// one client cannot make the hub watch everything. max ≤ 0 means no limit.
func LimitSubscriptions(ctx context.Context, max int) context.Context {
	if max <= 0 {
		return ctx
	}
	return context.WithValue(ctx, subscriptionLimitKey{}, &subscriptionLimit{max: max})
}

// acquireSubscription takes one subscription slot of ctx's connection, if it has a
// limit, and returns the function that gives it back (safe to call once).
func acquireSubscription(ctx context.Context) (func(), error) {
	l, _ := ctx.Value(subscriptionLimitKey{}).(*subscriptionLimit)
	if l == nil {
		return func() {}, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= l.max {
		return nil, seatflow.Errorf(seatflow.ERATELIMITED,
			"at most %d live subscriptions per connection: stop one before starting another", l.max)
	}
	l.open++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			l.open--
			l.mu.Unlock()
		})
	}, nil
}
