package waitlist

import (
	"context"
	"reflect"
	"sync"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/waitlistentry"
	"seatflow/internal/database"
	"seatflow/internal/showfeed"
)

// Refresh is the longest a watcher of an entry goes without a push.
const Refresh = 20 * time.Second

// feeds are the instance's waiting-list feeds, one per showtime with watchers.
type feeds = showfeed.Registry[*feed]

// feed pushes one showtime's entries to their watchers on this instance.
type feed struct {
	showID   int
	mu       sync.Mutex // guards watchers and their pushes
	watchers map[*watcher]bool
	// joined tells run of a new watcher: what changed between its first read and its
	// joining is pushed to it at once.
	joined chan struct{}
}

// watcher is one stream of one entry.
type watcher struct {
	entryID int
	last    *seatflow.WaitlistEntry
	out     chan *seatflow.WaitlistEntry
	closed  bool
}

// Watch streams one of the user's entries: the entry now, then again when its position
// changes or an offer comes (the offerer announces each at once), at least every Refresh,
// until the entry is final (sent, then the stream closes) or ctx ends. A showtime's
// watchers on an instance share one feed: one Redis subscription to its announcements and
// one read of its waiting entries per announcement, whatever their number.
func (s *Service) Watch(ctx context.Context, userID string, id int) (<-chan *seatflow.WaitlistEntry, error) {
	first, err := s.Entry(ctx, userID, id)
	if err != nil {
		return nil, err
	}
	out := make(chan *seatflow.WaitlistEntry, 1)
	out <- first
	if first.Status.Final() {
		close(out)
		return out, nil
	}
	w := &watcher{entryID: id, last: first, out: out}
	h := s.feeds.Join(first.ShowtimeID,
		func() *feed {
			return &feed{showID: first.ShowtimeID, watchers: map[*watcher]bool{}, joined: make(chan struct{}, 1)}
		},
		func(ctx context.Context, f *feed) { f.run(ctx, s) },
		func(f *feed) {
			f.mu.Lock()
			f.watchers[w] = true
			f.mu.Unlock()
			select {
			case f.joined <- struct{}{}:
			default:
			}
		})
	go func() {
		<-ctx.Done()
		s.feeds.Leave(h, func(f *feed) bool {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.drop(w)
			return len(f.watchers) == 0
		})
	}()
	return out, nil
}

// drop takes w out and closes its stream; f.mu is held.
func (f *feed) drop(w *watcher) {
	delete(f.watchers, w)
	if !w.closed {
		w.closed = true
		close(w.out)
	}
}

// run pushes on each announcement, when a watcher joins, and to everyone every Refresh.
// Once its subscription is live it reads once: nothing announced before is missed.
func (f *feed) run(ctx context.Context, s *Service) {
	ps := s.RDB.Subscribe(ctx, s.Keys.WaitlistEvents(f.showID))
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		return
	}
	msgs := ps.Channel()
	select {
	case f.joined <- struct{}{}:
	default:
	}
	tick := time.NewTicker(Refresh)
	defer tick.Stop()
	for {
		force := false
		select {
		case <-ctx.Done():
			return
		case _, ok := <-msgs:
			if !ok {
				return
			}
			// Announcements close together are read once.
			for drained := false; !drained; {
				select {
				case <-msgs:
				default:
					drained = true
				}
			}
		case <-f.joined:
		case <-tick.C:
			force = true
		}
		if err := f.update(ctx, s, force); err != nil && ctx.Err() == nil {
			s.Log.Warn("waitlist: push entries", "showtime", f.showID, "err", err)
		}
	}
}

// update reads the showtime's waiting entries and its sale once and pushes each watcher's
// entry when it changed (or force): a waiting one's position from that read while the sale
// is open, any other read again.
func (f *feed) update(ctx context.Context, s *Service, force bool) error {
	ids, err := s.waitingIDs(ctx, f.showID)
	if err != nil {
		return err
	}
	open, err := s.salesOpen(ctx, f.showID) // once closed, every entry is read again (CLOSED)
	if err != nil {
		return err
	}
	f.mu.Lock()
	ws := make([]*watcher, 0, len(f.watchers))
	for w := range f.watchers {
		ws = append(ws, w)
	}
	f.mu.Unlock()
	for _, w := range ws {
		next := *w.last
		next.Waiting = len(ids)
		if p := position(ids, w.entryID); p > 0 && open && w.last.Status == seatflow.WaitlistWaiting {
			next.Position = &p
		} else {
			row, err := s.DB.WaitlistEntry.Query().Where(waitlistentry.ID(w.entryID)).Only(ctx)
			if err != nil {
				return database.Classify(err)
			}
			vs, err := s.views(ctx, []*ent.WaitlistEntry{row})
			if err != nil {
				return err
			}
			next = *vs[0]
		}
		if force || !reflect.DeepEqual(&next, w.last) {
			f.push(w, &next)
		}
	}
	return nil
}

// push hands e to w, replacing an entry it has not read yet; a final entry ends the
// stream after it.
func (f *feed) push(w *watcher, e *seatflow.WaitlistEntry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if w.closed {
		return
	}
	select {
	case <-w.out:
	default:
	}
	w.out <- e
	w.last = e
	if e.Status.Final() {
		f.drop(w)
	}
}
