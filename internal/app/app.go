// Package app assembles one SeatFlow instance: its configuration, its stores (real or
// embedded), the services wired over them, what it runs in the background, and its HTTP
// handler. It is what the server binary, the benchmarks and the API tests start; it holds
// no rule of its own.
package app

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/ent"
	"seatflow/internal/auth"
	"seatflow/internal/background"
	"seatflow/internal/booking"
	"seatflow/internal/cache"
	"seatflow/internal/catalog"
	"seatflow/internal/database"
	"seatflow/internal/googlewallet"
	"seatflow/internal/guests"
	"seatflow/internal/httpapi"
	"seatflow/internal/keys"
	"seatflow/internal/live"
	"seatflow/internal/passkit"
	"seatflow/internal/payments"
	"seatflow/internal/queue"
	"seatflow/internal/rdb"
	"seatflow/internal/reconcile"
	"seatflow/internal/reports"
	"seatflow/internal/respcache"
	"seatflow/internal/sales"
	"seatflow/internal/seatrender"
	"seatflow/internal/seats"
	"seatflow/internal/throttle"
	"seatflow/internal/tickets"
	"seatflow/internal/waitlist"
	"seatflow/internal/wallet"
	"seatflow/internal/wstransport"
)

// App is one SeatFlow instance: its stores, its services, and what it runs in the
// background. Open builds it, Close releases it.
type App struct {
	Config *Config
	Log    *slog.Logger
	DB     *ent.Client
	SQL    *sql.DB
	Redis  redis.UniversalClient
	// CacheRedis holds what may be evicted: catalog caches, persisted queries, cost
	// budgets. The seat Redis unless SEATFLOW_CACHE_REDIS_URL names another.
	CacheRedis redis.UniversalClient
	// Budget is every client's query-cost budget; CrowdBudget the one every guest session
	// of an address shares besides its own.
	Budget, CrowdBudget *throttle.Budget
	// Guests starts guest sessions.
	Guests *guests.Service
	// PersistedQueries is the manifest of registered documents (sha256 → document).
	PersistedQueries map[string]string
	Keys             keys.Keys
	Auth             *auth.Authenticator
	Catalog          *catalog.Service
	Cache            *cache.Cache
	// Responses keeps rendered catalog-only responses; nil when off.
	Responses *respcache.Store
	Seats     *seats.Store
	Layouts   *seats.Layouts
	Maps      *seats.Maps
	Sales     *sales.Service
	Booking   *booking.Service
	Live      *live.Hub
	Rec       *reconcile.Reconciler
	// Payments is the configured payment provider.
	Payments payments.Provider
	Outbox   *cache.Outbox
	// SeatMaps keeps rendered seat maps per showtime, version and selection.
	SeatMaps *seatrender.Memo
	// Websockets are the instance's open websockets, closed with a frame on shutdown.
	Websockets *wstransport.Registry
	// Tickets are the tickets and the door; nil for a command that signs none (no secret).
	Tickets *tickets.Service
	// Wallet makes the tickets' Apple Wallet passes; nil without Tickets.
	Wallet *wallet.Service
	// PassKit is the Wallet passes' web service and push loop.
	PassKit *passkit.Service
	// Reports computes the admin's sales reports.
	Reports *reports.Service
	// Queues runs the showtimes' on-sale queues.
	Queues *queue.Service
	// Waitlist runs the sold-out showtimes' waiting lists.
	Waitlist *waitlist.Service
	// GoogleWallet signs "Save to Google Wallet" links; nil when Google Wallet is off.
	GoogleWallet *googlewallet.Issuer
	Now          func() time.Time

	embeddedRedis *miniredis.Miniredis
	closers       []func()
}

// Open connects to the stores (or starts the embedded ones), migrates the schema and
// builds the services.
func Open(ctx context.Context, cfg *Config, log *slog.Logger) (*App, error) {
	return OpenWithClock(ctx, cfg, log, time.Now)
}

// OpenWithClock is Open with the clock every service of the instance reads (hold times,
// expiry, grace periods, cache expiry): the fault-injection suite skews instances' clocks
// against each other with it.
func OpenWithClock(ctx context.Context, cfg *Config, log *slog.Logger, now func() time.Time) (*App, error) {
	a := &App{Config: cfg, Log: log, Keys: keys.New(cfg.RedisPrefix), Now: now}
	if err := a.openStores(ctx); err != nil {
		a.Close()
		return nil, err
	}
	if err := a.wire(); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// wire builds the services over the stores a already holds.
func (a *App) wire() error {
	// SEATFLOW_TIMEZONE is the default cinema's zone (the migration's): refuse a bad one early.
	var err error
	if _, err = a.Config.Location(); err != nil {
		return err
	}
	a.Auth = NewAuthenticator(a.Config)
	if a.Config.PaymentProvider != "" { // commands that take no payment (migrate, seed-demo, verify) have none
		a.Payments, err = payments.New(payments.Config{Provider: a.Config.PaymentProvider, Stripe: payments.StripeConfig{
			APIKey: a.Config.StripeAPIKey, WebhookSecret: a.Config.StripeWebhookSecret, APIBase: a.Config.StripeAPIBase}})
		if err != nil {
			return fmt.Errorf("SEATFLOW_PAYMENT_PROVIDER: %w", err)
		}
	}
	if a.Payments != nil && a.Payments.ConfirmedByClient() && !a.Config.Embedded() {
		a.Log.Warn("PAYMENTS ARE NOT REAL: SEATFLOW_PAYMENT_PROVIDER=test lets any customer mark an order PAID " +
			"with payOrder and take seats without paying. Use it for demos and tests only; set stripe to sell tickets")
	}
	cacheCfg := cache.Config{LocalBytes: a.Config.LocalCacheBytes, Now: a.Now, Disabled: !a.Config.CacheEnabled}
	if a.Config.CacheEnabled && a.Config.ResponseCacheBytes > 0 {
		a.Responses = respcache.New(a.Config.ResponseCacheBytes, a.Now)
		cacheCfg.OnDrop = a.Responses.Drop
	}
	if a.CacheRedis == nil {
		a.CacheRedis = a.Redis
	}
	if a.Config.PersistedQueries != "" {
		if a.PersistedQueries, err = httpapi.LoadManifest(a.Config.PersistedQueries); err != nil {
			return fmt.Errorf("SEATFLOW_PERSISTED_QUERIES: %w", err)
		}
	}
	limiter := rdb.NewLimiter(a.CacheRedis)
	a.Budget = &throttle.Budget{Limiter: limiter, KeyPrefix: a.Keys.CostBudget(),
		Capacity: a.Config.CostBudget, Restore: a.Config.CostRestore}
	a.CrowdBudget = &throttle.Budget{Limiter: limiter, KeyPrefix: a.Keys.CostBudget(),
		Capacity: a.Config.CrowdCostBudget, Restore: a.Config.CrowdCostRestore}
	a.Guests = &guests.Service{Auth: a.Auth, Limiter: limiter, Keys: a.Keys,
		Rate: perMinute(a.Config.GuestSessionsPerMinute), TTL: a.Config.GuestSessionTTL, CostBudget: a.Config.CostBudget}
	a.Cache = cache.New(a.CacheRedis, a.Keys, cacheCfg)
	a.Outbox = &cache.Outbox{DB: a.DB, Cache: a.Cache, Now: a.Now}
	a.Catalog = &catalog.Service{DB: a.DB, Cache: a.Cache, Inval: a.Outbox, Now: a.Now, Log: a.Log}
	a.Reports = &reports.Service{DB: a.DB, Catalog: a.Catalog, Now: a.Now}
	a.Seats = &seats.Store{RDB: a.Redis, Keys: a.Keys, Now: a.Now}
	a.Layouts = &seats.Layouts{Halls: a.Catalog}
	a.Maps = &seats.Maps{Store: a.Seats, Layouts: a.Layouts, Showtimes: a.Catalog}
	a.Sales = &sales.Service{DB: a.DB, Seats: a.Seats, RDB: a.Redis, Keys: a.Keys, Catalog: a.Catalog, Now: a.Now,
		CloseAfter: a.Config.SalesCloseAfter, Log: a.Log}
	a.Booking = booking.New(booking.Deps{DB: a.DB, Seats: a.Seats, Layouts: a.Layouts, Hashes: a.Sales, RDB: a.Redis,
		Keys: a.Keys, Catalog: a.Catalog, Provider: a.Payments},
		booking.Config{Now: a.Now, HoldTTL: a.Config.HoldTTL, LateWindow: a.Config.LateWindow, SingleWriter: a.Config.Embedded(),
			SalesCloseAfter: a.Config.SalesCloseAfter,
			HoldRate:        perMinute(a.Config.HoldsPerMinute), OrderRate: perMinute(a.Config.OrderChangesPerMinute), Log: a.Log})
	a.Sales.Orders = a.Booking
	a.Queues = queue.New(a.DB, a.Redis, a.Keys, a.Catalog, a.Sales, queue.NewPasses([]byte(a.Config.JWTSecret), a.Now),
		queue.Config{Now: a.Now, JoinRate: perMinute(a.Config.QueueJoinsPerMinute), Log: a.Log})
	a.Booking.Admissions = a.Queues
	a.Waitlist = waitlist.New(waitlist.Deps{DB: a.DB, Seats: a.Seats, Layouts: a.Layouts, RDB: a.Redis, Keys: a.Keys, Catalog: a.Catalog, Booking: a.Booking, Sales: a.Reports},
		waitlist.Config{Now: a.Now, OfferTTL: a.Config.WaitlistOfferTTL, SalesCloseAfter: a.Config.SalesCloseAfter, Log: a.Log})
	a.Seats.OnReturned = a.Waitlist.Kick
	if err := a.wireTickets(); err != nil {
		return err
	}
	if err := a.wireWallet(); err != nil {
		return err
	}
	if err := a.wireGoogleWallet(); err != nil {
		return err
	}
	if err := a.wirePassKit(); err != nil {
		return err
	}
	a.Live = live.NewHub(a.Redis, a.Keys, a.Seats, live.Options{Tick: a.Config.LiveTick, Log: a.Log})
	a.Rec = &reconcile.Reconciler{DB: a.DB, Seats: a.Seats, Orders: a.Booking, Sales: a.Sales, Waitlist: a.Waitlist, RDB: a.Redis,
		Keys: a.Keys, Config: reconcile.Config{Now: a.Now, Log: a.Log, EmptyAtStart: a.Config.Embedded()}}
	if a.Config.SeatMapMemo {
		a.SeatMaps = seatrender.NewMemo()
	}
	a.Websockets = &wstransport.Registry{MaxConns: a.Config.WSMaxConns, MaxConnsPerClient: a.Config.WSMaxConnsPerClient,
		MaxConnsPerSession: a.Config.WSMaxConnsPerSession, ClientAddr: a.ClientAddr(),
		Requests: &wstransport.Requests{}, Share: a.Config.LiveWriteShare}
	return nil
}

// Start runs the instance's background work until Close: the cache invalidation
// listener, the outbox relay, the order expiry worker, the sales closer, the on-sale
// queues' admission, the live seat-map hub, the Wallet passes' pushes and the reconciler (every instance runs it; a Redis lock lets one at a
// time do the work).
func (a *App) Start(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	run := func(f func(context.Context)) {
		wg.Add(1)
		go func() { defer wg.Done(); f(ctx) }()
	}
	run(a.Cache.Run)
	run(func(ctx context.Context) { a.Outbox.RunRelay(ctx, 10*time.Second) })
	// An end before ctx's is reported: nothing restarts them.
	run(func(ctx context.Context) {
		background.Stopped(ctx, a.Log, background.ExpiryWorker, a.Booking.RunExpiryWorker(ctx, time.Second))
	})
	run(func(ctx context.Context) { a.Sales.RunCloser(ctx, salesCloserEvery) })
	run(a.Queues.RunAdmission)
	run(func(ctx context.Context) { _ = a.Waitlist.Run(ctx) })
	run(func(ctx context.Context) { background.Stopped(ctx, a.Log, background.LiveHub, a.Live.Run(ctx)) })
	run(a.runPassPushes)
	if a.Config.ReconcileEvery > 0 {
		run(func(ctx context.Context) { a.Rec.Run(ctx, a.Config.ReconcileEvery) })
	}
	a.closers = append(a.closers, func() { cancel(); wg.Wait() })
	// Runs first (closers run last to first): sockets end before the hub feeding them.
	a.Websockets.Start()
	a.closers = append(a.closers, a.Websockets.Close)
}

func (a *App) openStores(ctx context.Context) error {
	var err error
	if a.Config.Embedded() {
		if a.DB, a.SQL, err = database.OpenSQLite(a.Config.SQLitePath); err != nil {
			return err
		}
		if a.embeddedRedis, err = miniredis.Run(); err != nil {
			return fmt.Errorf("start embedded redis: %w", err)
		}
		a.Redis = redis.NewClient(&redis.Options{Addr: a.embeddedRedis.Addr()})
	} else {
		if a.DB, a.SQL, err = database.OpenMySQL(a.Config.MySQLDSN); err != nil {
			return err
		}
		a.SQL.SetMaxOpenConns(a.Config.MySQLMaxConns)
		a.SQL.SetMaxIdleConns(a.Config.MySQLMaxConns)
		if a.Redis, err = rdb.Open(a.Config.RedisURL, a.Config.RedisCluster); err != nil {
			return fmt.Errorf("SEATFLOW_REDIS_URL: %w", err)
		}
		if a.Config.CacheRedisURL != "" {
			if a.CacheRedis, err = rdb.Open(a.Config.CacheRedisURL, ""); err != nil {
				return fmt.Errorf("SEATFLOW_CACHE_REDIS_URL: %w", err)
			}
			if err := a.CacheRedis.Ping(ctx).Err(); err != nil {
				return fmt.Errorf("reach the cache redis: %w", err)
			}
		}
	}
	for _, c := range []redis.UniversalClient{a.Redis, a.CacheRedis} {
		if err := rdb.Instrument(c); err != nil {
			return err
		}
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := a.SQL.PingContext(pingCtx); err != nil {
		return fmt.Errorf("reach the database: %w", err)
	}
	if err := a.Redis.Ping(pingCtx).Err(); err != nil {
		return fmt.Errorf("reach redis: %w", err)
	}
	return database.Migrate(ctx, a.DB, a.SQL, database.DefaultCinema{Name: seatflow.DefaultCinemaName, TimeZone: a.Config.Timezone})
}

// Ready pings both stores.
func (a *App) Ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return errors.Join(a.SQL.PingContext(ctx), a.Redis.Ping(ctx).Err())
}

// Close stops background work and closes the stores.
func (a *App) Close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
	if a.CacheRedis != nil && a.CacheRedis != a.Redis {
		a.CacheRedis.Close()
	}
	if a.Redis != nil {
		a.Redis.Close()
	}
	if a.DB != nil {
		a.DB.Close()
	}
	if a.embeddedRedis != nil {
		a.embeddedRedis.Close()
	}
}

// salesCloserEvery is how often each instance closes the sales of showtimes that started
// SEATFLOW_SALES_CLOSE_AFTER ago: holds and payments check the time themselves, so the
// closer only has to keep statuses and pending orders in step.
const salesCloserEvery = 5 * time.Second

// perMinute is a per-user rate; 0 turns the limit off.
func perMinute(n int) redis_rate.Limit {
	if n <= 0 {
		return redis_rate.Limit{}
	}
	return redis_rate.PerMinute(n)
}

// NewAuthenticator signs and verifies tokens with the configured secret and lifetime.
func NewAuthenticator(cfg *Config) *auth.Authenticator {
	return &auth.Authenticator{Secret: []byte(cfg.JWTSecret), Now: time.Now, MaxLifetime: cfg.MaxTokenLifetime}
}
