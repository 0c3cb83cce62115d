package seats

import (
	"fmt"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// seenVersions remembers, per showtime, the highest seat-map version this instance's own
// scripts produced: a read on the same instance after a write must never be answered with
// a map older than that write, even before the write's delta came back through pub/sub.
type seenVersions struct {
	mu   sync.Mutex
	byID *simplelru.LRU[int, int]
}

// seenShows bounds the showtimes remembered; a showtime forgotten was written long ago by
// this instance's standards (thousands of other showtimes since).
const seenShows = 8192

// saw records version v of showID (0: nothing changed).
func (s *Store) saw(showID, v int) {
	if v <= 0 {
		return
	}
	s.seen.mu.Lock()
	defer s.seen.mu.Unlock()
	if s.seen.byID == nil {
		s.seen.byID, _ = simplelru.NewLRU[int, int](seenShows, nil)
	}
	if old, ok := s.seen.byID.Peek(showID); !ok || v > old {
		s.seen.byID.Add(showID, v)
	}
}

// Seen returns the highest seat-map version of showID that this instance's own changes
// produced, 0 when it made none lately.
func (s *Store) Seen(showID int) int {
	s.seen.mu.Lock()
	defer s.seen.mu.Unlock()
	if s.seen.byID == nil {
		return 0
	}
	v, _ := s.seen.byID.Get(showID)
	return v
}

// Versions of successive builds of a showtime's seat hash. A build after Redis lost the
// hash (and its version key) must continue above every version issued before, or a
// watcher or a memo keyed by version would take the new map for an old one. The builds
// are counted in MySQL (the showtime's seat_epoch, package sales): the n-th starts above
// EpochBase(n) = n × 2^21. Versions are a GraphQL Int (32 bits, signed), so n is at most
// MaxEpoch = 1023, and a build must make fewer than 2^21 (2,097,152) changes before the
// next one for the bases to stay above it.
const (
	epochShift = 21
	// MaxEpoch is the most builds of one showtime's seat hash.
	MaxEpoch = (1<<31 - 1) >> epochShift
)

// EpochBase is the version above which the epoch-th build of a seat hash starts.
func EpochBase(epoch int) (int, error) {
	if epoch < 0 || epoch > MaxEpoch {
		return 0, fmt.Errorf("seat hash build %d: at most %d builds of one showtime's seat hash fit its versions", epoch, MaxEpoch)
	}
	return epoch << epochShift, nil
}
