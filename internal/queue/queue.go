// Package queue owns the on-sale queue of a showtime: the virtual waiting room that
// decides who may hold its seats while its sale opens (docs/DESIGN.md "On-sale queue"). It
// keeps each queue's record in MySQL (settings, the draw's seed) and its state in Redis
// under the showtime's hash tag, changed only by its Lua scripts (lua/*.lua: joins,
// leaves, the admission tick, passes ended); it opens the showtime's sales at the queue's
// opensAt, admits entrants at the set rate from the one instance holding the queue's
// lease, signs admission passes and verifies them for holds, and streams each entrant's
// ticket to them. It never holds, sells or frees a seat (package booking does, and checks
// the pass in the same script as the hold, through package seats).
package queue

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/ent"
	"seatflow/internal/keys"
	"seatflow/internal/rdb"
	"seatflow/internal/redislock"
	"seatflow/internal/showfeed"
)

// Catalog is what the queue reads and writes of showtimes (package catalog).
type Catalog interface {
	// Showtime reads a showtime through the catalog cache (NOT_FOUND when none).
	Showtime(ctx context.Context, id int) (*seatflow.Showtime, error)
	// FreshShowtime reads a showtime from MySQL, never from a cache.
	FreshShowtime(ctx context.Context, id int) (*seatflow.Showtime, error)
	// WriteShowtime runs fn over the showtime's row in one transaction that also drops
	// its cache entry on every instance, and returns the showtime as it is after.
	WriteShowtime(ctx context.Context, id int, fn func(tx *ent.Tx, st *ent.Showtime) error) (*seatflow.Showtime, error)
}

// Sales puts a showtime on sale when its queue opens, and builds a seat hash Redis lost
// (package sales).
type Sales interface {
	OpenSales(ctx context.Context, showID int) (*seatflow.Showtime, error)
	InitSeats(ctx context.Context, showID, hallID int) (bool, error)
}

// Defaults of Config.
const (
	DefaultTick      = time.Second
	DefaultLease     = 3 * time.Second
	DefaultRefresh   = 15 * time.Second
	DefaultSeenEvery = time.Minute
	DefaultClosedTTL = 24 * time.Hour
	// maxSkips bounds the absent entrants one tick skips, and so the tick's time.
	maxSkips = 500
)

// Config is how a Service behaves; New gives each zero field its default.
type Config struct {
	// Now is the clock of joins, admissions and passes; time.Now by default.
	Now seatflow.ClockFunc
	// JoinRate limits joinQueue per client address (zero: no limit).
	JoinRate redis_rate.Limit
	// Tick is how often the admission runs (DefaultTick: about once a second).
	Tick time.Duration
	// Lease is how long an instance's claim on a queue's admission lasts unless renewed
	// by its next tick: another instance takes over within it when the holder dies.
	Lease time.Duration
	// Refresh is the longest a subscriber goes without a push (DefaultRefresh, under the
	// 20 s the API promises).
	Refresh time.Duration
	// SeenEvery is how often an instance marks its subscribers seen (well within
	// seatflow.QueueAbsence).
	SeenEvery time.Duration
	// ClosedTTL is how long a closed queue's state stays in Redis (its record in MySQL
	// stays).
	ClosedTTL time.Duration
	// Log receives what background work cannot report; slog.Default() by default.
	Log *slog.Logger
}

// Service runs the on-sale queues. Build one with New.
type Service struct {
	DB      *ent.Client
	RDB     redis.UniversalClient
	Keys    keys.Keys
	Catalog Catalog
	Sales   Sales
	// Passes signs and verifies admission passes.
	Passes *Passes
	Config

	limiter *redis_rate.Limiter
	batch   rdb.Batch // the round trips joins, reads and subscribers' updates share
	lease   string    // this instance's lease token
	secrets secrets
	feeds   showfeed.Registry[*feed]
}

// New returns the queues' service over its stores, with c's settings and the defaults of
// those c leaves zero.
func New(db *ent.Client, r redis.UniversalClient, k keys.Keys, cat Catalog, sales Sales, passes *Passes, c Config) *Service {
	if c.Tick <= 0 {
		c.Tick = DefaultTick
	}
	if c.Lease <= 0 {
		c.Lease = DefaultLease
	}
	if c.Refresh <= 0 {
		c.Refresh = DefaultRefresh
	}
	if c.SeenEvery <= 0 {
		c.SeenEvery = DefaultSeenEvery
	}
	if c.ClosedTTL <= 0 {
		c.ClosedTTL = DefaultClosedTTL
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	return &Service{DB: db, RDB: r, Keys: k, Catalog: cat, Sales: sales, Passes: passes, Config: c,
		limiter: rdb.NewLimiter(r), lease: redislock.Token()}
}

// run runs script through the service's batch: under a rush of joins the round trips,
// not the scripts, are the cost.
func (s *Service) run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	return s.batch.Run(ctx, s.RDB, script, keys, args...)
}

// stateKeys are every key of a showtime's queue state, in setup.lua's order.
func (s *Service) stateKeys(showID int) []string {
	k := s.Keys
	return []string{k.Queue(showID), k.QueueWaiting(showID), k.QueueTickets(showID), k.QueueUsers(showID),
		k.QueueSeen(showID), k.QueuePasses(showID), k.QueueRate(showID), k.QueueLease(showID)}
}

// ticketKeys are the keys join.lua and ticket.lua take.
func (s *Service) ticketKeys(showID int) []string {
	k := s.Keys
	return []string{k.Queue(showID), k.QueueWaiting(showID), k.QueueTickets(showID), k.QueueUsers(showID), k.QueueSeen(showID)}
}

// secrets are the draws' seeds an instance has read from MySQL, by showtime: a join
// computes its ticket's draw key with the seed, which never changes while its queue lives.
type secrets struct {
	mu     sync.Mutex
	byShow map[int]drawSecret
}

// drawSecret is a queue's seed and its commitment.
type drawSecret struct {
	seed       []byte
	commitment string
}

func (c *secrets) get(showID int) (drawSecret, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.byShow[showID]
	return d, ok
}

func (c *secrets) put(showID int, d drawSecret) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byShow == nil {
		c.byShow = map[int]drawSecret{}
	}
	c.byShow[showID] = d
}

func (c *secrets) drop(showID int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byShow, showID)
}
