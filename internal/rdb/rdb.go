// Package rdb opens SeatFlow's Redis clients (one server or a Cluster) and classifies
// Redis errors, the one place that knows which of them a retry may cure. It owns no key
// and no data (package keys names the keys; seats, cache and booking own what is in them).
package rdb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/internal/telemetry"
)

// Open returns a client of the Redis Cluster nodes (host:port,...) when cluster is set,
// otherwise of the server at url (redis://host:port/db).
func Open(url, cluster string) (redis.UniversalClient, error) {
	if cluster != "" {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(cluster, ","), DialerRetries: 1})
		c.AddHook(slotReloader{c})
		return c, nil
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redis url: %w", err)
	}
	opt.DialerRetries = 1
	return redis.NewClient(opt), nil
}

// slotReloader makes a Cluster client reload its slot map when a command cannot reach a
// node. go-redis reloads it only on MOVED, ASK and READONLY answers: after a master dies
// and its replica is promoted, no node answers those to a client that keeps dialling the
// dead master, so every command of its slots failed until the old master came back.
// ReloadState is lazy and coalesced (one reload at a time, 200 ms apart at most).
type slotReloader struct{ c *redis.ClusterClient }

func (r slotReloader) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r slotReloader) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		r.check(err)
		return err
	}
}

func (r slotReloader) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		r.check(err)
		return err
	}
}

// check reloads the slot map after an error that is not Redis' answer (redis.Nil and
// script errors are answers) nor the caller's cancellation: a node could not be reached.
func (r slotReloader) check(err error) {
	var rerr redis.Error
	if err == nil || errors.As(err, &rerr) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return
	}
	r.c.ReloadState(context.Background())
}

// Classify names a failed Redis operation op and, when Redis could not be reached or
// answer in time (a network timeout or the request's deadline) or answered that a Cluster
// is failing over (a retry may succeed), makes it SERVICE_UNAVAILABLE: seat state has no
// other source, so a caller must not guess. Errors Redis itself returned (a script bug),
// cancellations by the caller and redis.Nil stay as they are; nil is nil.
func Classify(op string, err error) error {
	var rerr redis.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &rerr) && transient(rerr):
		return seatflow.Unavailable(op, err)
	case errors.Is(err, context.Canceled), errors.As(err, &rerr):
		return fmt.Errorf("%s: %w", op, err)
	}
	return seatflow.Unavailable(op, err)
}

// transientPrefixes start the errors Redis answers while a Cluster fails over (a master
// lost, its replica not yet promoted or not yet known to the client: a redirect the client
// could not follow within its redirect limit included) or a server loads its data: a
// retry in a moment may succeed.
var transientPrefixes = []string{"CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "LOADING", "READONLY", "MOVED ", "ASK "}

func transient(err redis.Error) bool {
	for _, p := range transientPrefixes {
		if strings.HasPrefix(err.Error(), p) {
			return true
		}
	}
	return false
}

// Instrument gives every command and script of c a client span (redisotel) when traces
// are recorded: the command's name, never its arguments (keys and values hold tokens and
// users' ids), no span for dials, none for the caller's source location, and none under
// a parent the sampler left out (telemetry.TracerProvider).
func Instrument(c redis.UniversalClient) error {
	if !telemetry.Enabled() || c == nil {
		return nil
	}
	if err := redisotel.InstrumentTracing(c, redisotel.WithTracerProvider(telemetry.TracerProvider()),
		redisotel.WithDBStatement(false), redisotel.WithCallerEnabled(false),
		redisotel.WithDialFilter(true)); err != nil {
		return fmt.Errorf("trace redis: %w", err)
	}
	return nil
}
