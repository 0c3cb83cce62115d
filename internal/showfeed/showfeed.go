// Package showfeed keeps an instance's feeds by showtime: a showtime's first member makes
// its feed and starts the feed's run, the member whose leaving empties it stops the run
// and waits for it to end. What a feed pushes, and to whom, is its owner's (the queue's
// tickets, the door's check-in counts).
package showfeed

import (
	"context"
	"sync"
)

// Registry is the instance's feeds of one kind, one per showtime with members. Its zero
// value is ready.
type Registry[F any] struct {
	mu     sync.Mutex
	byShow map[int]*Feed[F]
}

// Feed is one showtime's feed in a Registry: the value its owner keeps the members in
// and the run that pushes to them.
type Feed[F any] struct {
	Value  F
	showID int
	stop   context.CancelFunc
	done   chan struct{}
}

// Join adds a member to showtime showID's feed with add, called with the registry
// locked. When the showtime has no feed, open makes its value and run starts in a
// goroutine of its own, to go on until its context ends.
func (r *Registry[F]) Join(showID int, open func() F, run func(context.Context, F), add func(F)) *Feed[F] {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byShow == nil {
		r.byShow = map[int]*Feed[F]{}
	}
	f := r.byShow[showID]
	if f == nil {
		ctx, cancel := context.WithCancel(context.Background())
		f = &Feed[F]{Value: open(), showID: showID, stop: cancel, done: make(chan struct{})}
		r.byShow[showID] = f
		go func() {
			defer close(f.done)
			run(ctx, f.Value)
		}()
	}
	add(f.Value)
	return f
}

// Leave takes a member out of f with remove, called with the registry locked, which
// reports whether f has no member left. Then f leaves the registry (a later Join makes a
// new feed), and Leave returns once f's run has ended.
func (r *Registry[F]) Leave(f *Feed[F], remove func(F) (empty bool)) {
	r.mu.Lock()
	last := remove(f.Value)
	if last && r.byShow[f.showID] == f {
		delete(r.byShow, f.showID)
	}
	r.mu.Unlock()
	if last {
		f.stop()
		<-f.done
	}
}
