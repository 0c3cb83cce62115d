package seats

import (
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
