// Package rdb opens SeatFlow's Redis clients (one server or a Cluster) and classifies
// Redis errors, the one place that knows which of them a retry may cure. It owns no key
// and no data (package keys names the keys; seats, cache and booking own what is in them).
package rdb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"seatflow"
)

// Open returns a client of the Redis Cluster nodes (host:port,...) when cluster is set,
// otherwise of the server at url (redis://host:port/db).
func Open(url, cluster string) (redis.UniversalClient, error) {
	if cluster != "" {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(cluster, ","), DialerRetries: 1}), nil
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redis url: %w", err)
	}
	opt.DialerRetries = 1
	return redis.NewClient(opt), nil
}

// Classify names a failed Redis operation op and, when Redis could not be reached or
// answer in time (a retry may succeed), makes it SERVICE_UNAVAILABLE: seat state has no
// other source, so a caller must not guess. Errors Redis itself returned (a script bug),
// cancellations by the caller and redis.Nil stay as they are; nil is nil.
func Classify(op string, err error) error {
	var rerr redis.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.As(err, &rerr):
		return fmt.Errorf("%s: %w", op, err)
	}
	return seatflow.Unavailable(op, err)
}
