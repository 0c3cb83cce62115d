package live

import (
	"context"
	"log/slog"
	"sync"

	"github.com/redis/go-redis/v9"
)

// subscriptions sends the hub's SUBSCRIBE and UNSUBSCRIBE commands to Redis in the order
// they were queued, from a goroutine of their own: a watcher joining or leaving never
// waits for Redis under a lock the delivery path takes, and the hub still decides the
// order of one channel's commands (it queues them under the channel's shard lock). A
// command queued before Run starts waits for it; one queued after Run ended is dropped.
type subscriptions struct {
	log   *slog.Logger
	mu    sync.Mutex
	queue []subscription
	ready chan struct{} // signalled when the queue is no longer empty
}

type subscription struct {
	channel   string
	subscribe bool // else unsubscribe
}

func (q *subscriptions) init(log *slog.Logger) {
	q.log, q.ready = log, make(chan struct{}, 1)
}

func (q *subscriptions) subscribe(channel string)   { q.push(subscription{channel, true}) }
func (q *subscriptions) unsubscribe(channel string) { q.push(subscription{channel, false}) }

func (q *subscriptions) push(s subscription) {
	q.mu.Lock()
	q.queue = append(q.queue, s)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// run sends the queued commands on ps until ctx ends.
func (q *subscriptions) run(ctx context.Context, ps *redis.PubSub) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-q.ready:
		}
		q.mu.Lock()
		cmds := q.queue
		q.queue = nil
		q.mu.Unlock()
		for _, c := range cmds {
			var err error
			if c.subscribe {
				err = ps.Subscribe(ctx, c.channel)
			} else {
				err = ps.Unsubscribe(ctx, c.channel)
			}
			if err != nil && ctx.Err() == nil {
				q.log.Warn("live: subscription", "channel", c.channel, "subscribe", c.subscribe, "err", err)
			}
		}
	}
}
