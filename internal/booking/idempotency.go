package booking

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/order"
	"seatflow/internal/background"
	"seatflow/internal/database"
	"seatflow/internal/rdb"
)

// Idempotency marker values and lifetimes: inFlight while the first request runs (the TTL
// bounds how long a crashed request can block its key), then the order id for a day, so a
// repeat finds its order without a database lookup.
const (
	inFlight      = "in-flight"
	inFlightTTL   = 30 * time.Second
	rememberedTTL = 24 * time.Hour
)

// markInFlight claims the user's idempotency key for this request; false means another
// request with the key ran or runs.
func (s *Service) markInFlight(ctx context.Context, userID, key string) (bool, error) {
	first, err := s.RDB.SetNX(ctx, s.Keys.Idempotency(userID, key), inFlight, inFlightTTL).Result()
	if err != nil {
		return false, rdb.Classify("hold seats: mark in flight", err)
	}
	return first, nil
}

// remember records the order the key made; forget lets the key be used again (failures
// are not remembered: a retry really retries).
func (s *Service) remember(ctx context.Context, c redis.Cmdable, userID, key string, orderID int) {
	c.Set(ctx, s.Keys.Idempotency(userID, key), strconv.Itoa(orderID), rememberedTTL)
}

// settle puts a new order in the expiry queue and remembers it under its idempotency
// key, in one round trip (two were a sixth of a hold's Redis round trips); a failure to
// queue it is reported as enqueue's is.
func (s *Service) settle(ctx context.Context, userID, key string, o *seatflow.Order) {
	var queued *redis.IntCmd
	_, _ = s.RDB.Pipelined(ctx, func(p redis.Pipeliner) error {
		queued = s.queue().add(ctx, p, o.ID, *o.ExpiresAt)
		s.remember(ctx, p, userID, key, o.ID)
		return nil
	})
	if err := queued.Err(); err != nil {
		background.Failed(ctx, s.Log, background.Enqueue, rdb.Classify("expiry queue: add", err), "order", o.ID)
	}
}

func (s *Service) forget(ctx context.Context, userID, key string) {
	s.RDB.Del(ctx, s.Keys.Idempotency(userID, key))
}

// repeated answers a request whose idempotency marker exists: the order the first request
// made, or IN_PROGRESS while it still runs.
func (s *Service) repeated(ctx context.Context, userID, key string) (*seatflow.Order, error) {
	inProgress := seatflow.Errorf(seatflow.EINPROGRESS, "the same request is already being processed")
	v, err := s.RDB.Get(ctx, s.Keys.Idempotency(userID, key)).Result()
	if errors.Is(err, redis.Nil) || v == inFlight {
		return nil, inProgress
	} else if err != nil {
		return nil, rdb.Classify("hold seats: read idempotency marker", err)
	}
	if id, err := strconv.Atoi(v); err == nil {
		o, err := s.DB.Order.Query().Where(order.ID(id), order.UserID(userID), order.IdempotencyKey(key)).Only(ctx)
		if err == nil {
			return s.withSeats(ctx, o)
		}
	}
	// The marker names no order of this user and key: look the key up, else it is in flight.
	if o, err := s.byIdempotencyKey(ctx, userID, key); o != nil || err != nil {
		return o, err
	}
	return nil, inProgress
}

// byIdempotencyKey returns the user's order made with key, nil when there is none.
func (s *Service) byIdempotencyKey(ctx context.Context, userID, key string) (*seatflow.Order, error) {
	o, err := s.DB.Order.Query().Where(order.UserID(userID), order.IdempotencyKey(key)).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("find order by idempotency key: %w", database.Classify(err))
	}
	return s.withSeats(ctx, o)
}
