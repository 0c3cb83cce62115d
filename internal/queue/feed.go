package queue

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"seatflow"
	"seatflow/ent/onsalequeue"
	"seatflow/internal/rdb"
	"seatflow/internal/showfeed"
)

// positionsChunk bounds the tickets one positions.lua call reads, so that a feed of many
// subscribers never holds Redis for long.
const positionsChunk = 1000

// Watch streams userID's ticket in showtime showID's on-sale queue: the ticket now, then
// the ticket again when it changes (admitted: at once, with its pass; its position: after
// each admission tick, never higher than the last one sent), and at least every Refresh,
// until the ticket ends (EXPIRED, SOLD_OUT, CLOSED: sent, then the stream closes), is gone
// (left, the queue removed or lost with Redis: the stream closes) or ctx ends. Every
// subscriber of a showtime on an instance shares one feed: one Redis subscription to the
// queue's events and one positions.lua read per chunk of subscribers per update, whatever
// their number. NOT_FOUND when the user has no ticket.
func (s *Service) Watch(ctx context.Context, showID int, userID string) (<-chan *seatflow.QueueTicket, error) {
	res, err := s.run(ctx, ticketScript, s.ticketKeys(showID), s.Now.Now().UnixMilli(), userID).Slice()
	if err != nil {
		return nil, rdb.Classify("read the on-sale queue", err)
	}
	if str(res[0]) != "TICKET" {
		return nil, seatflow.Errorf(seatflow.ENOTFOUND, "you have no ticket in this showtime's on-sale queue: joinQueue first")
	}
	first, err := s.view(showID, res)
	if err != nil {
		return nil, err
	}
	var r record
	_ = json.Unmarshal([]byte(str(res[2])), &r)
	out := make(chan *seatflow.QueueTicket, 1)
	out <- first
	if first.Status.Final() {
		close(out)
		return out, nil
	}
	sub := &subscriber{tnum: str(res[1]), rec: r, last: first, pushedAt: time.Now(), out: out}
	f := s.join(showID, sub)
	go func() {
		<-ctx.Done()
		s.leave(f, sub)
	}()
	return out, nil
}

// feed pushes one showtime's tickets to its subscribers on this instance while it has any.
type feed struct {
	showID int
	mu     sync.Mutex // guards subs, byNum and every subscriber's pushes
	subs   map[*subscriber]bool
	byNum  map[string]*subscriber
}

// subscriber is one stream of one ticket.
type subscriber struct {
	tnum     string
	rec      record // as last read
	last     *seatflow.QueueTicket
	pushedAt time.Time
	out      chan *seatflow.QueueTicket
	closed   bool
}

// join adds sub to its showtime's feed, started when it has none.
func (s *Service) join(showID int, sub *subscriber) *showfeed.Feed[*feed] {
	return s.feeds.Join(showID,
		func() *feed {
			return &feed{showID: showID, subs: map[*subscriber]bool{}, byNum: map[string]*subscriber{}}
		},
		func(ctx context.Context, f *feed) { f.run(ctx, s) },
		func(f *feed) {
			f.mu.Lock()
			f.subs[sub] = true
			f.byNum[sub.tnum] = sub
			f.mu.Unlock()
		})
}

// leave takes a subscriber out (its stream is closed if it is not yet); the last one
// stops the feed.
func (s *Service) leave(h *showfeed.Feed[*feed], sub *subscriber) {
	s.feeds.Leave(h, func(f *feed) bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.drop(sub)
		return len(f.subs) == 0
	})
}

// drop takes sub out of the feed and closes its stream; f.mu is held.
func (f *feed) drop(sub *subscriber) {
	delete(f.subs, sub)
	if f.byNum[sub.tnum] == sub {
		delete(f.byNum, sub.tnum)
	}
	if !sub.closed {
		sub.closed = true
		close(sub.out)
	}
}

// push hands t to sub, replacing a ticket it has not read yet; a final ticket ends the
// stream after it. f.mu is held.
func (f *feed) push(sub *subscriber, t *seatflow.QueueTicket) {
	if sub.closed {
		return
	}
	select {
	case <-sub.out:
	default:
	}
	sub.out <- t
	sub.last, sub.pushedAt = t, time.Now()
	if t.Status.Final() {
		f.drop(sub)
	}
}

// event is what admit.lua, close.lua and remove.lua publish.
type event struct {
	Phase    string      `json:"ph"`
	Admitted [][3]string `json:"a"`
	Removed  bool        `json:"removed"`
}

// run follows the queue's events and pushes tickets until stopped: an admission to its
// subscriber at once, then everyone's positions; with no event, everyone at least every
// Refresh; and marks the subscribers seen every SeenEvery.
func (f *feed) run(ctx context.Context, s *Service) {
	ps := s.RDB.Subscribe(ctx, s.Keys.QueueEvents(f.showID))
	defer ps.Close()
	msgs := ps.Channel()
	check := time.NewTicker(time.Second)
	defer check.Stop()
	seen := time.NewTicker(s.SeenEvery)
	defer seen.Stop()
	lastRefresh := time.Now()
	for {
		dirty := false
		select {
		case <-ctx.Done():
			return
		case m, ok := <-msgs:
			if !ok {
				return
			}
			var ev event
			if json.Unmarshal([]byte(m.Payload), &ev) != nil {
				continue
			}
			if ev.Removed {
				f.end(s)
				continue
			}
			f.admitted(s, ev.Admitted)
			dirty = true
		case <-check.C:
			dirty = time.Since(lastRefresh) >= s.Refresh-time.Second
		case <-seen.C:
			f.markSeen(ctx, s)
		}
		if dirty {
			lastRefresh = time.Now()
			f.refresh(ctx, s)
		}
	}
}

// admitted pushes each admission of a local subscriber at once, with its pass.
func (f *feed) admitted(s *Service, admitted [][3]string) {
	if len(admitted) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range admitted {
		sub := f.byNum[a[0]]
		if sub == nil {
			continue
		}
		r := sub.rec
		r.Status, r.Member, r.Pass, r.Expires = recAdmitted, "", a[1], a[2]
		t, err := s.ticket(f.showID, sub.tnum, r, seatflow.QueueOpen, sub.last.Waiting, -1, 0)
		if err != nil {
			s.Log.Warn("queue: push an admission", "showtime", f.showID, "err", err)
			continue
		}
		sub.rec = r
		f.push(sub, t)
	}
}

// end closes every stream with a CLOSED ticket: the queue was removed.
func (f *feed) end(s *Service) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for sub := range f.subs {
		f.gone(sub, true)
	}
}

// refresh reads every subscriber's ticket (positions.lua, a chunk at a time) and pushes
// those that changed, or went Refresh without a push.
func (f *feed) refresh(ctx context.Context, s *Service) {
	f.mu.Lock()
	subs := make([]*subscriber, 0, len(f.subs))
	for sub := range f.subs {
		subs = append(subs, sub)
	}
	f.mu.Unlock()
	for start := 0; start < len(subs); start += positionsChunk {
		chunk := subs[start:min(start+positionsChunk, len(subs))]
		args := make([]any, 0, 2*len(chunk))
		f.mu.Lock()
		for _, sub := range chunk {
			member := ""
			if sub.rec.Status == recWaiting {
				member = sub.rec.Member
			}
			args = append(args, sub.tnum, member)
		}
		f.mu.Unlock()
		res, err := s.run(ctx, positionsScript, []string{s.Keys.Queue(f.showID), s.Keys.QueueWaiting(f.showID),
			s.Keys.QueueTickets(f.showID)}, args...).Slice()
		if err != nil || len(res) != 3+len(chunk) {
			if ctx.Err() == nil {
				s.Log.Warn("queue: read subscribers' positions", "showtime", f.showID, "err", err)
			}
			return
		}
		f.update(s, chunk, res, f.removed(ctx, s, chunk, res))
	}
}

// update applies one positions.lua reply to its chunk of subscribers.
func (f *feed) update(s *Service, chunk []*subscriber, res []any, removed bool) {
	phase := seatflow.QueuePhase(str(res[0]))
	waiting := int(num(res[1]))
	rate, _ := strconv.ParseFloat(str(res[2]), 64)
	stale := time.Now().Add(-s.Refresh + time.Second)
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, sub := range chunk {
		if sub.closed {
			continue
		}
		rank := -1
		switch v := res[3+i].(type) {
		case int64:
			rank = int(v)
		case string:
			var r record
			if json.Unmarshal([]byte(v), &r) != nil {
				continue
			}
			sub.rec = r
		default: // the ticket is gone: left, removed with its queue, or lost with Redis
			f.gone(sub, removed)
			continue
		}
		if phase == "" { // the queue's state is gone
			f.gone(sub, removed)
			continue
		}
		t, err := s.ticket(f.showID, sub.tnum, sub.rec, phase, waiting, rank, rate)
		if err != nil {
			continue
		}
		if p, q := t.Position, sub.last.Position; p != nil && q != nil && *p > *q {
			*p = *q // a position never goes up (a read that raced a join cannot raise it)
		}
		if !sameTicket(t, sub.last) || sub.pushedAt.Before(stale) {
			f.push(sub, t)
		}
	}
}

// removed reports, when a read (res, of chunk) found a ticket or the queue's state gone,
// whether the queue was removed: its record is gone from MySQL too, deleted before its
// state in Redis (Remove). A refresh that reads just after the removal then ends the
// streams as the removal's own event does (CLOSED), not as a loss of Redis.
func (f *feed) removed(ctx context.Context, s *Service, chunk []*subscriber, res []any) bool {
	gone := str(res[0]) == ""
	for i := range chunk {
		switch res[3+i].(type) {
		case int64, string:
		default:
			gone = true
		}
	}
	if !gone {
		return false
	}
	exists, err := s.DB.OnSaleQueue.Query().Where(onsalequeue.ShowtimeID(f.showID)).Exist(ctx)
	return err == nil && !exists
}

// gone ends sub's stream: with CLOSED when its queue was removed, else at once (it left,
// or the state was lost with Redis: join again). f.mu is held.
func (f *feed) gone(sub *subscriber, removed bool) {
	if !removed {
		f.drop(sub)
		return
	}
	t := *sub.last
	t.Status, t.Position, t.EstimatedWaitSeconds, t.Pass, t.PassExpiresAt = seatflow.QueueTicketClosed, nil, nil, nil, nil
	f.push(sub, &t)
}

// sameTicket reports whether a and b show their holder the same thing.
func sameTicket(a, b *seatflow.QueueTicket) bool {
	eq := func(x, y *int) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.Status == b.Status && a.Waiting == b.Waiting && eq(a.Position, b.Position) &&
		eq(a.EstimatedWaitSeconds, b.EstimatedWaitSeconds)
}

// markSeen marks every subscriber's holder seen (seen.lua, a chunk at a time): a
// subscription is presence.
func (f *feed) markSeen(ctx context.Context, s *Service) {
	f.mu.Lock()
	nums := make([]any, 0, len(f.byNum))
	for n := range f.byNum {
		nums = append(nums, n)
	}
	f.mu.Unlock()
	now := s.Now.Now().UnixMilli()
	for start := 0; start < len(nums); start += positionsChunk {
		args := append([]any{now}, nums[start:min(start+positionsChunk, len(nums))]...)
		err := s.run(ctx, seenScript, []string{s.Keys.QueueTickets(f.showID), s.Keys.QueueSeen(f.showID)}, args...).Err()
		if err != nil && ctx.Err() == nil {
			s.Log.Warn("queue: mark subscribers seen", "showtime", f.showID, "err", err)
			return
		}
	}
}
