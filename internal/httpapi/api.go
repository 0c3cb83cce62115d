// Package httpapi is SeatFlow's HTTP transport: GraphQL at /query (POST, GET and the
// websocket), health and readiness, the operations' metrics; with what guards it (body and write limits,
// CORS, token refusal, complexity and depth limits, persisted queries) and the one error
// presenter that maps error codes to what clients see. It holds no business rule: the
// resolvers (package graph) call the services.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow/graph"
	"seatflow/internal/auth"
	"seatflow/internal/respcache"
	"seatflow/internal/seatrender"
	"seatflow/internal/throttle"
	"seatflow/internal/wstransport"
	"seatflow/loaders"
)

// Settings are the API's limits and switches as an operator sets them: the instance's
// configuration (package app) holds them, filled by its flags and SEATFLOW_* variables.
type Settings struct {
	Introspection   bool
	ComplexityLimit int
	MaxDepth        int
	MaxTokens       int
	MaxBodyBytes    int64
	WriteTimeout    time.Duration
	// RequestTimeout is the deadline of a plain request's work (websockets excluded): a
	// store that has not answered by then makes the request SERVICE_UNAVAILABLE instead of
	// holding it (0 = none).
	RequestTimeout time.Duration
	LoaderWait     time.Duration
	// WebsocketCompression negotiates permessage-deflate on websockets.
	WebsocketCompression bool
	// WebsocketMaxOperations caps the operations in flight on one websocket;
	// WebsocketMaxQueuedBytes bounds the bytes waiting to be sent on one (0: the
	// transport's defaults).
	WebsocketMaxOperations, WebsocketMaxQueuedBytes int
	// MaxFields and MaxAliases bound a document before it is validated; MaxErrors,
	// MaxResponseBytes and MaxURLBytes bound an answer and a GET.
	MaxFields, MaxAliases                    int
	MaxErrors, MaxResponseBytes, MaxURLBytes int
	// MaxInflightCost is the cost of the heavy operations an instance executes at once.
	MaxInflightCost int
	// PersistedOnly runs only the documents of Options.PersistedQueries; MaxPersistedBytes
	// bounds a document clients may register.
	PersistedOnly     bool
	MaxPersistedBytes int
}

// Options are the API's settings and what the instance derives from its configuration.
type Options struct {
	Settings
	// AllowedOrigins are the browser origins allowed by CORS and the websocket origin
	// check ("*" = any; empty = same origin only).
	AllowedOrigins []string
	// PersistedQueries are the documents of the manifest (sha256 → document).
	PersistedQueries map[string]string
	// ClientAddr names a request's client address (trusted proxies applied).
	ClientAddr func(*http.Request) string
}

// API is one instance's HTTP API.
type API struct {
	Options
	Resolver *graph.Resolver
	Auth     *auth.Authenticator
	// Catalog feeds each request's dataloaders.
	Catalog loaders.Reader
	// Responses keeps rendered catalog-only responses; nil when off.
	Responses *respcache.Store
	// Redis and APQPrefix hold the automatic persisted queries.
	Redis     redis.UniversalClient
	APQPrefix string
	// Budget is every client's query-cost budget: a user's, a guest session's, an
	// anonymous address'.
	Budget *throttle.Budget
	// CrowdBudget is the budget of every guest session of one address together: the
	// backstop behind the sessions' own (nil: none).
	CrowdBudget *throttle.Budget
	// SeatMaps keeps rendered seat maps per showtime and version.
	SeatMaps *seatrender.Memo
	// SeatMapWatches starts seat-map subscriptions delivered straight into websocket
	// connections (nil: through the executor).
	SeatMapWatches wstransport.SeatMaps
	// Websockets is the registry of the instance's open websockets (closed on shutdown).
	Websockets *wstransport.Registry
	// StripeWebhook receives Stripe's events at POST /webhooks/stripe; nil = no route.
	StripeWebhook http.Handler
	// Ready reports whether the instance can serve (readiness probe).
	Ready func(ctx context.Context) error
	Log   *slog.Logger
}

// webhookMaxBytes bounds a webhook delivery: Stripe's events are a few kilobytes.
const webhookMaxBytes = 1 << 20

// Register adds the API's routes to mux: /query, /healthz, /readyz, and /webhooks/stripe
// with the stripe provider. /metrics is never one of them: it says what the server does
// and is served on SEATFLOW_METRICS_ADDR alone (app.ServeMetrics).
func (a *API) Register(mux *http.ServeMux) {
	gql := perRequestLoaders(a.Catalog, a.LoaderWait, a.GraphQL())
	if a.Responses != nil {
		gql = a.Responses.Middleware(gql)
	}
	var requests *wstransport.Requests // what the live writers give way to
	if a.Websockets != nil {
		requests = a.Websockets.Requests
	}
	mux.Handle("/query", requests.Track(a.cors(a.Auth.Middleware(a.guard(a.withState(gql))))))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := a.Ready(r.Context()); err != nil {
			a.Log.Warn("not ready", "err", err)
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	if a.StripeWebhook != nil { // no token, no CORS: Stripe's signature is its authentication
		mux.Handle("POST /webhooks/stripe", http.MaxBytesHandler(a.StripeWebhook, webhookMaxBytes))
	}
}

// withState gives each request the state its GraphQL extensions share.
func (a *API) withState(next http.Handler) http.Handler {
	addr := a.ClientAddr
	if addr == nil {
		addr = ClientAddr(nil)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, withState(r, addr))
	})
}

// perRequestLoaders gives every request its own loaders, but for a websocket upgrade:
// the connection gives each operation it runs its own instead (GraphQL's Operation),
// since loaders keep what they read for as long as they live.
func perRequestLoaders(r loaders.Reader, wait time.Duration, next http.Handler) http.Handler {
	withLoaders := loaders.Middleware(r, wait, next)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Upgrade") != "" { // what the websocket transport takes
			next.ServeHTTP(w, req)
			return
		}
		withLoaders.ServeHTTP(w, req)
	})
}
