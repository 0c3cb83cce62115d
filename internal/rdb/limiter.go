package rdb

import (
	"context"
	"strings"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// NewLimiter returns a go-redis/redis_rate limiter over c whose keys are exactly the keys
// it is given. redis_rate puts its own "rate:" in front of every key, which would put the
// counters outside the deployment's prefix (two deployments sharing a Redis would collide);
// the client it is given takes that "rate:" off again, so a key built by package keys
// (already under the prefix) is the key in Redis.
func NewLimiter(c redis.UniversalClient) *redis_rate.Limiter {
	return redis_rate.NewLimiter(rateClient{c})
}

// rateLibPrefix is what redis_rate (v10) prepends to every key.
const rateLibPrefix = "rate:"

// rateClient is c with redis_rate's "rate:" taken off the keys of its scripts and deletes.
type rateClient struct{ redis.UniversalClient }

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
	return c.UniversalClient.EvalSha(ctx, sha1, unrate(keys), args...)
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
