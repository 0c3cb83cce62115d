package app

import (
	"net/http"
	"strings"

	"github.com/99designs/gqlgen/graphql/playground"

	"seatflow"
	"seatflow/graph"
	"seatflow/internal/demo"
	"seatflow/internal/httpapi"
	"seatflow/internal/payments"
)

// API is the instance's HTTP API over its services.
func (a *App) API() *httpapi.API {
	api := &httpapi.API{
		Options: httpapi.Options{
			AllowedOrigins:  a.AllowedOrigins(),
			Introspection:   a.Config.Introspection,
			ComplexityLimit: a.Config.ComplexityLimit,
			MaxDepth:        a.Config.MaxDepth,
			MaxTokens:       a.Config.MaxTokens,
			MaxBodyBytes:    a.Config.MaxBodyBytes,
			WriteTimeout:    a.Config.WriteTimeout,
			LoaderWait:      a.Config.LoaderWait,
		},
		Resolver: &graph.Resolver{Catalog: a.Catalog, Booking: a.Booking, Sales: a.Sales, Maps: a.Maps,
			Live: a.Live, Rec: a.Rec},
		Auth:       a.Auth,
		Catalog:    a.Catalog,
		Responses:  a.Responses,
		Redis:      a.Redis,
		APQPrefix:  a.Keys.APQ(),
		SeatMaps:   a.SeatMaps,
		Websockets: a.Websockets,
		Ready:      a.Ready,
		Log:        a.Log,
	}
	if a.Config.PaymentProvider == seatflow.ProviderStripe {
		api.StripeWebhook = &payments.StripeWebhook{Secret: a.Config.StripeWebhookSecret, Events: a.Booking, Log: a.Log}
	}
	return api
}

// Handler is everything the instance serves over HTTP: the API (/query, /healthz,
// /readyz, /metrics), the GraphiQL playground at / and the live seat-map demo at /demo/.
func (a *App) Handler() http.Handler {
	mux := http.NewServeMux()
	a.API().Register(mux)
	mux.Handle("GET /{$}", demo.WithLink(playground.Handler("SeatFlow", "/query")))
	var tokens demo.Issuer
	if a.Config.Embedded() {
		tokens = a.Auth
	}
	mux.Handle("/demo/", demo.Handler(tokens, a.Log))
	return mux
}

// AllowedOrigins is the origin list of CORS and the websocket origin check: any origin in
// embedded mode unless configured, else only the configured ones.
func (a *App) AllowedOrigins() []string {
	var out []string
	for _, o := range strings.Split(a.Config.AllowedOrigins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			out = append(out, o)
		}
	}
	if len(out) == 0 && a.Config.Embedded() {
		out = []string{"*"}
	}
	return out
}

// Seeder is the demo data's seeder over the instance's catalog.
func (a *App) Seeder() *demo.Seeder {
	return &demo.Seeder{DB: a.DB, Catalog: a.Catalog, Sales: a.Sales, Location: a.Catalog.Location, Now: a.Now}
}
