// Package live owns the live seat map of subscriptions: one Redis subscription per showtime
// per instance, shared by every local watcher of that showtime, and the fan-out of SNAPSHOT
// and DELTA events to each watcher through a bounded buffer. The changes of a showtime are
// coalesced: each watcher gets at most one DELTA per tick, carrying the latest state of
// every seat changed since its last event. It never changes seat state: snapshots are read
// from Redis through package seats each time one is sent; between them the hub keeps the
// statuses the deltas brought, only to build the coalesced DELTAs.
package live

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
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
	ReasonInitial = "initial" // first event of every subscription
	ReasonGap     = "gap"     // a delta's version skipped one: something was missed
	// ReasonSlow is no longer sent: a watcher that cannot keep up has its changes merged
	// into its next DELTA (seatflow_live_slow_subscribers_total counts it). The label is
	// kept so the metric's series stay.
	ReasonSlow      = "slow"
	ReasonReconnect = "reconnect" // the pub/sub connection dropped and was restored
)

const (
	defaultBuffer = 64
	// confirmTimeout bounds how long Watch waits for Redis to confirm a subscription.
	confirmTimeout = 10 * time.Second
	// retryDelay is the pause between attempts to read a resync snapshot.
	retryDelay = time.Second
	// slowPoll is how often a resync looks whether a slow client has caught up, and the
	// shortest pause before a watcher that could not take its DELTA is offered the merged
	// one.
	slowPoll = 10 * time.Millisecond
	// logCap bounds the deltas a show keeps while its statuses are unknown (waiting for a
	// snapshot): the newest are kept, and a snapshot older than the first of them is read
	// again.
	logCap = 4096
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
	// Buffer is how many events each watcher of Watch may have waiting; past it the
	// watcher is slow and its further changes are merged into its next DELTA. Default 64.
	Buffer int
	// Tick bounds how often a busy showtime writes to its watchers: each gets at most one
	// DELTA per tick, carrying every change since its last event. A change with none
	// waiting is sent at once. 0 sends one DELTA per change.
	Tick time.Duration
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
	tick   time.Duration
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

// show is one watched showtime: its Redis subscription, local watchers, and the seats'
// statuses its deltas brought (see show.go). Guarded by the hub's mu.
type show struct {
	id        int
	channel   string
	hall      *seatflow.Hall
	index     map[int]int // seat id → position in hall.Seats
	watchers  map[*watcher]struct{}
	confirmed chan struct{} // closed at the first subscribe confirmation
	isReady   bool

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
	// due (timer), and the watchers that could not take their DELTA.
	lastFlush time.Time
	timer     *time.Timer
	behind    map[*watcher]struct{}
	// pending are the changes taken since the last write, for its metric and span
	// (deliver.go).
	pending pendingChanges
}

// watcher is one subscription. Its sink is where its events go: the hub puts events in
// it without ever blocking, and only under h.mu, so no goroutine per watcher is needed.
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
		rdb: rdb, keys: k, store: store, buffer: opts.Buffer, tick: max(opts.Tick, 0), log: opts.Log,
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
			s.stopFlushing()
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
	s.forget()
	var ws []*watcher
	for w := range s.watchers {
		if w.resyncing {
			h.startResync(w, ReasonReconnect)
			continue
		}
		w.resyncing, w.reason = true, ReasonReconnect
		delete(s.behind, w)
		ws = append(ws, w)
	}
	if len(ws) > 0 {
		go h.resyncShow(s, ws)
	}
}

// deliver parses a published delta once and takes it into its show; the show's watchers
// get it (merged with the changes before it not yet sent) without the hub ever blocking.
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
		h.lost(s)
		return
	}
	switch s.take(d) {
	case taken:
		s.pending.note(d)
		h.schedule(s)
	case missed:
		h.lost(s)
	}
}

// lost resyncs every watcher of a show whose statuses are no longer known (a delta was
// missed); h.mu is held.
func (h *Hub) lost(s *show) {
	s.forget()
	for w := range s.watchers {
		h.startResync(w, ReasonGap)
	}
}
