// Package live owns the live seat map of subscriptions: one Redis subscription per showtime
// per instance, shared by every local watcher of that showtime, and the fan-out of SNAPSHOT
// and DELTA events to each watcher through a bounded buffer. It never changes seat state and
// never caches it: snapshots are read from Redis through package seats each time one is
// sent, and a delta lives only until its watcher has taken it.
package live

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/internal/coalesce"
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

// errNotRunning answers a watcher when the hub is not (or no longer) reading Redis.
var errNotRunning = seatflow.Unavailable("live seat map", errors.New("the hub is not running"))

// Heartbeat: every hub publishes a beat this often on keys.LiveBeat and listens to it; a
// hub that has heard no beat for beatStale does not vouch for the versions it knows.
//
// Lateness never ends a watch: a busy instance reads its own beats late (its loop is
// behind, its timers fire late), and that says nothing about Redis. A watch ends only when
// Redis is really lost: every beat attempted for redisLost failed (an error from Redis or
// the connection, or no answer within the client's timeouts; counted from the start of the
// first failed attempt). Lateness alone fails no publish to a reachable Redis. The watchers then get
// errRedisLost, carrying a code, and subscribe again; until then a pub/sub connection that
// drops is restored by go-redis (its health check pings it), and the confirmations of the
// restored subscriptions resync every watcher (ReasonReconnect).
const (
	beatEvery = 250 * time.Millisecond
	beatStale = time.Second
	redisLost = 3 * time.Second
)

// Why the server ends a watch (the client subscribes again and resets its map from the
// SNAPSHOT it gets first); a watch its client ends closes without a reason.
var (
	errRedisLost    = seatflow.Unavailable("live seat map", errors.New("Redis cannot be reached"))
	errShuttingDown = seatflow.Unavailable("live seat map", errors.New("the instance is shutting down"))
)

// Options tunes a Hub.
type Options struct {
	// Buffer is how many deltas each watcher may have waiting before it is marked slow
	// (its buffered deltas are dropped and it gets a fresh SNAPSHOT). Default 64.
	Buffer int
	// Log receives the hub's errors; slog.Default() when nil.
	Log *slog.Logger

	lostAfter time.Duration // redisLost when 0; shorter in tests
}

// Hub fans seat-map deltas out to the local watchers of each showtime. There is one per
// instance; Run must be running for Watch to work.
type Hub struct {
	rdb    redis.UniversalClient
	keys   keys.Keys
	store  *seats.Store
	buffer int
	log    *slog.Logger

	lastBeat atomic.Int64 // unix ns of the last heartbeat heard on the pub/sub connection
	// beatFailed is the unix ns of the last heartbeat this hub could not publish: Redis
	// refused it, so the hub stops vouching at once instead of beatStale later.
	beatFailed atomic.Int64
	// failingSince is the unix ns at which the first of the beats that failed in a row
	// since the last one that went out was attempted; 0 while beats go out.
	failingSince atomic.Int64
	lostAfter    time.Duration // redisLost; shorter in tests
	snapshots    coalesce.Group[int, *seatflow.SeatMapEvent]

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

	// The seats' statuses at stateVersion, from the newest snapshot and the deltas since,
	// for the available count of each delta; nil when a delta was missed (until the
	// next snapshot). Guarded by the hub's mu.
	state        []seatflow.SeatStatus
	stateVersion int
	available    int
}

// watcher is one subscription. Its sink is where its events go: the hub puts events in
// it without ever blocking, and only under h.mu, so no goroutine per watcher is needed.
// While a snapshot is being read for it (resyncing), deltas wait in pending, the newest
// Buffer of them.
type watcher struct {
	show    *show
	ctx     context.Context
	sink    Sink
	release func() // gives the connection's subscription slot back; safe to call twice

	// Guarded by the hub's mu.
	last      int // version of the last event put in the sink
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
		lostAfter: cmp.Or(opts.lostAfter, redisLost),
		started:   make(chan struct{}),
		done:      make(chan struct{}),
		shows:     map[string]*show{},
		pending:   map[string]int{},
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
	beat := h.keys.LiveBeat()
	ps := h.rdb.Subscribe(ctx, beat)
	h.ps = ps
	h.mu.Unlock()
	close(h.started)
	beatCtx, stopBeat := context.WithCancel(ctx)
	beating := make(chan struct{})
	go func() { defer close(beating); h.beat(beatCtx, beat) }()
	defer func() { stopBeat(); <-beating }()

	defer func() {
		h.mu.Lock()
		h.ps = nil
		h.ended = true
		for _, s := range h.shows {
			for w := range s.watchers {
				h.closeWatcher(w, errShuttingDown)
			}
		}
		h.shows = map[string]*show{}
		h.mu.Unlock()
		close(h.done)
		_ = ps.Close()
	}()

	msgs := ps.ChannelWithSubscriptions(redis.WithChannelSize(1024))
	watchdog := time.NewTicker(beatEvery)
	defer watchdog.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-watchdog.C:
			if since := h.failingSince.Load(); since != 0 && time.Since(time.Unix(0, since)) > h.lostAfter {
				h.endWatches()
			}
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
				if m.Channel == beat {
					h.lastBeat.Store(time.Now().UnixNano())
					continue
				}
				h.deliver(m.Channel, m.Payload)
			}
		}
	}
}

// endWatches ends every watch of the hub with errRedisLost (see redisLost). The shows
// stay subscribed: when Redis is back, a new watcher of one of them reads its snapshot at
// once.
func (h *Hub) endWatches() {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, s := range h.shows {
		for w := range s.watchers {
			h.closeWatcher(w, errRedisLost)
			n++
		}
	}
	if n > 0 {
		h.log.Warn("live: Redis cannot be reached; ended every seat-map watch so clients resubscribe",
			"watches", n, "failing", time.Since(time.Unix(0, h.failingSince.Load())).Round(time.Millisecond))
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
	case !w.sink.Put(ev): // the client is not keeping up
		slowSubscribers.Inc()
		h.startResync(w, ReasonSlow)
	default:
		w.last = ev.Version
		deltasDelivered.Inc()
	}
}

// deltaEvent turns a delta into the event clients see: the changed seats with their full
// template and the seats free after it. The event is shared read-only by every watcher
// of the show; h.mu is held.
func (s *show) deltaEvent(d seats.Delta) *seatflow.SeatMapEvent {
	ev := &seatflow.SeatMapEvent{Kind: seatflow.EventDelta, ShowtimeID: s.id, FromVersion: d.Version - 1, Version: d.Version,
		Available: s.available, Seats: make([]seatflow.SeatState, 0, len(d.Changes))}
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
		ev.Seats = append(ev.Seats, seatflow.SeatState{ShowtimeID: s.id, Seat: seat, Status: status})
	}
	s.track(ev)
	return ev
}

// learn takes the seats' statuses from a snapshot newer than what the show knows; h.mu
// is held.
func (s *show) learn(ev *seatflow.SeatMapEvent) {
	if s.state != nil && ev.Version <= s.stateVersion {
		return
	}
	s.state = make([]seatflow.SeatStatus, len(s.hall.Seats))
	for _, st := range ev.Seats {
		if i, ok := s.index[st.Seat.ID]; ok {
			s.state[i] = st.Status
		}
	}
	s.stateVersion, s.available = ev.Version, ev.Available
}

// track applies the next delta to the statuses the show knows and sets its available
// count. A delta past the next one means one was missed: the count is unknown until the
// next snapshot (every watcher resyncs then, so none is given a wrong count); h.mu is held.
// No watcher has received ev yet.
func (s *show) track(ev *seatflow.SeatMapEvent) {
	switch {
	case s.state == nil || ev.Version <= s.stateVersion:
	case ev.Version > s.stateVersion+1:
		s.state = nil
	default:
		for _, st := range ev.Seats {
			i := s.index[st.Seat.ID]
			s.available += countFree(st.Status) - countFree(s.state[i])
			s.state[i] = st.Status
		}
		s.stateVersion, ev.Available = ev.Version, s.available
	}
}

func countFree(st seatflow.SeatStatus) int {
	if st == seatflow.SeatAvailable {
		return 1
	}
	return 0
}
