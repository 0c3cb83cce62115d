package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// websocketCloseGrace is how long shutdown waits for websocket clients to answer the
// close frame before it drops their connections.
const websocketCloseGrace = 2 * time.Second

// Serve serves the instance's Handler on ln until ctx ends, then shuts down gracefully:
// every websocket gets a 1001 close frame (net/http does not track hijacked
// connections), then in-flight requests get up to 15 s to finish.
func (a *App) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           a.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	a.Log.Info("shutting down")
	a.Websockets.CloseAll(websocket.CloseGoingAway, "server shutting down", websocketCloseGrace)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return srv.Shutdown(shutdownCtx)
}

// ServeMetrics serves /metrics alone on ln until ctx ends (SEATFLOW_METRICS_ADDR: an
// address only the monitoring network reaches).
func (a *App) ServeMetrics(ctx context.Context, ln net.Listener) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", MetricsHandler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		a.Log.Error("metrics listener", "err", err)
	}
}

// PrintWelcome prints where the server listens and, in embedded mode, that it is for one
// machine (with a warning when it listens beyond loopback) and demo tokens.
func (a *App) PrintWelcome(w io.Writer, addr net.Addr) {
	host := addr.String()
	tcp, _ := addr.(*net.TCPAddr)
	if tcp != nil && (tcp.IP.IsUnspecified() || tcp.IP.IsLoopback()) {
		host = fmt.Sprintf("localhost:%d", tcp.Port)
	}
	mode := "MySQL + Redis"
	if a.Config.Embedded() {
		mode = "embedded (SQLite " + a.Config.SQLitePath + " + in-process Redis)"
	}
	fmt.Fprintf(w, "SeatFlow is listening (%s)\n  playground: http://%s/\n  GraphQL:    http://%s/query\n", mode, host, host)
	fmt.Fprintf(w, "  demo:       http://%s/demo\n", host)
	if a.Config.Embedded() {
		why := "/demo hands anyone a customer token"
		if a.Config.JWTSecret == embeddedSecret {
			why += ", anyone can sign an admin token with the built-in demo secret"
		}
		if a.Config.AllowedOrigins == "" {
			why += ", every origin is allowed"
		}
		fmt.Fprintf(w, "  embedded mode is for one machine: %s\n", why)
		if tcp == nil || !tcp.IP.IsLoopback() {
			fmt.Fprintf(w, "  WARNING: listening on %s, which other machines may reach: set SEATFLOW_ADDR=127.0.0.1:%d, or run with MySQL and Redis (docs/SECURITY.md)\n",
				addr, portOf(tcp))
		}
		ttl := min(7*24*time.Hour, a.Auth.MaxTTL())
		customer, _ := a.Auth.Issue("demo-customer", "customer", ttl)
		admin, _ := a.Auth.Issue("demo-admin", "admin", ttl)
		fmt.Fprintf(w, "  customer token: %s\n  admin token:    %s\n  (send as header  Authorization: Bearer <token>)\n", customer, admin)
	}
}

func portOf(tcp *net.TCPAddr) int {
	if tcp == nil {
		return 8080
	}
	return tcp.Port
}

// MetricsHandler serves the registry's metrics: OpenMetrics to a scraper that asks for it
// (Prometheus does; exemplars, the trace ids of latency buckets, exist only there), the
// text format otherwise.
func MetricsHandler() http.Handler {
	return promhttp.InstrumentMetricHandler(prometheus.DefaultRegisterer,
		promhttp.HandlerFor(prometheus.DefaultGatherer, promhttp.HandlerOpts{EnableOpenMetrics: true}))
}
