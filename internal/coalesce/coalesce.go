// Package coalesce shares one call among concurrent callers asking for the same key, like
// x/sync/singleflight, with one difference that matters for reads that must be current: a
// caller is never answered by a call that began before it arrived. A caller that finds a
// call under way waits for the one queued after it, which every caller arriving meanwhile
// shares. N concurrent callers cost at most two calls, each answer as new as its caller.
package coalesce

import (
	"context"
	"sync"
)

// Group coalesces calls by key. The zero Group is ready to use.
type Group[K comparable, V any] struct {
	mu      sync.Mutex
	flights map[K]*flight[V]
}

// flight is the call under way for one key and the one queued after it.
type flight[V any] struct {
	next *call[V]
}

type call[V any] struct {
	done chan struct{}
	v    V
	err  error
}

// Do returns fn's result for key from a call that started after Do was called, shared
// with the callers that arrived while it was queued. fn runs with a context of its own
// (the shared call is no one caller's): ctx only bounds how long this caller waits.
func (g *Group[K, V]) Do(ctx context.Context, key K, fn func(context.Context) (V, error)) (V, error) {
	g.mu.Lock()
	if g.flights == nil {
		g.flights = map[K]*flight[V]{}
	}
	fl := g.flights[key]
	var c *call[V]
	switch {
	case fl == nil: // nothing under way: run now
		c = &call[V]{done: make(chan struct{})}
		g.flights[key] = &flight[V]{}
		g.mu.Unlock()
		go g.run(key, c, fn)
	case fl.next != nil: // a call is queued: share it
		c = fl.next
		g.mu.Unlock()
	default: // a call is under way: queue the next
		c = &call[V]{done: make(chan struct{})}
		fl.next = c
		g.mu.Unlock()
	}
	select {
	case <-c.done:
		return c.v, c.err
	case <-ctx.Done():
		var zero V
		return zero, ctx.Err()
	}
}

// run performs c, then whichever call was queued behind it, until none is left.
func (g *Group[K, V]) run(key K, c *call[V], fn func(context.Context) (V, error)) {
	for c != nil {
		c.v, c.err = fn(context.Background())
		close(c.done)
		g.mu.Lock()
		fl := g.flights[key]
		c, fl.next = fl.next, nil
		if c == nil {
			delete(g.flights, key)
		}
		g.mu.Unlock()
	}
}
