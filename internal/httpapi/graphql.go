package httpapi

import (
	"context"
	"time"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"

	"seatflow/graph"
	"seatflow/internal/auth"
	"seatflow/internal/seatrender"
	"seatflow/internal/telemetry"
	"seatflow/internal/wstransport"
	"seatflow/loaders"
)

// GraphQL is the gqlgen server with its transports and extensions set explicitly.
func (a *API) GraphQL() *handler.Server {
	schema := graph.NewServedSchema(a.Resolver)
	srv := handler.New(schema)
	srv.AddTransport(wstransport.New(wstransport.Config{
		AllowedOrigins: a.AllowedOrigins,
		Registry:       a.Websockets,
		SeatMaps:       a.SeatMapWatches,
		// Each operation a socket runs gets its own loaders, as each request does.
		Operation: func(ctx context.Context) context.Context {
			return loaders.With(ctx, loaders.New(a.Catalog, a.LoaderWait))
		},
		Compression:    a.WebsocketCompression,
		MaxOperations:  a.WebsocketMaxOperations,
		MaxQueuedBytes: a.WebsocketMaxQueuedBytes,
		Log:            a.Log,
		Now:            a.Auth.Now,
		// The header's token (a bad one was refused before): a user's or a guest session's.
		UpgradeExpiry: auth.Expiry,
		// connection_init's token names the caller from then on: its operations are charged
		// to that user or guest session, not to the address of the upgrade.
		Auth: func(ctx context.Context, token string) (context.Context, time.Time, error) {
			ctx = a.Auth.WithToken(ctx, token)
			if err := auth.TokenError(ctx); err != nil {
				return ctx, time.Time{}, err
			}
			return withClient(ctx), auth.Expiry(ctx), nil
		},
		// The budget a socket is charged to is also what the registry's per-session cap
		// counts by.
		Session: func(ctx context.Context) string {
			if st := stateOf(ctx); st != nil {
				return st.client
			}
			return ""
		},
	}))
	srv.AddTransport(transport.Options{})
	srv.AddTransport(httpTransport{limits: answerLimits{MaxErrors: a.MaxErrors, MaxResponseBytes: a.MaxResponseBytes,
		MaxURLBytes: a.MaxURLBytes}})
	srv.AddTransport(refusedRequests{}) // last: what no transport above takes
	srv.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	srv.SetParserTokenLimit(a.MaxTokens)
	if a.Introspection {
		srv.Use(extension.Introspection{})
	}
	// Order matters: a persisted document is filled in before it is measured, and kept
	// only after every limit below passed.
	persisted := persistedQueries{Redis: a.Redis, Prefix: a.APQPrefix, MaxBytes: a.MaxPersistedBytes,
		Only: a.PersistedOnly, Manifest: a.PersistedQueries}
	srv.Use(persisted)
	if telemetry.Enabled() {
		srv.Use(operationSpans{})
	}
	srv.Use(&documentLimits{MaxFields: a.MaxFields, MaxAliases: a.MaxAliases, MaxTokens: a.MaxTokens})
	srv.Use(depthLimit{Max: a.MaxDepth})
	srv.Use(oneMutation{})
	srv.Use(&costLimit{Limit: a.ComplexityLimit, Budget: a.Budget, Crowd: a.CrowdBudget})
	srv.Use(keepPersisted{persisted})
	srv.Use(operationMetrics{labels: newOperationLabels(a.PersistedQueries)})
	if a.Responses != nil {
		srv.Use(a.Responses.Extension())
	}
	srv.Use(newInflightCost(a.MaxInflightCost))
	srv.Use(seatrender.Extension{Maps: a.Resolver.Maps, Versions: a.Resolver.Live, Memo: a.SeatMaps})
	srv.SetErrorPresenter(presentError(a.Log, schema.Schema()))
	srv.SetRecoverFunc(recoverPanic(a.Log))
	return srv
}
