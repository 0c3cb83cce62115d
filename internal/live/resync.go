package live

import (
	"context"
	"fmt"
	"time"

	"seatflow"
)

// resyncShow reads one snapshot of a show, retrying while Redis is unreachable, and puts
// it in place of the waiting deltas of each of ws (watchers marked resyncing for it).
func (h *Hub) resyncShow(s *show, ws []*watcher) {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), confirmTimeout)
		ev, err := h.snapshot(ctx, s)
		cancel()
		if err == nil {
			h.mu.Lock()
			for _, w := range ws {
				if !w.closed {
					w.sink.Drop() // superseded by the snapshot
					h.settle(w, ev, ReasonReconnect)
				}
			}
			h.mu.Unlock()
			return
		}
		h.log.Warn("live: read seat-map snapshot", "showtime", s.id, "reason", ReasonReconnect, "err", err)
		select {
		case <-h.done:
			return
		case <-time.After(retryDelay):
		}
	}
}

// startResync marks a watcher as waiting for a fresh snapshot and reads it on a goroutine
// that lives only until the snapshot is in; h.mu is held.
func (h *Hub) startResync(w *watcher, reason string) {
	if w.closed {
		return
	}
	if w.resyncing {
		// The snapshot under way may have been read before what prompted this (a lost
		// pub/sub connection, an unreadable delta): read another one after it.
		if w.again == "" {
			w.again = reason
		}
		return
	}
	w.resyncing, w.reason, w.pending = true, reason, nil
	go h.resync(w)
}

// resync waits until the watcher's client has taken something from a full channel (a
// slow client gets its snapshot when it catches up), reads the snapshot, retrying while
// Redis is unreachable, and puts it in place of the deltas still waiting.
func (h *Hub) resync(w *watcher) {
	for w.sink.Full() {
		if !h.pause(w, slowPoll) {
			return
		}
	}
	for {
		ev, err := h.snapshot(w.ctx, w.show)
		if err == nil {
			h.mu.Lock()
			if !w.closed {
				w.sink.Drop() // superseded by the snapshot
				h.settle(w, ev, w.reason)
			}
			h.mu.Unlock()
			return
		}
		h.log.Warn("live: read seat-map snapshot", "showtime", w.show.id, "reason", w.reason, "err", err)
		if !h.pause(w, retryDelay) {
			return
		}
	}
}

// pause waits d unless the watcher's subscription or the hub ends first.
func (h *Hub) pause(w *watcher, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.ctx.Done():
		return false
	case <-h.done:
		return false
	case <-t.C:
		return true
	}
}

// settle puts a snapshot in the watcher's (empty) channel and then the deltas that came
// while it was read, those newer than it; h.mu is held.
func (h *Hub) settle(w *watcher, ev *seatflow.SeatMapEvent, reason string) {
	if w.closed {
		return
	}
	// The deltas that came while no snapshot was known have no count yet: they follow it.
	w.show.learn(ev)
	for _, d := range w.pending {
		w.show.track(d)
	}
	if w.sink.Full() { // it was drained and only the hub puts; were it full, read again
		w.resyncing = false
		h.startResync(w, reason)
		return
	}
	snapshotsSent.WithLabelValues(reason).Inc() // counted before the client can see it
	w.sink.Put(ev)
	w.last = ev.Version
	w.resyncing = false
	pending := w.pending
	w.pending = nil
	if again := w.again; again != "" {
		w.again = ""
		h.startResync(w, again)
		return
	}
	for _, d := range pending {
		h.offer(w, d)
	}
}

// snapshot reads every seat of the show and the version at one instant. Watchers asking
// at once (a crowd connecting, a resync after a lost connection) share a read begun after
// they asked; the event is read-only.
func (h *Hub) snapshot(ctx context.Context, s *show) (*seatflow.SeatMapEvent, error) {
	return h.snapshots.Do(ctx, s.id, func(ctx context.Context) (*seatflow.SeatMapEvent, error) {
		ctx, cancel := context.WithTimeout(ctx, confirmTimeout)
		defer cancel()
		m, err := h.store.Map(ctx, s.id, s.hall)
		if err != nil {
			return nil, fmt.Errorf("live seat map: %w", err)
		}
		return &seatflow.SeatMapEvent{Kind: seatflow.EventSnapshot, ShowtimeID: s.id, Version: m.Version,
			Available: m.Available, Seats: m.Seats}, nil
	})
}
