package main

import (
	"context"
	"net/http"
	"regexp"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/99designs/gqlgen/graphql/playground"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/vektah/gqlparser/v2/ast"

	"seatflow/graph"
	"seatflow/internal/auth"
	"seatflow/loaders"
)

// Handler is the instance's HTTP API: GraphQL (POST and GET) at /query, the GraphiQL
// playground at /, health at /healthz and /readyz, Prometheus metrics at /metrics.
func (a *App) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/query", a.cors(a.Auth.Middleware(a.guardHTTP(a.responseCache(loaders.Middleware(a.Catalog, a.Config.LoaderWait, a.GraphQL()))))))
	mux.Handle("GET /{$}", withDemoLink(playground.Handler("SeatFlow", "/query")))
	mux.Handle("/demo/", a.demoHandler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := a.Ready(r.Context()); err != nil {
			a.Log.Warn("not ready", "err", err)
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	mux.Handle("GET /metrics", promhttp.Handler())
	return mux
}

// GraphQL is the gqlgen server with its transports and extensions set explicitly.
func (a *App) GraphQL() *handler.Server {
	srv := handler.New(graph.NewExecutableSchema(graph.Config{Resolvers: &graph.Resolver{
		Catalog: a.Catalog,
		Booking: a.Booking,
		Live:    a.Live,
		Rec:     a.Rec,
	}, Complexity: complexity()}))
	srv.AddTransport(websocketTransport(WebsocketConfig{
		AllowedOrigins: a.allowedOrigins(),
		Auth: func(ctx context.Context, token string) (context.Context, error) {
			ctx = a.Auth.WithToken(ctx, token)
			return ctx, auth.TokenError(ctx)
		},
	}))
	srv.AddTransport(transport.Options{})
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.POST{})
	srv.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	srv.SetParserTokenLimit(a.Config.MaxTokens)
	if a.Config.Introspection {
		srv.Use(extension.Introspection{})
	}
	srv.Use(extension.AutomaticPersistedQuery{Cache: apqCache{rdb: a.Redis, prefix: a.Keys.APQ()}})
	srv.Use(extension.FixedComplexityLimit(a.Config.ComplexityLimit))
	srv.Use(depthLimit{Max: a.Config.MaxDepth})
	srv.Use(operationMetrics{})
	if a.Responses != nil {
		srv.Use(a.Responses.Extension())
	}
	srv.SetErrorPresenter(presentError(a.Log))
	srv.SetRecoverFunc(recoverPanic(a.Log))
	return srv
}

// catalogFields are the fields whose values come from the catalog cache alone, so a query
// selecting nothing else can be answered from the response cache. Left out on purpose:
// Query.movies (its page of ids is read from MySQL), every seat-state, order, admin and
// caller-dependent field.
var catalogFields = []string{
	"Query.movie", "Query.showtime", "Query.showtimes",
	"Movie.id", "Movie.title", "Movie.synopsis", "Movie.durationMinutes", "Movie.rating", "Movie.genres",
	"Movie.posterUrl", "Movie.status", "Movie.showtimes",
	"Showtime.id", "Showtime.movie", "Showtime.hall", "Showtime.startsAt", "Showtime.endsAt", "Showtime.status",
	"Showtime.prices", "Showtime.currency", "Showtime.purchaseLimit", "Showtime.allowSeatGaps",
	"Price.kind", "Price.amountCents",
	"Hall.id", "Hall.name", "Hall.seats",
	"Seat.id", "Seat.row", "Seat.number", "Seat.x", "Seat.y", "Seat.kind", "Seat.sellable",
}

// responseCache answers catalog-only queries from a.Responses when it is on.
func (a *App) responseCache(next http.Handler) http.Handler {
	if a.Responses == nil {
		return next
	}
	return a.Responses.Middleware(next)
}

var (
	requestsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "seatflow_graphql_requests_total",
		Help: "GraphQL operations by operation name and outcome (ok or error).",
	}, []string{"operation", "outcome"})
	requestSeconds = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "seatflow_graphql_request_duration_seconds",
		Help:    "GraphQL operation latency by operation name.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"operation"})
)

// operationMetrics counts operations and their latency by operation name.
type operationMetrics struct{}

var _ interface {
	graphql.HandlerExtension
	graphql.ResponseInterceptor
} = operationMetrics{}

func (operationMetrics) ExtensionName() string                   { return "OperationMetrics" }
func (operationMetrics) Validate(graphql.ExecutableSchema) error { return nil }
func (operationMetrics) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	if !graphql.HasOperationContext(ctx) {
		return resp
	}
	oc := graphql.GetOperationContext(ctx)
	if oc.Operation != nil && oc.Operation.Operation == ast.Subscription {
		return resp // a subscription's responses are events, not requests
	}
	name := operationLabel(oc.OperationName)
	outcome := "ok"
	if resp != nil && len(resp.Errors) > 0 {
		outcome = "error"
	}
	requestsTotal.WithLabelValues(name, outcome).Inc()
	requestSeconds.WithLabelValues(name).Observe(time.Since(oc.Stats.OperationStart).Seconds())
	return resp
}

var (
	labelsMu   sync.Mutex
	labelsSeen = map[string]bool{}
	validLabel = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)
)

// operationLabel bounds the label set: operation names come from clients, so only the
// first 200 well-formed names get a series of their own.
func operationLabel(name string) string {
	if name == "" {
		return "anonymous"
	}
	if !validLabel.MatchString(name) {
		return "other"
	}
	labelsMu.Lock()
	defer labelsMu.Unlock()
	if !labelsSeen[name] {
		if len(labelsSeen) >= 200 {
			return "other"
		}
		labelsSeen[name] = true
	}
	return name
}
