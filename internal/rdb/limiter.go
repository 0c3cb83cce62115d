package rdb

import (
	"context"
	"strings"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"seatflow"
)

// Allow spends one request of rate at key with l; a zero rate is no limit. A refusal is
// RATE_LIMITED, its message refused followed by the wait, which extensions.retryAfterMs
// also carries; what names the limit in the error of an unreachable Redis.
func Allow(ctx context.Context, l *redis_rate.Limiter, key string, rate redis_rate.Limit, what, refused string) error {
	if rate.IsZero() {
		return nil
	}
	res, err := l.Allow(ctx, key, rate)
	if err != nil {
		return Classify(what, err)
	}
	if res.Allowed == 0 {
		e := seatflow.Errorf(seatflow.ERATELIMITED, "%s, try again in %s", refused, res.RetryAfter.Round(time.Second))
		e.Extensions = map[string]any{"retryAfterMs": res.RetryAfter.Milliseconds()}
		return e
	}
	return nil
}

// NewLimiter returns a go-redis/redis_rate limiter over c whose keys are exactly the keys
// it is given. redis_rate puts its own "rate:" in front of every key, which would put the
// counters outside the deployment's prefix (two deployments sharing a Redis would collide);
// the client it is given takes that "rate:" off again, so a key built by package keys
// (already under the prefix) is the key in Redis.
//
// Its scripts' EVALSHAs share round trips (Batch): the first request of every client
// charges its cost budget in Redis, and in an on-sale queue's opening rush every join is a
// new client's; unbatched, those round trips were a fifth of the instance's CPU in the
// queue bench's joins (pprof: throttle.Budget.Spend 21 %, nearly all of it the syscalls).
func NewLimiter(c redis.UniversalClient) *redis_rate.Limiter {
	return redis_rate.NewLimiter(rateClient{UniversalClient: c, batch: new(Batch)})
}

// rateLibPrefix is what redis_rate (v10) prepends to every key.
const rateLibPrefix = "rate:"

// rateClient is c with redis_rate's "rate:" taken off the keys of its scripts and deletes.
type rateClient struct {
	redis.UniversalClient
	batch *Batch
}

func unrate(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = strings.TrimPrefix(k, rateLibPrefix)
	}
	return out
}

func (c rateClient) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return c.UniversalClient.Eval(ctx, script, unrate(keys), args...)
}

func (c rateClient) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return c.batch.EvalSha(ctx, c.UniversalClient, sha1, unrate(keys), args...)
}

func (c rateClient) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return c.UniversalClient.EvalRO(ctx, script, unrate(keys), args...)
}

func (c rateClient) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return c.UniversalClient.EvalShaRO(ctx, sha1, unrate(keys), args...)
}

func (c rateClient) Del(ctx context.Context, keys ...string) *redis.IntCmd {
	return c.UniversalClient.Del(ctx, unrate(keys)...)
}
