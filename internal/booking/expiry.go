package booking

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/ent/order"
	"seatflow/internal/background"
	"seatflow/internal/database"
	"seatflow/internal/rdb"
)

// expiryBatch bounds the due entries one pass claims.
const expiryBatch = 100

//go:embed lua/claim.lua
var claimSrc string

// claimScript takes the due orders out of the expiry queue; its KEYS, ARGV and reply
// are in lua/claim.lua.
var claimScript = redis.NewScript(claimSrc)

// ExpiryQueue is the delay queue of pending orders (docs/DESIGN.md "Orders"): member
// the order id, score its expiry in ms. It only says when to look at an order; the order's
// row in MySQL decides what is due.
type ExpiryQueue struct {
	RDB redis.UniversalClient
	Key string
}

// Add puts an order in the queue at its expiry, or moves it there.
func (q *ExpiryQueue) Add(ctx context.Context, orderID int, at time.Time) error {
	return rdb.Classify("expiry queue: add", q.add(ctx, q.RDB, orderID, at).Err())
}

// add sends Add's command through c (a pipeline, say).
func (q *ExpiryQueue) add(ctx context.Context, c redis.Cmdable, orderID int, at time.Time) *redis.IntCmd {
	return c.ZAdd(ctx, q.Key, redis.Z{Score: float64(at.UnixMilli()), Member: strconv.Itoa(orderID)})
}

// Remove takes an order out of the queue (it was paid or ended).
func (q *ExpiryQueue) Remove(ctx context.Context, orderID int) error {
	return rdb.Classify("expiry queue: remove", q.RDB.ZRem(ctx, q.Key, strconv.Itoa(orderID)).Err())
}

// enqueue puts an order in the expiry queue at its expiry for a caller that goes on
// whatever happens: a failure is reported (package background), and an order missing
// from the queue is found by the reconciler's expired-order scan.
func (s *Service) enqueue(ctx context.Context, orderID int, at time.Time) {
	if err := s.queue().Add(ctx, orderID, at); err != nil {
		background.Failed(ctx, s.Log, background.Enqueue, err, "order", orderID)
	}
}

// dequeue takes a paid or ended order out of the expiry queue, reporting a failure; a
// stale entry only costs the worker a look at the order's row.
func (s *Service) dequeue(ctx context.Context, orderID int) {
	if err := s.queue().Remove(ctx, orderID); err != nil {
		background.Failed(ctx, s.Log, background.Dequeue, err, "order", orderID)
	}
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
		if err := background.Pass(ctx, background.ExpiryBatch, func(ctx context.Context) error {
			_, err := s.ExpireDue(ctx)
			return err
		}); err != nil {
			background.Failed(ctx, s.Log, background.ExpiryPass, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// ExpireDue claims the orders due by now from the delay queue and expires them; it returns
// how many it expired. An order extended meanwhile goes back at its new expiry; one that
// failed goes back to be retried a minute later (both reported: package background).
func (s *Service) ExpireDue(ctx context.Context) (int, error) {
	now := s.Now.Now()
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
			background.Failed(ctx, s.Log, background.ExpireOrder, err, "order", id)
			s.enqueue(ctx, id, now.Add(time.Minute))
		case done:
			expired++
		default:
			// Extended meanwhile (its Add may have raced the claim): requeue at the new expiry.
			o, err := s.DB.Order.Get(ctx, id)
			if err != nil {
				background.Failed(ctx, s.Log, background.Enqueue, fmt.Errorf("read the order to requeue: %w", err), "order", id)
			} else if o.Status == seatflow.OrderPending {
				s.enqueue(ctx, id, o.ExpiresAt)
			}
		}
	}
	return expired, nil
}

// RequeuePending puts every pending order in the delay queue at its expiry, and returns
// how many. A seat Redis that starts empty (embedded mode's, at every start) has lost the
// queue, and the worker expires only what the queue holds: without this, a hold that was
// pending at a restart would wait for the reconciler.
func (s *Service) RequeuePending(ctx context.Context) (int, error) {
	pending, err := s.DB.Order.Query().Where(order.StatusEQ(seatflow.OrderPending)).
		Select(order.FieldID, order.FieldExpiresAt).All(ctx)
	if err != nil {
		return 0, fmt.Errorf("pending orders: %w", database.Classify(err))
	}
	q := s.queue()
	for _, o := range pending {
		if err := q.Add(ctx, o.ID, o.ExpiresAt); err != nil {
			return 0, err
		}
	}
	return len(pending), nil
}
