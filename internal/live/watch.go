package live

import (
	"context"
	"sync"
	"time"

	"seatflow"
)

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
// when WatchWith fails).
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
	if err != nil {
		h.mu.Lock()
		w.sink = discard{} // the caller learns of the failure from the error, not a closed sink
		h.mu.Unlock()
		h.leave(w)
		return err
	}
	h.mu.Lock()
	h.settle(w, ev, ReasonInitial)
	h.mu.Unlock()
	context.AfterFunc(ctx, func() { h.leave(w) })
	return nil
}

// join registers a watcher, subscribing to the show's channel if it is the first one.
func (h *Hub) join(ctx context.Context, showID int, hall *seatflow.Hall, sink Sink, release func()) (*watcher, error) {
	select {
	case <-h.started:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(confirmTimeout):
		return nil, errNotRunning
	}
	channel := h.keys.Events(showID)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ps == nil {
		return nil, errNotRunning
	}
	s := h.shows[channel]
	if s == nil {
		s = &show{id: showID, channel: channel, hall: hall, index: make(map[int]int, len(hall.Seats)),
			watchers: map[*watcher]struct{}{}, behind: map[*watcher]struct{}{}, confirmed: make(chan struct{})}
		for i, seat := range hall.Seats {
			s.index[seat.ID] = i
		}
		h.shows[channel] = s
		h.pending[channel]++
		showsWatched.Inc()
		// Under h.mu, so subscribes and unsubscribes of one channel reach Redis in the
		// order the hub decided them. go-redis keeps the channel in its set even if this
		// write fails and subscribes again when it reconnects; the confirmation wait in
		// ready covers both cases.
		if err := h.ps.Subscribe(ctx, channel); err != nil {
			h.log.Warn("live: subscribe", "channel", channel, "err", err)
		}
	}
	var once sync.Once
	w := &watcher{show: s, ctx: ctx, sink: sink,
		release: func() { once.Do(release) }, resyncing: true, reason: ReasonInitial}
	s.watchers[w] = struct{}{}
	activeSubscriptions.Inc()
	return w, nil
}

// ready waits until the show's subscription is confirmed and reads the first snapshot.
func (h *Hub) ready(ctx context.Context, w *watcher) (*seatflow.SeatMapEvent, error) {
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
func (h *Hub) leave(w *watcher) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.closed {
		return
	}
	h.closeWatcher(w, nil)
	s := w.show
	if len(s.watchers) > 0 || h.shows[s.channel] != s {
		return
	}
	delete(h.shows, s.channel)
	s.stopFlushing()
	showsWatched.Dec()
	if h.ps != nil {
		if err := h.ps.Unsubscribe(context.Background(), s.channel); err != nil {
			h.log.Warn("live: unsubscribe", "channel", s.channel, "err", err)
		}
	}
}

// closeWatcher takes a watcher out of its show, closes its sink (with why, when the
// server ends the watch) and gives its subscription slot back; h.mu is held.
func (h *Hub) closeWatcher(w *watcher, why error) {
	w.closed = true
	delete(w.show.watchers, w)
	delete(w.show.behind, w)
	activeSubscriptions.Dec()
	// The slot goes back before the channel closes, so a client that sees the end may
	// subscribe again at once.
	w.release()
	w.sink.Close(why)
}
