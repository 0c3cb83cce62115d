package app

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"seatflow"
	"seatflow/internal/auth"
	"seatflow/internal/booking"
	"seatflow/internal/database"
	"seatflow/internal/guests"
	"seatflow/internal/httpapi"
	"seatflow/internal/wstransport"
)

// Config is the server's configuration: SEATFLOW_* environment variables, each
// overridable by the flag of the same name in lower case (SEATFLOW_HOLD_TTL → -hold-ttl).
type Config struct {
	// Settings are the API's limits and switches, filled by their flags directly.
	httpapi.Settings

	Addr         string
	MySQLDSN     string
	RedisURL     string
	DebugAddr    string
	RedisCluster string
	RedisPrefix  string
	SQLitePath   string
	JWTSecret    string
	HoldTTL      time.Duration
	LateWindow   time.Duration
	// WaitlistOfferTTL is how long seats offered to a waiting-list entry stay held.
	WaitlistOfferTTL time.Duration
	// SalesCloseAfter is how long after its start a showtime's sales close by themselves.
	SalesCloseAfter time.Duration
	AllowedOrigins  string
	LogLevel        string
	Timezone        string
	LocalCacheBytes int
	CacheEnabled    bool
	// ResponseCacheBytes bounds the rendered responses of catalog-only queries (0 = off).
	ResponseCacheBytes int
	// SeatMapMemo keeps rendered seat maps per showtime version (off: every read renders).
	SeatMapMemo bool
	// LiveTick bounds how often a busy showtime writes to its live watchers (0: one DELTA
	// per change).
	LiveTick time.Duration
	// LiveWriteShare is the least part of their time the live writers take while they
	// give way to requests under way (1: they never give way).
	LiveWriteShare float64
	ReconcileEvery time.Duration
	MySQLMaxConns  int
	HoldsPerMinute int
	// QueueJoinsPerMinute limits joinQueue per client address (0 = no limit).
	QueueJoinsPerMinute int
	// OrderChangesPerMinute limits payOrder, cancelOrder and extendHold per user.
	OrderChangesPerMinute int

	// Abuse limits (docs: Production checklist), besides those of Settings.
	CostBudget, CostRestore int // points per client: at once, back per second (0 = off)
	// CrowdCostBudget and CrowdCostRestore are the budget every guest session of one
	// address shares besides its own: the backstop behind the sessions (0 = off).
	CrowdCostBudget, CrowdCostRestore int
	// GuestSessionsPerMinute bounds the guest sessions one address starts (0 = no limit);
	// GuestSessionTTL is how long one lives.
	GuestSessionsPerMinute int
	GuestSessionTTL        time.Duration
	// WSMaxConnsPerSession caps the websockets of one user, guest session or tokenless
	// address (counted at connection_init); WSMaxConnsPerClient, per address, is the
	// backstop for a crowd behind one address.
	WSMaxConnsPerSession            int
	PersistedQueries                string // manifest file
	TrustedProxies                  string
	WSMaxConns, WSMaxConnsPerClient int
	// CacheRedisURL is the Redis of the catalog caches, persisted queries and cost
	// budgets (evictable); empty: the seat Redis.
	CacheRedisURL string
	// MetricsAddr serves /metrics on an address of its own; empty: no /metrics. Never on
	// Addr: what the server does is no client's business.
	MetricsAddr string
	// PaymentProvider is stripe or test: embedded mode defaults to test, real mode must
	// name one.
	PaymentProvider string
	// StripeAPIKey, StripeWebhookSecret and StripeAPIBase configure the stripe provider.
	StripeAPIKey        string
	StripeWebhookSecret string
	StripeAPIBase       string
	// TicketKeySecret seals the private keys that sign ticket codes (required outside
	// embedded mode, which keeps a generated one beside its SQLite file).
	TicketKeySecret string
	// WalletApple are the Apple Wallet pass settings: the pass-type certificate, its key
	// and Apple's WWDR intermediate (PEM files), the pass type id and the team id. None set
	// outside embedded mode: no Apple passes; embedded mode then makes a demo CA.
	WalletApple WalletAppleConfig
	// PublicURL is the instance's address as phones and browsers reach it (a pass's
	// webServiceURL is it + "/passkit").
	PublicURL string
	// WalletAPNs pushes the Wallet passes' updates through APNs (off, production or
	// development) with a token key (KEY, KEY_ID, TEAM_ID) or a certificate (CERT).
	WalletAPNs WalletAPNsConfig
	// MaxTokenLifetime is the longest a bearer token may live (exp - iat).
	MaxTokenLifetime time.Duration
	// WalletGoogleKey is the path of the Google Cloud service account's JSON key file that
	// signs "Save to Google Wallet" links; WalletGoogleIssuerID is the issuer account's id.
	// Both or neither (Google Wallet off; embedded mode then signs with a demo key).
	WalletGoogleKey      string
	WalletGoogleIssuerID string
	// takesPayments: the command takes or refunds payments, so it needs a provider.
	takesPayments bool
	// signsTickets: the command signs ticket codes or adds keys, so it needs the secret.
	signsTickets bool
}

// WalletAppleConfig are the SEATFLOW_WALLET_APPLE_* settings.
type WalletAppleConfig struct {
	Cert, Key, WWDR, PassTypeID, TeamID string
}

// missing names the settings of the five that are empty.
func (w WalletAppleConfig) missing() []string {
	var out []string
	for _, s := range []struct{ key, v string }{{"CERT", w.Cert}, {"KEY", w.Key}, {"WWDR", w.WWDR},
		{"PASS_TYPE_ID", w.PassTypeID}, {"TEAM_ID", w.TeamID}} {
		if s.v == "" {
			out = append(out, "SEATFLOW_WALLET_APPLE_"+s.key)
		}
	}
	return out
}

// embeddedPublicURL is embedded mode's public URL unless SEATFLOW_PUBLIC_URL says otherwise.
const embeddedPublicURL = "http://localhost:8080"

// minWSQueuedBytes is the least SEATFLOW_WS_MAX_QUEUED_BYTES: a pong answering the
// largest message a client may send (64 KiB) must fit.
const minWSQueuedBytes = 64 << 10

// embeddedAddr is where embedded mode listens unless SEATFLOW_ADDR says otherwise.
const embeddedAddr = "127.0.0.1:8080"

// embeddedSecret signs tokens in embedded mode, so the printed demo tokens survive a
// restart. Real mode refuses to start without its own secret.
const embeddedSecret = "seatflow-embedded-mode-demo-secret"

// Embedded reports whether the server runs without external services.
func (c *Config) Embedded() bool { return c.MySQLDSN == "" && c.RedisURL == "" && c.RedisCluster == "" }

// Location is the default cinema's time zone: the one the migration gives the cinema it
// makes for the halls from before cinemas.
func (c *Config) Location() (*time.Location, error) {
	loc, err := timeZone(c.Timezone)
	if err != nil {
		return nil, fmt.Errorf("SEATFLOW_TIMEZONE %q: %w", c.Timezone, err)
	}
	return loc, nil
}

// errTimeZone refuses a SEATFLOW_TIMEZONE that seatflow.Zone refuses, in the setting
// check and in Config.Location alike.
var errTimeZone = errors.New("want an IANA time zone such as Europe/Paris or UTC")

// timeZone is SEATFLOW_TIMEZONE's zone by the one rule of every time zone name,
// seatflow.Zone's (the catalog's and the database's too): an IANA name, never "Local" (the
// machine's zone) nor "". Its refusal is errTimeZone.
func timeZone(name string) (*time.Location, error) {
	loc, err := seatflow.Zone(name)
	if err != nil {
		return nil, errTimeZone
	}
	return loc, nil
}

// ParseConfig reads the environment, then the flags in args; every setting is a flag.
func ParseConfig(name string, args []string) (*Config, []string, error) {
	return ParseConfigFor(name, nil, nil, args)
}

// ParseConfigFor is ParseConfig for a command that takes only the settings named in keys
// (e.g. "MYSQL_DSN") as flags, so its -h lists only those (nil: every setting), plus the
// flags own adds (may be nil). The other settings still come from the environment. A
// value that does not parse, in a flag or in a SEATFLOW_* variable, is a cli.UsageError
// naming it, and so is an invalid configuration; -h is cli.Help.
func ParseConfigFor(name string, keys []string, own func(*flag.FlagSet), args []string) (*Config, []string, error) {
	c := &Config{takesPayments: keys == nil || slices.Contains(keys, "PAYMENT_PROVIDER"),
		signsTickets: keys == nil || slices.Contains(keys, "TICKET_KEY_SECRET")}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	str := func(p *string, key, def, usage string) {
		fs.StringVar(p, flagName(key), def, usage+" ($SEATFLOW_"+key+")")
	}
	dur := func(p *time.Duration, key string, def time.Duration, usage string) {
		fs.DurationVar(p, flagName(key), def, usage+" ($SEATFLOW_"+key+")")
	}
	num := func(p *int, key string, def int, usage string) {
		fs.IntVar(p, flagName(key), def, usage+" ($SEATFLOW_"+key+")")
	}
	num64 := func(p *int64, key string, def int64, usage string) {
		fs.Int64Var(p, flagName(key), def, usage+" ($SEATFLOW_"+key+")")
	}
	fraction := func(p *float64, key string, def float64, usage string) {
		fs.Float64Var(p, flagName(key), def, usage+" ($SEATFLOW_"+key+")")
	}
	boolean := func(p *bool, key string, def bool, usage string) {
		fs.BoolVar(p, flagName(key), def, usage+" ($SEATFLOW_"+key+")")
	}
	str(&c.Addr, "ADDR", "", "listen address (default :8080; 127.0.0.1:8080 in embedded mode, which is for one machine)")
	str(&c.DebugAddr, "DEBUG_ADDR", "", "address of the Go profiler (/debug/pprof/); empty = off; never expose it publicly")
	str(&c.MySQLDSN, "MYSQL_DSN", "", "MySQL/MariaDB DSN, e.g. root@tcp(127.0.0.1:3306)/seatflow; empty = embedded SQLite")
	str(&c.RedisURL, "REDIS_URL", "", "Redis URL, e.g. redis://127.0.0.1:6379/0; empty = embedded Redis")
	str(&c.RedisCluster, "REDIS_CLUSTER", "", "Redis Cluster nodes host:port,...")
	str(&c.RedisPrefix, "REDIS_PREFIX", "sf", "prefix of every Redis key")
	str(&c.SQLitePath, "SQLITE_PATH", "seatflow.db", "SQLite file of embedded mode")
	str(&c.JWTSecret, "JWT_SECRET", "", "HS256 secret of bearer tokens (required outside embedded mode)")
	dur(&c.MaxTokenLifetime, "MAX_TOKEN_LIFETIME", auth.DefaultMaxLifetime, "longest lifetime of a bearer token (exp - iat) the server accepts and seatflow token issues")
	dur(&c.HoldTTL, "HOLD_TTL", booking.DefaultHoldTTL, "how long held seats wait for payment")
	dur(&c.WaitlistOfferTTL, "WAITLIST_OFFER_TTL", seatflow.DefaultOfferTTL, "how long seats offered to a waiting-list entry stay held for it")
	dur(&c.LateWindow, "LATE_PAYMENT_WINDOW", booking.DefaultLateWindow, "how long after a hold expired its payment may still take the seats (later: refunded)")
	dur(&c.SalesCloseAfter, "SALES_CLOSE_AFTER", seatflow.DefaultSalesCloseAfter, "how long after its start a showtime's sales close by themselves: no hold after it, a payment is refunded, pending orders expire")
	str(&c.AllowedOrigins, "ALLOWED_ORIGINS", "", "comma-separated browser origins allowed (CORS, websocket); empty = same origin only, * in embedded mode")
	boolean(&c.Introspection, "INTROSPECTION", true, "allow GraphQL introspection")
	num(&c.ComplexityLimit, "COMPLEXITY_LIMIT", 20000, "maximum cost of one query in points (an object 1, a list its size times an element)")
	num(&c.CostBudget, "COST_BUDGET", 50000, "query-cost points a client (user, guest session, or address when anonymous without one) may spend at once; 0 = no budget")
	num(&c.CostRestore, "COST_RESTORE", 1000, "query-cost points given back to a client per second")
	num(&c.CrowdCostBudget, "CROWD_COST_BUDGET", 2_000_000, "query-cost points every guest session of one address may spend at once together, besides each session's own budget (the backstop for a crowd behind one address); 0 = none")
	num(&c.CrowdCostRestore, "CROWD_COST_RESTORE", 50_000, "query-cost points given back to an address' guest sessions together per second")
	num(&c.GuestSessionsPerMinute, "GUEST_SESSIONS_PER_MINUTE", 1200, "guest sessions (mutation guestSession) one address may start per minute (0 = no limit)")
	dur(&c.GuestSessionTTL, "GUEST_SESSION_TTL", guests.DefaultTTL, "lifetime of a guest session's token (at most SEATFLOW_MAX_TOKEN_LIFETIME)")
	num(&c.MaxFields, "MAX_FIELDS", 1000, "most field selections in one document (checked before validation)")
	num(&c.MaxAliases, "MAX_ALIASES", 100, "most aliases in one document")
	num(&c.MaxErrors, "MAX_ERRORS", 20, "most errors listed in one answer")
	num(&c.MaxResponseBytes, "MAX_RESPONSE_BYTES", 4<<20, "largest data of one answer (RESPONSE_TOO_LARGE past it)")
	num(&c.MaxInflightCost, "MAX_INFLIGHT_COST", 50000, "query-cost points of the large queries (1,000 points or more) an instance executes at once; others wait up to 5s (0 = no bound)")
	num(&c.MaxURLBytes, "MAX_URL_BYTES", 8<<10, "longest query string of a GET request (414 past it)")
	num(&c.MaxPersistedBytes, "MAX_PERSISTED_BYTES", 16<<10, "largest document a client may register as a persisted query")
	boolean(&c.PersistedOnly, "PERSISTED_ONLY", false, "run only the documents of SEATFLOW_PERSISTED_QUERIES (production front ends)")
	str(&c.PersistedQueries, "PERSISTED_QUERIES", "", "persisted-query manifest (Apollo's JSON format, or sha256 → document)")
	str(&c.TrustedProxies, "TRUSTED_PROXIES", "", "comma-separated proxy networks whose X-Forwarded-For is believed (e.g. 10.0.0.0/8)")
	num(&c.WSMaxConns, "WS_MAX_CONNS", 50000, "most open websockets of the instance (0 = no cap)")
	num(&c.WSMaxConnsPerClient, "WS_MAX_CONNS_PER_CLIENT", 5000, "most open websockets of one client address, every session behind it together: the backstop for a crowd (0 = no cap)")
	num(&c.WSMaxConnsPerSession, "WS_MAX_CONNS_PER_SESSION", 100, "most open websockets of one user, guest session, or address without a token, counted at connection_init (0 = no cap)")
	num(&c.WebsocketMaxOperations, "WS_MAX_OPERATIONS", wstransport.DefaultMaxOperations, "most operations (queries, mutations, subscriptions) in flight on one websocket; one more is refused RATE_LIMITED")
	num(&c.WebsocketMaxQueuedBytes, "WS_MAX_QUEUED_BYTES", wstransport.DefaultMaxQueuedBytes, "most bytes waiting to be sent on one websocket (answers, events, keep-alives, pongs); past it the client is not reading and is closed with 1008")
	str(&c.CacheRedisURL, "CACHE_REDIS_URL", "", "Redis of the catalog caches, persisted queries and cost budgets (may evict); empty = the seat Redis")
	str(&c.MetricsAddr, "METRICS_ADDR", "", "serve /metrics (Prometheus) on this address only, e.g. 127.0.0.1:9090 or one only the monitoring network reaches; empty = no /metrics (never on the API's address)")
	str(&c.LogLevel, "LOG_LEVEL", "info", "debug, info, warn or error")
	str(&c.Timezone, "TIMEZONE", "UTC", "the default cinema's time zone, given to the cinema the migration makes (a Date is a day in a showtime's cinema's zone)")
	num(&c.LocalCacheBytes, "LOCAL_CACHE_BYTES", 32<<20, "size of the in-process catalog cache")
	boolean(&c.CacheEnabled, "CACHE", true, "serve the catalog through the two-level cache")
	num(&c.ResponseCacheBytes, "RESPONSE_CACHE_BYTES", 16<<20, "size of the in-process cache of catalog-only query responses (0 = off; needs the catalog cache)")
	boolean(&c.WebsocketCompression, "WS_COMPRESSION", false, "negotiate permessage-deflate on websockets (less bandwidth, more CPU and memory per message)")
	boolean(&c.SeatMapMemo, "SEAT_MAP_MEMO", true, "reuse a rendered seat map while its version is current (false: render every read; for measurements)")
	dur(&c.LoaderWait, "LOADER_WAIT", 2*time.Millisecond, "dataloader batch window")
	dur(&c.LiveTick, "LIVE_TICK", 100*time.Millisecond, "at most one seat-map DELTA per watcher per tick, with every change since its last (a change on a quiet showtime goes at once; 0 = one DELTA per change)")
	fraction(&c.LiveWriteShare, "LIVE_WRITE_SHARE", 0.5, "the least part of their time the live watchers' writers take while they give way to HTTP requests under way for over 5 ms, 0.05 to 1 (1 = they never give way)")
	dur(&c.ReconcileEvery, "RECONCILE_EVERY", 30*time.Second, "reconciler period")
	num(&c.HoldsPerMinute, "HOLDS_PER_MINUTE", 20, "holdSeats requests per user per minute (0 = no limit)")
	num(&c.QueueJoinsPerMinute, "QUEUE_JOINS_PER_MINUTE", 600, "joinQueue requests per client address per minute, every user behind it together (0 = no limit)")
	num(&c.OrderChangesPerMinute, "ORDER_CHANGES_PER_MINUTE", 60, "payOrder/cancelOrder/extendHold requests per user per minute (0 = no limit)")
	num(&c.MySQLMaxConns, "MYSQL_MAX_CONNS", database.DefaultMaxConns, "MySQL connections per instance (instances × this must stay under max_connections)")
	num(&c.MaxDepth, "MAX_DEPTH", 12, "maximum nesting depth of a query")
	num(&c.MaxTokens, "MAX_TOKENS", 5000, "maximum tokens the parser reads of one document")
	num64(&c.MaxBodyBytes, "MAX_BODY_BYTES", 256<<10, "maximum request body size")
	dur(&c.WriteTimeout, "WRITE_TIMEOUT", 30*time.Second, "time to write a response (not websockets)")
	dur(&c.RequestTimeout, "REQUEST_TIMEOUT", 10*time.Second, "deadline of a request's work (not websockets): a store silent until then makes it SERVICE_UNAVAILABLE (0 = none)")
	str(&c.PaymentProvider, "PAYMENT_PROVIDER", "", "stripe (real payments, confirmed by Stripe's webhook) or test (payOrder confirms at once: never in production); embedded mode defaults to test")
	str(&c.StripeAPIKey, "STRIPE_API_KEY", "", "Stripe secret key (sk_test_… or sk_live_…) of the stripe provider")
	str(&c.StripeWebhookSecret, "STRIPE_WEBHOOK_SECRET", "", "signing secret (whsec_…) of the webhook endpoint POST /webhooks/stripe")
	str(&c.StripeAPIBase, "STRIPE_API_BASE", "", "base URL of the Stripe API; empty = https://api.stripe.com (set it to a stripe-mock in tests)")
	str(&c.TicketKeySecret, "TICKET_KEY_SECRET", "", "secret that seals the keys signing ticket codes, at least 32 bytes (required outside embedded mode; every instance needs the same)")
	str(&c.WalletApple.Cert, "WALLET_APPLE_CERT", "", "PEM file of the Apple Wallet pass-type certificate (docs/TICKETS.md \"Apple Wallet passes\"); set all five SEATFLOW_WALLET_APPLE_* or none (no Apple passes; a demo CA in embedded mode)")
	str(&c.WalletApple.Key, "WALLET_APPLE_KEY", "", "PEM file of the pass-type certificate's private key, unencrypted")
	str(&c.WalletApple.WWDR, "WALLET_APPLE_WWDR", "", "PEM file of Apple's WWDR intermediate certificate that issued the pass-type certificate")
	str(&c.WalletApple.PassTypeID, "WALLET_APPLE_PASS_TYPE_ID", "", "the pass type identifier of the certificate, e.g. pass.com.example.tickets")
	str(&c.WalletApple.TeamID, "WALLET_APPLE_TEAM_ID", "", "the Apple developer team identifier of the certificate, e.g. A1B2C3D4E5")
	str(&c.PublicURL, "PUBLIC_URL", "", "the instance's address as phones reach it, e.g. https://tickets.example (wallet passes' web service); needed with Apple passes outside embedded mode; embedded default "+embeddedPublicURL)
	str(&c.WalletGoogleKey, "WALLET_GOOGLE_KEY", "", "path of the Google Cloud service account's JSON key file that signs \"Save to Google Wallet\" links (with SEATFLOW_WALLET_GOOGLE_ISSUER_ID; neither = Google Wallet off, or a demo key in embedded mode)")
	str(&c.WalletGoogleIssuerID, "WALLET_GOOGLE_ISSUER_ID", "", "the Google Wallet issuer id (digits, from the Google Pay & Wallet Console) of SEATFLOW_WALLET_GOOGLE_KEY")
	str(&c.WalletAPNs.Mode, "WALLET_APNS", "off", "off (Wallet pass updates are logged, not pushed), production or development: the APNs servers that push them")
	str(&c.WalletAPNs.Key, "WALLET_APNS_KEY", "", "APNs token key (.p8 file) of the Wallet passes' pushes, with SEATFLOW_WALLET_APNS_KEY_ID and SEATFLOW_WALLET_APNS_TEAM_ID")
	str(&c.WalletAPNs.KeyID, "WALLET_APNS_KEY_ID", "", "the APNs token key's id (10 characters)")
	str(&c.WalletAPNs.TeamID, "WALLET_APNS_TEAM_ID", "", "the Apple team id of the APNs token key (10 characters)")
	str(&c.WalletAPNs.Cert, "WALLET_APNS_CERT", "", "PEM file of a certificate and its key for APNs (such as the pass type's), instead of a token key")
	rest, err := parseSettings(fs, keys, own, args)
	if err != nil {
		return nil, nil, err
	}
	if c.Addr == "" {
		c.Addr = ":8080"
		if c.Embedded() { // its admin tokens are anyone's to mint: no other machine reaches it
			c.Addr = embeddedAddr
		}
	}
	if c.Embedded() && c.JWTSecret == "" {
		c.JWTSecret = embeddedSecret
	}
	if c.Embedded() && c.PublicURL == "" {
		c.PublicURL = embeddedPublicURL
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	if c.Embedded() && c.PaymentProvider == "" {
		c.PaymentProvider = seatflow.ProviderTest
	}
	if c.Embedded() && c.PublicURL == "" {
		c.PublicURL = embeddedPublicURL
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	return c, rest, invalidConfig(c.validate())
}

// WalletAPNsConfig are the SEATFLOW_WALLET_APNS* settings.
type WalletAPNsConfig struct {
	Mode, Key, KeyID, TeamID, Cert string
}

// validate checks the rules between settings; each setting's own rule is in settingChecks.
func (c *Config) validate() error {
	switch {
	case !c.Embedded() && (c.MySQLDSN == "" || (c.RedisURL == "" && c.RedisCluster == "")):
		return errors.New("set both SEATFLOW_MYSQL_DSN and SEATFLOW_REDIS_URL (or SEATFLOW_REDIS_CLUSTER), or neither for embedded mode")
	case len(c.JWTSecret) < 16:
		return errors.New("SEATFLOW_JWT_SECRET must be at least 16 bytes outside embedded mode")
	case c.CostBudget > 0 && c.CostBudget < c.ComplexityLimit:
		return errors.New("SEATFLOW_COST_BUDGET must be at least SEATFLOW_COMPLEXITY_LIMIT (or 0, no budget): a query within the limit must be affordable")
	case c.CostBudget > 0 && c.CostRestore <= 0:
		return errors.New("SEATFLOW_COST_RESTORE must be positive when SEATFLOW_COST_BUDGET is on")
	case c.CrowdCostBudget > 0 && c.CrowdCostBudget < c.ComplexityLimit:
		return errors.New("SEATFLOW_CROWD_COST_BUDGET must be at least SEATFLOW_COMPLEXITY_LIMIT (or 0, none): a query within the limit must be affordable")
	case c.CrowdCostBudget > 0 && c.CrowdCostRestore <= 0:
		return errors.New("SEATFLOW_CROWD_COST_RESTORE must be positive when SEATFLOW_CROWD_COST_BUDGET is on")
	case c.PersistedOnly && c.PersistedQueries == "":
		return errors.New("SEATFLOW_PERSISTED_ONLY needs SEATFLOW_PERSISTED_QUERIES, the manifest of the documents that may run")
	case !c.Embedded() && c.signsTickets && c.TicketKeySecret == "":
		return errors.New("set SEATFLOW_TICKET_KEY_SECRET outside embedded mode: a random secret of at least 32 bytes, the same on every instance (it seals the keys that sign ticket codes; e.g. openssl rand -hex 32)")
	case len(c.WalletApple.missing()) > 0 && len(c.WalletApple.missing()) < 5:
		missing := c.WalletApple.missing()
		return fmt.Errorf("set %s too, or none of the SEATFLOW_WALLET_APPLE_* settings (no Apple Wallet passes): docs/TICKETS.md \"Apple Wallet passes\"",
			strings.Join(missing, " and "))
	case !c.Embedded() && len(c.WalletApple.missing()) == 0 && c.PublicURL == "":
		return errors.New("set SEATFLOW_PUBLIC_URL with Apple Wallet passes: the address phones reach the instance at (the passes' web service), e.g. https://tickets.example")
	case c.WalletGoogleKey != "" && c.WalletGoogleIssuerID == "":
		return errors.New("SEATFLOW_WALLET_GOOGLE_KEY needs SEATFLOW_WALLET_GOOGLE_ISSUER_ID, the issuer id of the Google Pay & Wallet Console (docs/TICKETS.md \"Wallets\")")
	case c.WalletGoogleIssuerID != "" && c.WalletGoogleKey == "":
		return errors.New("SEATFLOW_WALLET_GOOGLE_ISSUER_ID needs SEATFLOW_WALLET_GOOGLE_KEY, the service account's JSON key file (docs/TICKETS.md \"Wallets\")")
	case c.WalletGoogleKey != "" && c.PublicURL == "":
		return errors.New("Google Wallet (SEATFLOW_WALLET_GOOGLE_KEY) needs SEATFLOW_PUBLIC_URL, the site's address its links name as their origin")
	case c.WalletAPNs.Mode != "off" && c.WalletAPNs.Cert == "" && c.WalletAPNs.Key == "":
		return errors.New("SEATFLOW_WALLET_APNS=" + c.WalletAPNs.Mode + " needs SEATFLOW_WALLET_APNS_KEY (with SEATFLOW_WALLET_APNS_KEY_ID and SEATFLOW_WALLET_APNS_TEAM_ID) or SEATFLOW_WALLET_APNS_CERT (docs/TICKETS.md)")
	case c.WalletAPNs.Key != "" && (c.WalletAPNs.KeyID == "" || c.WalletAPNs.TeamID == ""):
		return errors.New("SEATFLOW_WALLET_APNS_KEY needs SEATFLOW_WALLET_APNS_KEY_ID and SEATFLOW_WALLET_APNS_TEAM_ID")
	case c.PaymentProvider == "" && !c.takesPayments:
	case c.PaymentProvider == "":
		return errors.New("set SEATFLOW_PAYMENT_PROVIDER outside embedded mode: stripe (real payments, see docs/PAYMENTS.md) or test (any customer can mark an order paid: demos and tests only)")
	case c.PaymentProvider == seatflow.ProviderStripe && (c.StripeAPIKey == "" || c.StripeWebhookSecret == ""):
		return errors.New("the stripe payment provider needs SEATFLOW_STRIPE_API_KEY and SEATFLOW_STRIPE_WEBHOOK_SECRET (docs/PAYMENTS.md)")
	}
	return nil
}

func flagName(key string) string { return strings.ReplaceAll(strings.ToLower(key), "_", "-") }
