package tickets

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/ent/ticket"
	"seatflow/internal/database"
	"seatflow/internal/showfeed"
)

// Pushes of a showtime's count: at most one per CountEvery after admissions, and one
// every countRefresh anyway (sales and refunds change what was sold without an admission).
const (
	CountEvery   = 250 * time.Millisecond
	countRefresh = 5 * time.Second
)

// Count is the door of a showtime from MySQL: tickets sold (not revoked), checked in (not
// revoked), and duplicate scans (people let in on a ticket beyond its first).
func (s *Service) Count(ctx context.Context, showID int) (*seatflow.CheckInCount, error) {
	c := &seatflow.CheckInCount{ShowtimeID: showID}
	var err error
	q := s.DB.Ticket.Query().Where(ticket.ShowtimeID(showID), ticket.RevokedAtIsNil())
	if c.Sold, err = q.Clone().Count(ctx); err != nil {
		return nil, fmt.Errorf("count tickets: %w", database.Classify(err))
	}
	if c.CheckedIn, err = q.Where(ticket.CheckedInAtNotNil()).Count(ctx); err != nil {
		return nil, fmt.Errorf("count check-ins: %w", database.Classify(err))
	}
	// Few tickets, if any, let more than one person in: their counts are summed here.
	many, err := s.DB.Ticket.Query().Where(ticket.ShowtimeID(showID), ticket.AdmissionsGT(1)).
		Select(ticket.FieldAdmissions).Ints(ctx)
	if err != nil {
		return nil, fmt.Errorf("count duplicate scans: %w", database.Classify(err))
	}
	for _, n := range many {
		c.DuplicateScans += n - 1
	}
	return c, nil
}

// announce tells every instance that the showtime's door let someone in, coalesced per
// showtime like the watchers' pushes: the first admission is announced at once, the
// admissions during the CountEvery after it make one announcement at its end (and so on
// while they keep coming). A watcher counts at most once per CountEvery anyway, so a
// busy door costs Redis a few messages a second per showtime, not one per person. Best
// effort: the watchers' periodic refresh catches up with a lost announcement.
func (s *Service) announce(ctx context.Context, showID int) {
	if s.RDB == nil || !s.announcing.open(showID) {
		return
	}
	s.publish(context.WithoutCancel(ctx), showID)
	s.announceLater(showID)
}

// announceLater ends the showtime's announcement window after CountEvery: one more
// announcement (and a new window) when admissions came during it.
func (s *Service) announceLater(showID int) {
	time.AfterFunc(CountEvery, func() {
		if s.announcing.again(showID) {
			s.publish(context.Background(), showID)
			s.announceLater(showID)
		}
	})
}

func (s *Service) publish(ctx context.Context, showID int) {
	err := s.RDB.Publish(ctx, s.RedisKeys.CheckIns(showID), "1").Err()
	if err != nil && !errors.Is(err, redis.ErrClosed) {
		s.log().Warn("tickets: announce a check-in", "showtime", showID, "err", err)
	}
}

// announcing is the instance's open announcement windows, by showtime: true when an
// admission came during it.
type announcing struct {
	mu      sync.Mutex
	pending map[int]bool
}

// open says whether an admission is announced now (no window open: one opens), else
// marks the open window.
func (a *announcing) open(showID int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.pending[showID]; ok {
		a.pending[showID] = true
		return false
	}
	if a.pending == nil {
		a.pending = map[int]bool{}
	}
	a.pending[showID] = false
	return true
}

// again closes the showtime's window: true (and a new window) when admissions came
// during it.
func (a *announcing) again(showID int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.pending[showID] {
		delete(a.pending, showID)
		return false
	}
	a.pending[showID] = false
	return true
}

// WatchCounts streams the showtime's count: the current one at once, then a new one after
// admissions (coalesced: at most one per CountEvery) and when sales change it, until ctx
// ends. Watchers of one showtime on one instance share one Redis subscription and one
// count query per push.
func (s *Service) WatchCounts(ctx context.Context, showID int) (<-chan *seatflow.CheckInCount, error) {
	first, err := s.Count(ctx, showID)
	if err != nil {
		return nil, err
	}
	out := make(chan *seatflow.CheckInCount, 1)
	out <- first
	f := s.join(showID, out)
	go func() {
		<-ctx.Done()
		s.leave(f, out)
	}()
	return out, nil
}

// feed pushes one showtime's count to its watchers while it has any.
type feed struct {
	showID   int
	mu       sync.Mutex // guards watchers and the pushes to them
	watchers map[chan *seatflow.CheckInCount]bool
}

// join adds a watcher to its showtime's feed, started when it has none.
func (s *Service) join(showID int, out chan *seatflow.CheckInCount) *showfeed.Feed[*feed] {
	return s.feeds.Join(showID,
		func() *feed { return &feed{showID: showID, watchers: map[chan *seatflow.CheckInCount]bool{}} },
		func(ctx context.Context, f *feed) { f.run(ctx, s) },
		func(f *feed) {
			f.mu.Lock()
			f.watchers[out] = true
			f.mu.Unlock()
		})
}

// leave takes a watcher out (its channel is closed); the last one stops the feed.
func (s *Service) leave(h *showfeed.Feed[*feed], out chan *seatflow.CheckInCount) {
	s.feeds.Leave(h, func(f *feed) bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.watchers, out)
		return len(f.watchers) == 0
	})
	close(out)
}

// run listens to the showtime's announcements and pushes counts until stopped.
func (f *feed) run(ctx context.Context, s *Service) {
	var notes <-chan struct{}
	if s.RDB != nil {
		ps := s.RDB.Subscribe(ctx, s.RedisKeys.CheckIns(f.showID))
		defer ps.Close()
		ch := make(chan struct{}, 1)
		notes = ch
		go func() {
			for range ps.Channel() { // closed by ps.Close
				select {
				case ch <- struct{}{}:
				default:
				}
			}
		}()
	}
	tick := time.NewTicker(countRefresh)
	defer tick.Stop()
	var last seatflow.CheckInCount
	for {
		select {
		case <-ctx.Done():
			return
		case <-notes:
		case <-tick.C:
		}
		c, err := s.Count(ctx, f.showID)
		if err != nil {
			if ctx.Err() == nil {
				s.log().Warn("tickets: count check-ins", "showtime", f.showID, "err", err)
			}
		} else if *c != last {
			last = *c
			f.push(c)
		}
		// Coalesce: announcements during the wait make one push after it.
		select {
		case <-ctx.Done():
			return
		case <-time.After(CountEvery):
		}
	}
}

// push hands c to every watcher, replacing a count it has not read yet.
func (f *feed) push(c *seatflow.CheckInCount) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for w := range f.watchers {
		select {
		case <-w:
		default:
		}
		cp := *c
		w <- &cp
	}
}
