// Package live owns the live seat map of subscriptions: one Redis subscription per showtime
// per instance, shared by every local watcher of that showtime, and the fan-out of SNAPSHOT
// and DELTA events to each watcher through a bounded buffer. It never changes seat state and
// never caches it: snapshots are read from Redis through package seats each time one is
// sent, and a delta lives only until its watcher has taken it.
package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/internal/keys"
	"seatflow/internal/seats"
)

// Reasons a SNAPSHOT is sent (the "reason" label of the snapshots metric).
const (
	ReasonInitial   = "initial"   // first event of every subscription
	ReasonGap       = "gap"       // a delta's version skipped one: something was missed
	ReasonSlow      = "slow"      // the watcher's buffer overflowed and deltas were dropped
	ReasonReconnect = "reconnect" // the pub/sub connection dropped and was restored
)

const (
	defaultBuffer = 64
	// confirmTimeout bounds how long Watch waits for Redis to confirm a subscription.
	confirmTimeout = 10 * time.Second
	// retryDelay is the pause between attempts to read a resync snapshot.
	retryDelay = time.Second
	// slowPoll is how often a resync looks whether a slow client has caught up.
	slowPoll = 10 * time.Millisecond
)

// Options tunes a Hub.
type Options struct {
	// Buffer is how many deltas each watcher may have waiting before it is marked slow
	// (its buffered deltas are dropped and it gets a fresh SNAPSHOT). Default 64.
	Buffer int
	// Log receives the hub's errors; slog.Default() when nil.
	Log *slog.Logger
}

// Hub fans seat-map deltas out to the local watchers of each showtime. There is one per
// instance; Run must be running for Watch to work.
type Hub struct {
	rdb    redis.UniversalClient
	keys   keys.Keys
	store  *seats.Store
	buffer int
	log    *slog.Logger

	started chan struct{} // closed when Run has opened the pub/sub connection
	done    chan struct{} // closed when Run has ended: every watcher ends too

	mu    sync.Mutex
	ps    *redis.PubSub // nil before Run and after it
	ended bool
	shows map[string]*show // by events channel
	// pending counts, per channel, SUBSCRIBE commands whose confirmation has not been
	// read yet: a confirmation only counts for the current show when none is pending, so
	// the late confirmation of an earlier subscribe/unsubscribe cycle is never mistaken
	// for the current one.
	pending map[string]int
}

// show is one watched showtime: its Redis subscription and local watchers.
type show struct {
	id        int
	channel   string
	hall      *seatflow.Hall
	index     map[int]int // seat id → position in hall.Seats
	watchers  map[*watcher]struct{}
	confirmed chan struct{} // closed at the first subscribe confirmation
	isReady   bool
}

// watcher is one subscription. Its channel is the one the subscription reads: the hub
// puts events in it without ever blocking, and only under h.mu, so no goroutine per
// watcher is needed. While a snapshot is being read for it (resyncing), deltas wait in
// pending, the newest Buffer of them.
type watcher struct {
	show    *show
	ctx     context.Context
	ch      chan *seatflow.SeatMapEvent
	release func() // gives the connection's subscription slot back; safe to call twice

	// Guarded by the hub's mu.
	last      int // version of the last event put in ch
	resyncing bool
	reason    string
	again     string // a resync asked for while one was under way: done after it
	pending   []*seatflow.SeatMapEvent
	closed    bool
}

// NewHub returns a hub reading deltas through rdb and snapshots through store.
func NewHub(rdb redis.UniversalClient, k keys.Keys, store *seats.Store, opts Options) *Hub {
	if opts.Buffer <= 0 {
		opts.Buffer = defaultBuffer
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	return &Hub{
		rdb: rdb, keys: k, store: store, buffer: opts.Buffer, log: opts.Log,
		started: make(chan struct{}),
		done:    make(chan struct{}),
		shows:   map[string]*show{},
		pending: map[string]int{},
	}
}

// Run owns the hub's one pub/sub connection and reads it until ctx ends. go-redis
// reconnects and resubscribes by itself when the connection drops; the hub notices the
// repeated confirmations and resyncs the watchers. When Run returns, every watcher's
// channel is closed.
func (h *Hub) Run(ctx context.Context) error {
	h.mu.Lock()
	if h.ps != nil || h.ended {
		h.mu.Unlock()
		return errors.New("live hub: Run called twice")
	}
	ps := h.rdb.Subscribe(ctx)
	h.ps = ps
	h.mu.Unlock()
	close(h.started)

	defer func() {
		h.mu.Lock()
		h.ps = nil
		h.ended = true
		for _, s := range h.shows {
			for w := range s.watchers {
				h.closeWatcher(w)
			}
		}
		h.shows = map[string]*show{}
		h.mu.Unlock()
		close(h.done)
		_ = ps.Close()
	}()

	msgs := ps.ChannelWithSubscriptions(redis.WithChannelSize(1024))
	for {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-msgs:
			if !ok {
				return errors.New("live hub: pub/sub closed")
			}
			switch m := m.(type) {
			case *redis.Subscription:
				if m.Kind == "subscribe" {
					h.confirm(m.Channel)
				}
			case *redis.Message:
				h.deliver(m.Channel, m.Payload)
			}
		}
	}
}

// confirm handles Redis' confirmation of a channel subscription: the first one lets the
// show's watchers read their snapshot; a later one means the connection was restored, and
// deltas may have been lost meanwhile.
func (h *Hub) confirm(channel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pending[channel] > 0 {
		h.pending[channel]--
		if h.pending[channel] == 0 {
			delete(h.pending, channel)
		}
	}
	s := h.shows[channel]
	if s == nil || h.pending[channel] > 0 {
		return
	}
	if !s.isReady {
		s.isReady = true
		close(s.confirmed)
		return
	}
	// The connection was restored: deltas may have been lost. One snapshot serves every
	// watcher of the show (a watcher already resyncing reads another after its own).
	var ws []*watcher
	for w := range s.watchers {
		if w.resyncing {
			h.startResync(w, ReasonReconnect)
			continue
		}
		w.resyncing, w.reason, w.pending = true, ReasonReconnect, nil
		ws = append(ws, w)
	}
	if len(ws) > 0 {
		go h.resyncShow(s, ws)
	}
}

// resyncShow reads one snapshot of a show, retrying while Redis is unreachable, and puts
// it in place of the waiting deltas of each of ws (watchers marked resyncing for it).
func (h *Hub) resyncShow(s *show, ws []*watcher) {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), confirmTimeout)
		ev, err := h.snapshot(ctx, s)
		cancel()
		if err == nil {
			h.mu.Lock()
			for _, w := range ws {
				if !w.closed {
					drain(w.ch) // superseded by the snapshot
					h.settle(w, ev, ReasonReconnect)
				}
			}
			h.mu.Unlock()
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

// deliver parses a published delta once and offers it to every watcher of its show
// without ever blocking.
func (h *Hub) deliver(channel, payload string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.shows[channel]
	if s == nil {
		return
	}
	var d seats.Delta
	if err := json.Unmarshal([]byte(payload), &d); err != nil {
		// cjson sends an empty change list as {}; anything unreadable is resolved by a
		// fresh snapshot rather than guessed at.
		h.log.Warn("live: unreadable seat-map delta", "channel", channel, "err", err)
		for w := range s.watchers {
			h.startResync(w, ReasonGap)
		}
		return
	}
	ev := s.deltaEvent(d)
	for w := range s.watchers {
		h.offer(w, ev)
	}
}

// offer puts a delta in the watcher's channel if it is the next version; an older one is
// dropped, a newer one (a gap) or a full channel (a slow client) starts a resync. h.mu is
// held.
func (h *Hub) offer(w *watcher, ev *seatflow.SeatMapEvent) {
	if w.resyncing {
		if len(w.pending) == h.buffer {
			w.pending = append(w.pending[:0], w.pending[1:]...) // keep the newest
		}
		w.pending = append(w.pending, ev)
		return
	}
	switch {
	case ev.Version <= w.last:
	case ev.Version > w.last+1:
		h.startResync(w, ReasonGap)
	case len(w.ch) == cap(w.ch): // the client is not keeping up
		slowSubscribers.Inc()
		h.startResync(w, ReasonSlow)
	default: // room, and only the hub sends: this does not block
		w.last = ev.Version
		deltasDelivered.Inc()
		w.ch <- ev
	}
}

// deltaEvent turns a delta into the event clients see: the changed seats with their full
// template. The event is shared read-only by every watcher of the show.
func (s *show) deltaEvent(d seats.Delta) *seatflow.SeatMapEvent {
	ev := &seatflow.SeatMapEvent{Kind: seatflow.EventDelta, ShowtimeID: s.id, Version: d.Version,
		Seats: make([]seatflow.SeatState, 0, len(d.Changes))}
	for _, c := range d.Changes {
		id, err := strconv.Atoi(c.SeatID)
		if err != nil {
			continue
		}
		i, ok := s.index[id]
		if !ok {
			continue
		}
		seat := s.hall.Seats[i]
		status := c.Status
		switch {
		case !seat.Sellable:
			status = seatflow.SeatUnavailable
		case status != seatflow.SeatAvailable && status != seatflow.SeatHeld && status != seatflow.SeatSold:
			status = seatflow.SeatHeld // never offer a seat of unknown state as free
		}
		ev.Seats = append(ev.Seats, seatflow.SeatState{Seat: seat, Status: status})
	}
	return ev
}

// Watch subscribes to the live seat map of a showtime: the channel first carries a
// SNAPSHOT of every seat of hall, then DELTA events in version order, and a fresh SNAPSHOT
// whenever a delta may have been missed. It closes when ctx ends or the hub stops. At
// most the number of subscriptions allowed by LimitSubscriptions may be open under ctx.
func (h *Hub) Watch(ctx context.Context, showID int, hall *seatflow.Hall) (<-chan *seatflow.SeatMapEvent, error) {
	release, err := acquireSubscription(ctx)
	if err != nil {
		return nil, err
	}
	// Register first (deltas wait in pending), wait for Redis to confirm, then read the
	// snapshot: a change made after the snapshot is then always among the pending deltas.
	w, err := h.join(ctx, showID, hall, release)
	if err != nil {
		release()
		return nil, err
	}
	ev, err := h.ready(ctx, w)
	if err != nil {
		h.leave(w)
		return nil, err
	}
	h.mu.Lock()
	h.settle(w, ev, ReasonInitial)
	h.mu.Unlock()
	context.AfterFunc(ctx, func() { h.leave(w) })
	return w.ch, nil
}

// join registers a watcher, subscribing to the show's channel if it is the first one.
func (h *Hub) join(ctx context.Context, showID int, hall *seatflow.Hall, release func()) (*watcher, error) {
	select {
	case <-h.started:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(confirmTimeout):
		return nil, seatflow.Errorf(seatflow.EUNAVAILABLE, "live seat map not available, try again in a moment")
	}
	channel := h.keys.Events(showID)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ps == nil {
		return nil, seatflow.Errorf(seatflow.EUNAVAILABLE, "live seat map not available, try again in a moment")
	}
	s := h.shows[channel]
	if s == nil {
		s = &show{id: showID, channel: channel, hall: hall, index: make(map[int]int, len(hall.Seats)),
			watchers: map[*watcher]struct{}{}, confirmed: make(chan struct{})}
		for i, seat := range hall.Seats {
			s.index[seat.ID] = i
		}
		h.shows[channel] = s
		h.pending[channel]++
		showsWatched.Inc()
		// Under h.mu, so subscribes and unsubscribes of one channel reach Redis in the
		// order the hub decided them. go-redis keeps the channel in its set even if this
		// write fails and subscribes again when it reconnects; the confirmation wait in
		// ready covers both cases.
		if err := h.ps.Subscribe(ctx, channel); err != nil {
			h.log.Warn("live: subscribe", "channel", channel, "err", err)
		}
	}
	var once sync.Once
	w := &watcher{show: s, ctx: ctx, ch: make(chan *seatflow.SeatMapEvent, h.buffer),
		release: func() { once.Do(release) }, resyncing: true, reason: ReasonInitial}
	s.watchers[w] = struct{}{}
	activeSubscriptions.Inc()
	return w, nil
}

// ready waits until the show's subscription is confirmed and reads the first snapshot.
func (h *Hub) ready(ctx context.Context, w *watcher) (*seatflow.SeatMapEvent, error) {
	timer := time.NewTimer(confirmTimeout)
	defer timer.Stop()
	select {
	case <-w.show.confirmed:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-h.done:
		return nil, seatflow.Errorf(seatflow.EUNAVAILABLE, "live seat map not available, try again in a moment")
	case <-timer.C:
		return nil, seatflow.Errorf(seatflow.EUNAVAILABLE, "live seat map not available, try again in a moment")
	}
	return h.snapshot(ctx, w.show)
}

// leave unregisters a watcher (its subscription ended), unsubscribing from the show's
// channel after the last one.
func (h *Hub) leave(w *watcher) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.closed {
		return
	}
	h.closeWatcher(w)
	s := w.show
	if len(s.watchers) > 0 || h.shows[s.channel] != s {
		return
	}
	delete(h.shows, s.channel)
	showsWatched.Dec()
	if h.ps != nil {
		if err := h.ps.Unsubscribe(context.Background(), s.channel); err != nil {
			h.log.Warn("live: unsubscribe", "channel", s.channel, "err", err)
		}
	}
}

// closeWatcher takes a watcher out of its show, closes its channel and gives its
// subscription slot back; h.mu is held.
func (h *Hub) closeWatcher(w *watcher) {
	w.closed = true
	delete(w.show.watchers, w)
	activeSubscriptions.Dec()
	// The slot goes back before the channel closes, so a client that sees the end may
	// subscribe again at once.
	w.release()
	close(w.ch)
}

// startResync marks a watcher as waiting for a fresh snapshot and reads it on a goroutine
// that lives only until the snapshot is in; h.mu is held.
func (h *Hub) startResync(w *watcher, reason string) {
	if w.closed {
		return
	}
	if w.resyncing {
		// The snapshot under way may have been read before what prompted this (a lost
		// pub/sub connection, an unreadable delta): read another one after it.
		if w.again == "" {
			w.again = reason
		}
		return
	}
	w.resyncing, w.reason, w.pending = true, reason, nil
	go h.resync(w)
}

// resync waits until the watcher's client has taken something from a full channel (a
// slow client gets its snapshot when it catches up), reads the snapshot, retrying while
// Redis is unreachable, and puts it in place of the deltas still waiting.
func (h *Hub) resync(w *watcher) {
	for len(w.ch) == cap(w.ch) {
		if !h.pause(w, slowPoll) {
			return
		}
	}
	for {
		ev, err := h.snapshot(w.ctx, w.show)
		if err == nil {
			h.mu.Lock()
			if !w.closed {
				drain(w.ch) // superseded by the snapshot
				h.settle(w, ev, w.reason)
			}
			h.mu.Unlock()
			return
		}
		h.log.Warn("live: read seat-map snapshot", "showtime", w.show.id, "reason", w.reason, "err", err)
		if !h.pause(w, retryDelay) {
			return
		}
	}
}

// pause waits d unless the watcher's subscription or the hub ends first.
func (h *Hub) pause(w *watcher, d time.Duration) bool {
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

// settle puts a snapshot in the watcher's (empty) channel and then the deltas that came
// while it was read, those newer than it; h.mu is held.
func (h *Hub) settle(w *watcher, ev *seatflow.SeatMapEvent, reason string) {
	if w.closed {
		return
	}
	if len(w.ch) == cap(w.ch) { // cannot happen (it was drained, only the hub sends); were it to, read again
		w.resyncing = false
		h.startResync(w, reason)
		return
	}
	snapshotsSent.WithLabelValues(reason).Inc() // counted before the client can see it
	w.ch <- ev
	w.last = ev.Version
	w.resyncing = false
	pending := w.pending
	w.pending = nil
	if again := w.again; again != "" {
		w.again = ""
		h.startResync(w, again)
		return
	}
	for _, d := range pending {
		h.offer(w, d)
	}
}

// drain empties ch without blocking: the client may be taking from it at the same time.
func drain(ch chan *seatflow.SeatMapEvent) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// snapshot reads every seat of the show and the version at one instant.
func (h *Hub) snapshot(ctx context.Context, s *show) (*seatflow.SeatMapEvent, error) {
	m, err := h.store.Map(ctx, s.id, s.hall)
	if err != nil {
		return nil, fmt.Errorf("live seat map: %w", err)
	}
	return &seatflow.SeatMapEvent{Kind: seatflow.EventSnapshot, ShowtimeID: s.id, Version: m.Version, Seats: m.Seats}, nil
}
