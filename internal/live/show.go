package live

import (
	"strconv"

	"seatflow"
	"seatflow/internal/seats"
)

// A show's knowledge of its seats: the statuses the newest snapshot and the deltas since
// brought, and the version each seat last changed at, from which the DELTA a watcher gets
// is built (every seat changed since the watcher's version, in its latest state). All of
// it under the hub's mu.

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
	return true
}

// deltaSince is the DELTA that moves a map at version from (≥ since) to stateVersion: the
// seats changed after from, in hall order, each in its latest state. Watchers at the same
// version share it, read-only.
func (s *show) deltaSince(from int) *seatflow.SeatMapEvent {
	ev := &seatflow.SeatMapEvent{Kind: seatflow.EventDelta, ShowtimeID: s.id, FromVersion: from,
		Version: s.stateVersion, Available: s.available}
	for i, v := range s.changedAt {
		if v > from {
			ev.Seats = append(ev.Seats, seatflow.SeatState{ShowtimeID: s.id, Seat: s.hall.Seats[i], Status: s.state[i]})
		}
	}
	if ev.Seats == nil {
		ev.Seats = []seatflow.SeatState{}
	}
	return ev
}

func countFree(st seatflow.SeatStatus) int {
	if st == seatflow.SeatAvailable {
		return 1
	}
	return 0
}
