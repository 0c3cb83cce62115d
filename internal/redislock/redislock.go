// Package redislock is a lock held in Redis across instances: SET NX PX with a random
// token, released by a compare-and-delete script so a holder whose lock expired never
// deletes the lock someone else took since. It guards the catalog rebuild, a showtime's
// seat-hash init and the reconciler run.
package redislock

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed unlock.lua
var unlockSource string

// UnlockScript deletes a lock only if it still holds the caller's token; its KEYS, ARGV
// and reply are in unlock.lua.
var UnlockScript = redis.NewScript(unlockSource)

// Token returns a random lock token.
func Token() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Lock is a held lock.
type Lock struct {
	rdb   redis.UniversalClient
	key   string
	token string
}

// TryAcquire takes the lock at key for ttl; ok is false when someone else holds it.
func TryAcquire(ctx context.Context, rdb redis.UniversalClient, key string, ttl time.Duration) (*Lock, bool, error) {
	l := &Lock{rdb: rdb, key: key, token: Token()}
	ok, err := rdb.SetNX(ctx, key, l.token, ttl).Result()
	if err != nil || !ok {
		return nil, false, err
	}
	return l, true, nil
}

// Acquire waits for the lock, polling every 10 ms, until ctx ends.
func Acquire(ctx context.Context, rdb redis.UniversalClient, key string, ttl time.Duration) (*Lock, error) {
	for {
		l, ok, err := TryAcquire(ctx, rdb, key, ttl)
		if err != nil || ok {
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Release frees the lock if it is still this holder's.
func (l *Lock) Release(ctx context.Context) error {
	return UnlockScript.Run(ctx, l.rdb, []string{l.key}, l.token).Err()
}
