// Package live owns the live seat map of subscriptions: one Redis subscription per showtime
// per instance, shared by every local watcher of that showtime, and the fan-out of SNAPSHOT
// and DELTA events to each watcher. The changes of a showtime are coalesced: each watcher
// gets at most one DELTA per tick, carrying the latest state of every seat changed since
// its last event, and a watcher whose connection has not written its last one yet has the
// new changes merged into it. It never changes seat state: snapshots are read from Redis
// through package seats each time one is sent; between them the hub keeps the statuses the
// deltas brought, only to build the coalesced DELTAs.
//
// The hub is sharded by showtime: a showtime's watchers, statuses and writes are guarded
// by a lock of its own, so a burst on one showtime never waits for another, and nothing
// that waits on the network (Redis' SUBSCRIBE and UNSUBSCRIBE, a snapshot's read) runs
// under a lock the delivery path takes (docs/DESIGN.md, "Live seat map").
package live

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"hash/maphash"
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
	// shortest pause before a watcher whose sink could not take its DELTA is offered the
	// merged one.
	slowPoll = 10 * time.Millisecond
	// logCap bounds the deltas a show keeps while its statuses are unknown (waiting for a
	// snapshot): the newest are kept, and a snapshot older than the first of them is read
	// again.
	logCap = 4096
	// shardCount is how many locks the shows are spread over (by channel).
	shardCount = 64
	// slowAfter is how long a watcher's DELTA may wait for its connection before the
	// watcher counts as slow (seatflow_live_slow_subscribers_total).
	slowAfter = time.Second
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
	// waiting is sent at once. 0 sends one DELTA per change (merged only for a watcher
	// that has not taken the one before).
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
	runOnce atomic.Bool
	ended   atomic.Bool // Run is ending: no watcher joins any more

	seed   maphash.Seed
	shards [shardCount]shard
	subs   subscriptions // SUBSCRIBE and UNSUBSCRIBE, in order, off every lock (subscribe.go)
}

// shard is a part of the hub's shows, by channel, under a lock of its own. A show is
// added and removed under its shard's lock (and its own); everything else about a show
// is under the show's lock. Lock order: a shard's, then a show's.
type shard struct {
	mu    sync.Mutex
	shows map[string]*show // by events channel
	// pending counts, per channel, SUBSCRIBE commands whose confirmation has not been
	// read yet: a confirmation only counts for the current show when none is pending, so
	// the late confirmation of an earlier subscribe/unsubscribe cycle is never mistaken
	// for the current one.
	pending map[string]int
}

// NewHub returns a hub reading deltas through rdb and snapshots through store.
func NewHub(rdb redis.UniversalClient, k keys.Keys, store *seats.Store, opts Options) *Hub {
	if opts.Buffer <= 0 {
		opts.Buffer = defaultBuffer
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	h := &Hub{
		rdb: rdb, keys: k, store: store, buffer: opts.Buffer, tick: max(opts.Tick, 0), log: opts.Log,
		lostAfter: cmp.Or(opts.lostAfter, redisLost),
		started:   make(chan struct{}),
		done:      make(chan struct{}),
		seed:      maphash.MakeSeed(),
	}
	for i := range h.shards {
		h.shards[i] = shard{shows: map[string]*show{}, pending: map[string]int{}}
	}
	h.subs.init(opts.Log)
	return h
}

// shardOf is the shard of a channel's show.
func (h *Hub) shardOf(channel string) *shard {
	return &h.shards[maphash.String(h.seed, channel)%shardCount]
}

// showOf returns the show of channel, if it is watched.
func (h *Hub) showOf(channel string) *show {
	sh := h.shardOf(channel)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.shows[channel]
}

// eachShow calls f for every show, each under its lock (and its shard's).
func (h *Hub) eachShow(f func(s *show)) {
	for i := range h.shards {
		sh := &h.shards[i]
		sh.mu.Lock()
		for _, s := range sh.shows {
			s.mu.Lock()
			f(s)
			s.mu.Unlock()
		}
		sh.mu.Unlock()
	}
}

// Run owns the hub's one pub/sub connection and reads it until ctx ends. go-redis
// reconnects and resubscribes by itself when the connection drops; the hub notices the
// repeated confirmations and resyncs the watchers. When Run returns, every watcher's
// stream is closed.
func (h *Hub) Run(ctx context.Context) error {
	if h.runOnce.Swap(true) {
		return errors.New("live hub: Run called twice")
	}
	beat := h.keys.LiveBeat()
	ps := h.rdb.Subscribe(ctx, beat)
	subsDone := make(chan struct{})
	subCtx, stopSubs := context.WithCancel(context.WithoutCancel(ctx))
	go func() { defer close(subsDone); h.subs.run(subCtx, ps) }()
	close(h.started)
	beatCtx, stopBeat := context.WithCancel(ctx)
	beating := make(chan struct{})
	go func() { defer close(beating); h.beat(beatCtx, beat) }()
	defer func() { stopBeat(); <-beating }()

	defer func() {
		h.ended.Store(true) // a join from now on is refused; one before it is swept here
		for i := range h.shards {
			sh := &h.shards[i]
			sh.mu.Lock()
			for _, s := range sh.shows {
				s.mu.Lock()
				for w := range s.watchers {
					h.closeWatcher(w, errShuttingDown)
				}
				s.stopFlushing()
				s.gone = true
				s.mu.Unlock()
				showsWatched.Dec()
			}
			sh.shows = map[string]*show{}
			sh.mu.Unlock()
		}
		close(h.done)
		stopSubs()
		<-subsDone
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
	n := 0
	h.eachShow(func(s *show) {
		for w := range s.watchers {
			h.closeWatcher(w, errRedisLost)
			n++
		}
	})
	if n > 0 {
		h.log.Warn("live: Redis cannot be reached; ended every seat-map watch so clients resubscribe",
			"watches", n, "failing", time.Since(time.Unix(0, h.failingSince.Load())).Round(time.Millisecond))
	}
}

// confirm handles Redis' confirmation of a channel subscription: the first one lets the
// show's watchers read their snapshot; a later one means the connection was restored, and
// deltas may have been lost meanwhile.
func (h *Hub) confirm(channel string) {
	sh := h.shardOf(channel)
	sh.mu.Lock()
	if sh.pending[channel] > 0 {
		sh.pending[channel]--
		if sh.pending[channel] == 0 {
			delete(sh.pending, channel)
		}
	}
	s := sh.shows[channel]
	if s == nil || sh.pending[channel] > 0 {
		sh.mu.Unlock()
		return
	}
	s.mu.Lock()
	sh.mu.Unlock()
	defer s.mu.Unlock()
	if !s.isReady.Load() {
		s.isReady.Store(true)
		close(s.confirmed)
		return
	}
	// The connection was restored: deltas may have been lost. One snapshot serves every
	// watcher of the show (a watcher already resyncing reads another after its own).
	s.forget()
	var ws []*Watcher
	for w := range s.watchers {
		if w.resyncing {
			h.startResync(w, ReasonReconnect)
			continue
		}
		w.setResyncing(ReasonReconnect)
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
	s := h.showOf(channel)
	if s == nil {
		return
	}
	var d seats.Delta
	err := json.Unmarshal([]byte(payload), &d)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return
	}
	if err != nil {
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
// missed); s.mu is held.
func (h *Hub) lost(s *show) {
	s.forget()
	for w := range s.watchers {
		h.startResync(w, ReasonGap)
	}
}
