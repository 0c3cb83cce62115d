package live

import (
	"context"
	"fmt"
	"time"

	"seatflow"
)

// resyncShow reads one snapshot of a show, retrying while Redis is unreachable, and
// gives it to each of ws (watchers marked resyncing for it).
func (h *Hub) resyncShow(s *show, ws []*Watcher) {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), confirmTimeout)
		ev, err := h.snapshot(ctx, s)
		cancel()
		if err == nil {
			s.mu.Lock()
			for _, w := range ws {
				if !w.closed {
					w.sink.Drop() // superseded by the snapshot
					h.settle(w, ev, ReasonReconnect)
				}
			}
			s.mu.Unlock()
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
// that lives only until the snapshot is in; the show's mu is held.
func (h *Hub) startResync(w *Watcher, reason string) {
	if w.closed {
		return
	}
	w.mu.Lock()
	already := w.resyncing
	w.resyncing = true
	w.mu.Unlock()
	if already {
		// The snapshot under way may have been read before what prompted this (a lost
		// pub/sub connection, an unreadable delta): read another one after it.
		if w.again == "" {
			w.again = reason
		}
		return
	}
	w.reason = reason
	delete(w.show.behind, w)
	go h.resync(w)
}

// resyncOld reads a snapshot for a watcher whose version the show no longer builds
// DELTAs from (Watcher.Next found it and marked it resyncing).
func (h *Hub) resyncOld(w *Watcher) {
	s := w.show
	s.mu.Lock()
	if w.closed {
		s.mu.Unlock()
		return
	}
	w.reason = ReasonGap
	delete(s.behind, w)
	s.mu.Unlock()
	h.resync(w)
}

// resync waits until the watcher's client has taken something from a full sink (a slow
// client gets its snapshot when it catches up), reads the snapshot, retrying while Redis
// is unreachable, and puts it in place of the events still waiting.
func (h *Hub) resync(w *Watcher) {
	for w.sink.Full() {
		if !h.pause(w, slowPoll) {
			return
		}
	}
	s := w.show
	for {
		ev, err := h.snapshot(w.ctx, s)
		if err == nil {
			s.mu.Lock()
			if !w.closed {
				w.sink.Drop() // superseded by the snapshot
				h.settle(w, ev, w.reason)
			}
			s.mu.Unlock()
			return
		}
		h.log.Warn("live: read seat-map snapshot", "showtime", s.id, "reason", w.reason, "err", err)
		if !h.pause(w, retryDelay) {
			return
		}
	}
}

// pause waits d unless the watcher's subscription or the hub ends first.
func (h *Hub) pause(w *Watcher, d time.Duration) bool {
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

// settle puts a snapshot in the watcher's (empty) sink; the changes after it follow as
// the show's next DELTA. The show learns the snapshot's statuses first. The show's mu is
// held; the sink was emptied (Drop) by the caller, or never had anything, so no DELTA
// the sink was told of before can be taken once the watcher is at the snapshot's version.
func (h *Hub) settle(w *Watcher, ev *seatflow.SeatMapEvent, reason string) {
	if w.closed {
		return
	}
	s := w.show
	was, wasKnown := s.stateVersion, s.state != nil
	known := s.learn(ev)
	w.due.Store(false)
	if w.sink.Full() { // it was drained and only the hub puts; were it full, read again
		w.mu.Lock()
		w.resyncing = false
		w.mu.Unlock()
		h.startResync(w, reason)
		return
	}
	snapshotsSent.WithLabelValues(reason).Inc() // counted before the client can see it
	w.mu.Lock()
	w.last, w.resyncing = ev.Version, false
	w.mu.Unlock()
	w.slow.Store(false)
	w.sink.Put(ev)
	switch again := w.again; {
	case again != "":
		w.again = ""
		h.startResync(w, again)
	case !known: // the deltas kept while the statuses were unknown skip a version
		h.lost(s)
	case ev.Version < s.stateVersion || wasKnown && s.stateVersion > was:
		// The snapshot may be newer than the deltas received (the show moved on to it):
		// the other watchers get the seats it changed.
		h.schedule(s)
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
