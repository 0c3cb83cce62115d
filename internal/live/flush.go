package live

import (
	"time"

	"seatflow"
)

// Coalescing: a show writes DELTAs to its watchers at most once per tick. A change that
// finds the show quiet (its last DELTA written a tick ago or more) is written at once; the changes that
// come within the tick after a write wait for the next one, which gives each watcher one
// DELTA with the latest state of every seat changed since its last event. A watcher whose
// sink is full is skipped, never queued change by change: its changes keep merging into
// the DELTA it gets once it has room. With a tick of 0 every change is written at once.
// All of it under the hub's mu.

// schedule has the show write its changes now, or at the end of the tick of its last
// write.
func (h *Hub) schedule(s *show) {
	if h.tick == 0 {
		h.flush(s)
		return
	}
	if s.timer != nil {
		return // a write is due
	}
	if wait := h.tick - time.Since(s.lastFlush); wait > 0 {
		h.flushAfter(s, wait)
		return
	}
	h.flush(s)
}

// flushAfter has the show write in d.
func (h *Hub) flushAfter(s *show, d time.Duration) {
	s.timer = time.AfterFunc(d, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.shows[s.channel] != s {
			return // its last watcher left, or the hub stopped
		}
		s.timer = nil
		h.flush(s)
	})
}

// flush gives every watcher of the show that is not at its latest version the DELTA from
// its version. Watchers at the same version share one event (and its rendering). The
// watchers that could not take theirs are offered it again after a pause.
func (h *Hub) flush(s *show) {
	events := map[int]*seatflow.SeatMapEvent{}
	wrote := 0
	for w := range s.watchers {
		if h.flushWatcher(s, w, events) {
			wrote++
		}
	}
	if wrote > 0 {
		s.lastFlush = time.Now()
		s.pending.delivered(s, wrote, s.lastFlush)
	} else if len(s.behind) == 0 {
		s.pending = pendingChanges{} // no watcher waits for these changes
	}
	if len(s.behind) > 0 && s.timer == nil {
		h.flushAfter(s, max(h.tick, slowPoll))
	}
}

// flushWatcher puts the watcher's DELTA in its sink, if it has one due and room for it,
// and reports whether it did.
func (h *Hub) flushWatcher(s *show, w *watcher, events map[int]*seatflow.SeatMapEvent) bool {
	if w.closed || w.resyncing || s.state == nil || w.last >= s.stateVersion {
		delete(s.behind, w)
		return false
	}
	if w.last < s.since {
		// Its version is older than what the show knows changes from (its snapshot was
		// read before the show's): only a newer snapshot can bring it up to date.
		h.startResync(w, ReasonGap)
		return false
	}
	ev := events[w.last]
	if ev == nil {
		ev = s.deltaSince(w.last)
		events[w.last] = ev
	}
	if w.sink.Full() || !w.sink.Put(ev) {
		if _, ok := s.behind[w]; !ok {
			s.behind[w] = struct{}{}
			slowSubscribers.Inc()
		}
		return false
	}
	delete(s.behind, w)
	w.last = ev.Version
	deltasDelivered.Inc()
	return true
}

// stopFlushing cancels the show's due write: it has no watcher left.
func (s *show) stopFlushing() {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
}
