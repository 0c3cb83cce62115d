package httpapi

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// apqCache keeps automatic persisted queries in Redis for a day, shared by every instance.
type apqCache struct {
	rdb    redis.UniversalClient
	prefix string
}

const apqTTL = 24 * time.Hour

func (c apqCache) Get(ctx context.Context, key string) (string, bool) {
	s, err := c.rdb.Get(ctx, c.prefix+key).Result()
	return s, err == nil
}

func (c apqCache) Add(ctx context.Context, key string, value string) {
	c.rdb.Set(ctx, c.prefix+key, value, apqTTL)
}
