package live

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"seatflow"
)

// Watcher is one subscription: its sink is where its events go. The hub puts events in
// it without ever blocking, under the show's lock, so no goroutine per watcher is needed;
// a sink told that a DELTA is due takes it with Next when it can write it.
type Watcher struct {
	show    *show
	ctx     context.Context
	sink    Sink
	release func() // gives the connection's subscription slot back; safe to call twice

	// due is set when the sink is told of a DELTA (Sink.Due) and cleared by Next: a
	// watcher is told once, however many writes of its show come before it takes it.
	due   atomic.Bool
	dueAt atomic.Int64 // unix ns at which the sink was last told

	// Under mu, which Next takes without the show's lock (and the show's paths take
	// inside it): the version of the last event given to the sink, and whether a
	// snapshot is on its way (no DELTA is given meanwhile).
	mu        sync.Mutex
	last      int
	resyncing bool

	// Under the show's mu.
	reason string // why the snapshot on its way is read
	again  string // a resync asked for while one was under way: done after it
	closed bool

	slow atomic.Bool // counted slow (it did not take a DELTA in time) since it last took one
}

// Watch subscribes to the live seat map of a showtime: the channel first carries a
// SNAPSHOT of every seat of hall, then DELTA events in version order, and a fresh SNAPSHOT
// whenever a delta may have been missed. It closes when ctx ends or the hub stops. At
// most the number of subscriptions allowed by LimitSubscriptions may be open under ctx.
func (h *Hub) Watch(ctx context.Context, showID int, hall *seatflow.Hall) (<-chan *seatflow.SeatMapEvent, error) {
	sink := newChanSink(h.buffer)
	if err := h.WatchWith(ctx, showID, hall, sink); err != nil {
		return nil, err
	}
	return sink.ch, nil
}

// WatchWith is Watch with the events put into sink instead of a channel: a transport can
// deliver them itself, with no goroutine waiting on a channel per watcher. It returns
// once the first SNAPSHOT is in sink; sink is closed when ctx ends or the hub stops (not
// when WatchWith fails). The watch keeps ctx, and what it holds, while it lasts.
func (h *Hub) WatchWith(ctx context.Context, showID int, hall *seatflow.Hall, sink Sink) error {
	release, err := acquireSubscription(ctx)
	if err != nil {
		return err
	}
	// Register first (the show keeps the deltas that come), wait for Redis to confirm, then
	// read the snapshot: a change made after the snapshot always reaches the show after
	// it, and the watcher then gets it as a DELTA.
	w, err := h.join(ctx, showID, hall, sink, release)
	if err != nil {
		release()
		return err
	}
	ev, err := h.ready(ctx, w)
	s := w.show
	if err != nil {
		s.mu.Lock()
		w.sink = discard{} // the caller learns of the failure from the error, not a closed sink
		s.mu.Unlock()
		h.leave(w)
		return err
	}
	s.mu.Lock()
	h.settle(w, ev, ReasonInitial)
	s.mu.Unlock()
	context.AfterFunc(ctx, func() { h.leave(w) })
	return nil
}

// join registers a watcher, subscribing to the show's channel if it is the first one.
func (h *Hub) join(ctx context.Context, showID int, hall *seatflow.Hall, sink Sink, release func()) (*Watcher, error) {
	select {
	case <-h.started:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(confirmTimeout):
		return nil, errNotRunning
	}
	channel := h.keys.Events(showID)
	sh := h.shardOf(channel)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if h.ended.Load() {
		return nil, errNotRunning
	}
	s := sh.shows[channel]
	if s == nil {
		s = &show{hub: h, id: showID, channel: channel, hall: hall, index: make(map[int]int, len(hall.Seats)),
			watchers: map[*Watcher]struct{}{}, behind: map[*Watcher]struct{}{}, confirmed: make(chan struct{})}
		for i, seat := range hall.Seats {
			s.index[seat.ID] = i
		}
		sh.shows[channel] = s
		sh.pending[channel]++
		showsWatched.Inc()
		// Queued under the shard's lock, so subscribes and unsubscribes of one channel
		// reach Redis in the order the hub decided them, and sent off it. go-redis keeps
		// the channel in its set even if the write fails and subscribes again when it
		// reconnects; the confirmation wait in ready covers both cases.
		h.subs.subscribe(channel)
	}
	var once sync.Once
	w := &Watcher{show: s, ctx: ctx, sink: sink,
		release: func() { once.Do(release) }, resyncing: true, reason: ReasonInitial}
	s.mu.Lock()
	s.watchers[w] = struct{}{}
	s.mu.Unlock()
	activeSubscriptions.Inc()
	return w, nil
}

// ready waits until the show's subscription is confirmed and reads the first snapshot.
func (h *Hub) ready(ctx context.Context, w *Watcher) (*seatflow.SeatMapEvent, error) {
	timer := time.NewTimer(confirmTimeout)
	defer timer.Stop()
	select {
	case <-w.show.confirmed:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-h.done:
		return nil, errNotRunning
	case <-timer.C:
		return nil, errNotRunning
	}
	return h.snapshot(ctx, w.show)
}

// leave unregisters a watcher (its subscription ended), unsubscribing from the show's
// channel after the last one.
func (h *Hub) leave(w *Watcher) {
	s := w.show
	sh := h.shardOf(s.channel)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.closed {
		return
	}
	h.closeWatcher(w, nil)
	if len(s.watchers) > 0 || sh.shows[s.channel] != s {
		return
	}
	delete(sh.shows, s.channel)
	s.gone = true
	s.stopFlushing()
	showsWatched.Dec()
	h.subs.unsubscribe(s.channel)
}

// closeWatcher takes a watcher out of its show, closes its sink (with why, when the
// server ends the watch) and gives its subscription slot back; the show's mu is held.
func (h *Hub) closeWatcher(w *Watcher, why error) {
	w.closed = true
	w.mu.Lock()
	w.resyncing = true // no DELTA is given any more
	w.mu.Unlock()
	delete(w.show.watchers, w)
	delete(w.show.behind, w)
	activeSubscriptions.Dec()
	// The slot goes back before the channel closes, so a client that sees the end may
	// subscribe again at once.
	w.release()
	w.sink.Close(why)
}

// setResyncing marks the watcher as waiting for a snapshot (no DELTA until it is in).
func (w *Watcher) setResyncing(reason string) {
	w.mu.Lock()
	w.resyncing = true
	w.mu.Unlock()
	w.reason = reason
}
