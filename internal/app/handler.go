package app

import (
	"context"
	"net/http"
	"strings"
	"time"

	"seatflow"
	"seatflow/graph"
	"seatflow/internal/auth"
	"seatflow/internal/demo"
	"seatflow/internal/httpapi"
	"seatflow/internal/live"
	"seatflow/internal/payments"
	"seatflow/internal/playground"
	"seatflow/internal/seats"
	"seatflow/internal/telemetry"
	"seatflow/internal/tickets"
	"seatflow/internal/wallet"
)

// API is the instance's HTTP API over its services.
func (a *App) API() *httpapi.API {
	api := &httpapi.API{
		Options: httpapi.Options{
			Settings:         a.Config.Settings,
			AllowedOrigins:   a.AllowedOrigins(),
			PersistedQueries: a.PersistedQueries,
			ClientAddr:       a.ClientAddr(),
		},
		Resolver: &graph.Resolver{Catalog: a.Catalog, Booking: a.Booking, Sales: a.Sales, Maps: a.Maps,
			Live: a.Live, Rec: a.Rec, Tickets: a.Tickets, Guests: a.Guests, Reports: a.Reports,
			Queues: a.Queues, Waitlist: a.Waitlist, Wallet: a.Wallet, GoogleWallet: a.GoogleWallet},
		Auth:           a.Auth,
		Catalog:        a.Catalog,
		Responses:      a.Responses,
		Redis:          a.CacheRedis,
		Budget:         a.Budget,
		CrowdBudget:    a.CrowdBudget,
		APQPrefix:      a.Keys.APQ(),
		SeatMaps:       a.SeatMaps,
		SeatMapWatches: seatMapWatches{maps: a.Maps, hub: a.Live},
		Websockets:     a.Websockets,
		Ready:          a.Ready,
		Log:            a.Log,
	}
	if a.Config.PaymentProvider == seatflow.ProviderStripe {
		api.StripeWebhook = &payments.StripeWebhook{Secret: a.Config.StripeWebhookSecret, Events: a.Booking, Log: a.Log}
	}
	return api
}

// Handler is everything the instance serves over HTTP: the API (/query, /healthz,
// /readyz; /metrics is on a listener of its own, ServeMetrics), the GraphiQL playground at
// / (its files under /playground/, the site's /favicon.ico), the live seat-map demo at
// /demo/ (the door at /demo/door), the keys that verify ticket codes at
// /.well-known/ticket-keys, the tickets' Apple Wallet passes at
// /tickets/{ticketId}/pass.pkpass and the Wallet passes' web service under /passkit/v1.
func (a *App) Handler() http.Handler {
	mux := http.NewServeMux()
	a.API().Register(mux)
	// The playground is served from the binary (no CDN): it works offline.
	mux.Handle("GET /{$}", demo.WithLink(playground.Handler()))
	mux.Handle("GET /playground/", playground.Handler())
	mux.Handle("GET /favicon.ico", playground.Handler())
	var tokens demo.Issuer
	if a.Config.Embedded() {
		tokens = demoIssuer{a.Auth}
	}
	mux.Handle("/demo/", demo.Handler(tokens, a.Log))
	if a.Tickets != nil {
		mux.Handle("GET "+tickets.JWKSPath, a.Tickets.JWKSHandler())
	}
	if a.Wallet != nil {
		mux.Handle(wallet.PassRoute, a.Wallet.Handler(a.Auth, a.Log))
	}
	if a.PassKit != nil {
		a.PassKit.Register(mux)
	}
	return telemetry.Handler(mux)
}

// demoIssuer issues /demo's tokens, never longer-lived than the instance accepts
// (SEATFLOW_MAX_TOKEN_LIFETIME may be shorter than a demo token's 12 hours).
type demoIssuer struct{ auth *auth.Authenticator }

// Issue signs a token for subject with role, valid for ttl or the longest allowed.
func (d demoIssuer) Issue(subject, role string, ttl time.Duration) (string, error) {
	return d.auth.Issue(subject, role, min(ttl, d.auth.MaxTTL()))
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

// ClientAddr names a request's client: the peer address, or the address a trusted
// proxy forwarded (SEATFLOW_TRUSTED_PROXIES, checked at start).
func (a *App) ClientAddr() func(*http.Request) string {
	nets, _ := httpapi.ParseTrustedProxies(a.Config.TrustedProxies)
	return httpapi.ClientAddr(nets)
}

// Seeder is the demo data's seeder over the instance's catalog.
func (a *App) Seeder() *demo.Seeder {
	return &demo.Seeder{DB: a.DB, Catalog: a.Catalog, Sales: a.Sales, Now: a.Now}
}

// seatMapWatches starts a seat-map watch for the websocket transport: the showtime's hall
// from the catalog, its events from the live hub, straight into the connection's queue.
type seatMapWatches struct {
	maps *seats.Maps
	hub  *live.Hub
}

// WatchSeatMap starts watching showID's seat map into sink.
func (w seatMapWatches) WatchSeatMap(ctx context.Context, showID int, sink live.Sink) error {
	hall, err := w.maps.HallOf(ctx, showID)
	if err != nil {
		return err
	}
	return w.hub.WatchWith(ctx, showID, hall, sink)
}
