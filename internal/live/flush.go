package live

import (
	"sync"
	"time"

	"seatflow"
)

// Coalescing: a show writes DELTAs to its watchers at most once per tick. A change that
// finds the show quiet (its last write a tick ago or more) is written at once; the changes
// that come within the tick after a write wait for the next one. A write publishes the
// show's statuses as a generation and tells each watcher's sink that a DELTA is due; the
// sink takes it (Watcher.Next) when its connection can write it, from the watcher's
// version to the newest generation then. So each watcher gets one DELTA per write at
// most, a watcher whose connection is behind (a slow client, or writers busy with
// thousands of others) gets everything that came meanwhile merged into the one it takes,
// never a queue of them, and every DELTA is built once per (generation, version it
// starts from), shared by every watcher at that version. With a tick of 0 every change is
// written at once. All of it under the show's mu but Next, which runs on the connection's
// writer.

// generation is a show's statuses as of one of its writes. It never changes once
// published, but for the DELTAs built from it, each once, under mu.
type generation struct {
	showID    int
	hall      *seatflow.Hall
	version   int
	since     int
	available int
	state     []seatflow.SeatStatus
	changedAt []int

	mu     sync.Mutex
	deltas map[int]*seatflow.SeatMapEvent // by the version they start from
}

// delta is the DELTA that moves a map at version from (≥ since) to the generation's
// version: the seats changed after from, in hall order, each in its latest state. Watchers
// at the same version share it, read-only.
func (g *generation) delta(from int) *seatflow.SeatMapEvent {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ev := g.deltas[from]; ev != nil {
		return ev
	}
	ev := &seatflow.SeatMapEvent{Kind: seatflow.EventDelta, ShowtimeID: g.showID, FromVersion: from,
		Version: g.version, Available: g.available, Seats: []seatflow.SeatState{}}
	for i, v := range g.changedAt {
		if v > from {
			ev.Seats = append(ev.Seats, seatflow.SeatState{ShowtimeID: g.showID, Seat: g.hall.Seats[i], Status: g.state[i]})
		}
	}
	if g.deltas == nil {
		g.deltas = map[int]*seatflow.SeatMapEvent{}
	}
	g.deltas[from] = ev
	return ev
}

// publish makes the show's statuses its newest generation, unless it has them already;
// s.mu is held and the statuses are known.
func (s *show) publish() *generation {
	if g := s.gen.Load(); g != nil && g.version == s.stateVersion && g.since == s.since {
		return g
	}
	g := &generation{showID: s.id, hall: s.hall, version: s.stateVersion, since: s.since, available: s.available,
		state: append([]seatflow.SeatStatus(nil), s.state...), changedAt: append([]int(nil), s.changedAt...)}
	s.gen.Store(g)
	return g
}

// Next returns the DELTA from the watcher's version to its show's newest generation and
// moves the watcher to that version; nil when it has nothing due (or a snapshot is on its
// way, or the watch ended). A sink calls it when it can write the event at once: the
// later, the more changes it carries. It never blocks on the hub.
func (w *Watcher) Next() *seatflow.SeatMapEvent {
	w.due.Store(false) // a write of the show from now on tells the sink again
	g := w.show.gen.Load()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.resyncing || g == nil || w.last >= g.version {
		return nil
	}
	if w.last < g.since {
		// Its version is older than what the show knows changes from (its snapshot was
		// read before the show's): only a newer snapshot can bring it up to date.
		w.resyncing = true
		go w.show.hub.resyncOld(w)
		return nil
	}
	ev := g.delta(w.last)
	w.last = g.version
	w.slow.Store(false)
	deltasDelivered.Inc()
	return ev
}

// version is the version of the last event given to the watcher's sink.
func (w *Watcher) version() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// schedule has the show write its changes now, or at the end of the tick of its last
// write; s.mu is held.
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
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.gone {
			return // its last watcher left, or the hub stopped
		}
		s.timer = nil
		h.flush(s)
	})
}

// flush publishes the show's statuses and tells every watcher that is not at its latest
// version that its DELTA is due; the watchers whose sink could not take it are offered it
// again after a pause. s.mu is held.
func (h *Hub) flush(s *show) {
	if s.state == nil {
		return // every watcher is waiting for a snapshot
	}
	g := s.publish()
	told := 0
	for w := range s.watchers {
		if h.offer(s, w, g) {
			told++
		}
	}
	if told > 0 {
		s.lastFlush = time.Now()
		s.pending.delivered(s, told, s.lastFlush)
	} else if len(s.behind) == 0 {
		s.pending = pendingChanges{} // no watcher waits for these changes
	}
	if len(s.behind) > 0 && s.timer == nil {
		h.flushAfter(s, max(h.tick, slowPoll))
	}
}

// offer tells the watcher's sink that its DELTA to g is due, if it has one and was not
// told already, and reports whether it did. A watcher told more than slowAfter ago that
// has not taken its DELTA yet is counted slow (once until it takes one): writers busy
// with thousands of watchers in a burst leave many a tick or two behind, which is no
// client's fault; one whose sink has no room is counted at once and offered it again
// later.
func (h *Hub) offer(s *show, w *Watcher, g *generation) bool {
	w.mu.Lock()
	last, resyncing := w.last, w.resyncing
	w.mu.Unlock()
	switch {
	case w.closed || resyncing || last >= g.version:
		delete(s.behind, w)
		return false
	case last < g.since:
		h.startResync(w, ReasonGap)
		return false
	case w.due.Load():
		if time.Since(time.Unix(0, w.dueAt.Load())) > slowAfter {
			countSlow(w)
		}
		return false
	}
	w.dueAt.Store(time.Now().UnixNano())
	w.due.Store(true)
	if !w.sink.Due(w) {
		w.due.Store(false)
		s.behind[w] = struct{}{}
		countSlow(w)
		return false
	}
	delete(s.behind, w)
	return true
}

// countSlow counts a watcher that could not take its DELTA in time, once until it takes
// one.
func countSlow(w *Watcher) {
	if !w.slow.Swap(true) {
		slowSubscribers.Inc()
	}
}

// stopFlushing cancels the show's due write: it has no watcher left.
func (s *show) stopFlushing() {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
}
