package live

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"seatflow"
	"seatflow/internal/seats"
)

// show is one watched showtime: its Redis subscription, local watchers, and the seats'
// statuses its deltas brought. Guarded by its mu, but for what is atomic.
type show struct {
	hub       *Hub
	id        int
	channel   string
	hall      *seatflow.Hall
	index     map[int]int   // seat id → position in hall.Seats
	confirmed chan struct{} // closed at the first subscribe confirmation
	isReady   atomic.Bool   // confirmed is closed
	// known is stateVersion while the statuses are known, else 0: what Hub.Version
	// reads without the lock.
	known atomic.Int64
	// gen is the statuses as of the show's last write to its watchers, from which each
	// of them takes its DELTA when its connection can write it (flush.go); nil while the
	// statuses are unknown.
	gen atomic.Pointer[generation]

	mu       sync.Mutex
	gone     bool // taken out of its shard: its last watcher left, or the hub stopped
	watchers map[*Watcher]struct{}

	// The seats' statuses at stateVersion, from a snapshot and the deltas since; nil when
	// a delta may have been missed, until the next snapshot (every watcher is resyncing
	// then). changedAt[i] is the version of seat i's last change after since: a watcher at
	// a version v ≥ since gets the seats changed after v as one DELTA.
	state        []seatflow.SeatStatus
	changedAt    []int
	since        int
	stateVersion int
	available    int
	// log keeps the deltas that come while state is nil, for the snapshot that ends it.
	log []seats.Delta

	// Coalescing (flush.go): when the show last wrote to its watchers, whether a write is
	// due (timer), and the watchers whose sink could not take their DELTA.
	lastFlush time.Time
	timer     *time.Timer
	behind    map[*Watcher]struct{}
	// pending are the changes taken since the last write, for its metric and span
	// (deliver.go).
	pending pendingChanges
}

// A show's knowledge of its seats: the statuses the newest snapshot and the deltas since
// brought, and the version each seat last changed at, from which the DELTA a watcher gets
// is built (every seat changed since the watcher's version, in its latest state). All of
// it under the show's mu.

// What take made of a delta.
type takeResult int

const (
	taken   takeResult = iota // applied: the watchers have a change to get
	ignored                   // already known, or kept until the statuses are known
	missed                    // it skipped a version: a change was missed
)

// take applies the next delta to the statuses the show knows. While they are unknown
// (every watcher is waiting for a snapshot) the delta is kept for the snapshot that ends
// the wait.
func (s *show) take(d seats.Delta) takeResult {
	switch {
	case s.state == nil:
		if len(s.log) == logCap {
			s.log = append(s.log[:0], s.log[1:]...) // keep the newest
		}
		s.log = append(s.log, d)
		return ignored
	case d.Version <= s.stateVersion:
		return ignored
	case d.Version > s.stateVersion+1:
		s.forget()
		s.log = append(s.log, d)
		return missed
	}
	s.apply(d)
	return taken
}

// apply applies the delta that follows stateVersion.
func (s *show) apply(d seats.Delta) {
	for _, c := range d.Changes {
		id, err := strconv.Atoi(c.SeatID)
		if err != nil {
			continue
		}
		i, ok := s.index[id]
		if !ok {
			continue
		}
		status := statusOf(s.hall.Seats[i], c.Status)
		s.available += countFree(status) - countFree(s.state[i])
		s.state[i], s.changedAt[i] = status, d.Version
	}
	s.stateVersion = d.Version
	s.known.Store(int64(d.Version))
}

// statusOf is the status clients see for a seat a delta names.
func statusOf(seat seatflow.Seat, status seatflow.SeatStatus) seatflow.SeatStatus {
	switch {
	case !seat.Sellable:
		return seatflow.SeatUnavailable
	case status != seatflow.SeatAvailable && status != seatflow.SeatHeld && status != seatflow.SeatSold &&
		status != seatflow.SeatBlocked:
		return seatflow.SeatHeld // never offer a seat of unknown state as free
	}
	return status
}

// forget drops the statuses: a change may have been missed.
func (s *show) forget() {
	s.state, s.changedAt = nil, nil
	s.known.Store(0)
	s.gen.Store(nil)
	s.pending = pendingChanges{} // the watchers get them in a snapshot
}

// learn takes the seats' statuses from a snapshot. Known statuses are moved to a newer
// snapshot, each seat that differs counted as changed at its version; unknown ones are
// set from it, and the deltas kept meanwhile applied after it. It reports false when
// those skip a version (a change was missed: the statuses are unknown again).
func (s *show) learn(ev *seatflow.SeatMapEvent) bool {
	if s.state != nil {
		if ev.Version <= s.stateVersion {
			return true
		}
		for _, st := range ev.Seats {
			if i, ok := s.index[st.Seat.ID]; ok && s.state[i] != st.Status {
				s.state[i], s.changedAt[i] = st.Status, ev.Version
			}
		}
		s.stateVersion, s.available = ev.Version, ev.Available
		s.known.Store(int64(ev.Version))
		return true
	}
	s.state = make([]seatflow.SeatStatus, len(s.hall.Seats))
	s.changedAt = make([]int, len(s.hall.Seats))
	for _, st := range ev.Seats {
		if i, ok := s.index[st.Seat.ID]; ok {
			s.state[i] = st.Status
		}
	}
	s.since, s.stateVersion, s.available = ev.Version, ev.Version, ev.Available
	log := s.log
	s.log = nil
	for k, d := range log {
		if d.Version <= s.stateVersion {
			continue
		}
		if d.Version > s.stateVersion+1 {
			s.forget()
			s.log = log[k:]
			return false
		}
		s.apply(d)
	}
	s.known.Store(int64(s.stateVersion))
	return true
}

func countFree(st seatflow.SeatStatus) int {
	if st == seatflow.SeatAvailable {
		return 1
	}
	return 0
}
