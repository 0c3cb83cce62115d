package telemetry

import (
	"context"
	"net/http"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// untraced are the paths no span is made for: probes and scrapes say nothing about a
// customer's request and would drown the traces.
var untraced = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true, "/favicon.ico": true}

// spanPaths are the paths a server span is named after.
var spanPaths = map[string]bool{"/query": true, "/webhooks/stripe": true}

// Handler wraps next in the HTTP server span (otelhttp): its parent is the request's
// traceparent/tracestate when they parse (a malformed one starts a new trace), and the
// answer carries the trace in a `traceresponse` header. Probes, /metrics and websocket
// upgrades get no span (a websocket would be one span for its whole life; its operations
// get spans of their own). Without tracing it returns next itself.
func Handler(next http.Handler) http.Handler {
	if !Enabled() {
		return next
	}
	return otelhttp.NewHandler(traceResponse(next), "http.server",
		otelhttp.WithPropagators(Propagator()),
		otelhttp.WithFilter(func(r *http.Request) bool { return !untraced[r.URL.Path] && !IsUpgrade(r) }),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			if spanPaths[r.URL.Path] {
				return r.Method + " " + r.URL.Path
			}
			return r.Method // a client chooses the path: no name of its choosing
		}))
}

// IsUpgrade reports whether r asks for a websocket.
func IsUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// traceResponse sets the `traceresponse` header (W3C Trace Context Level 2) of the
// request's span before next writes anything.
func traceResponse(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sc := trace.SpanContextFromContext(r.Context()); sc.IsValid() {
			w.Header().Set("traceresponse", TraceParent(sc))
		}
		next.ServeHTTP(w, r)
	})
}

// TraceParent is sc written as a W3C traceparent value.
func TraceParent(sc trace.SpanContext) string {
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}

// Transport wraps base (nil: http.DefaultTransport) in client spans that pass the trace
// on (the payment provider's calls); without tracing it returns base.
func Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if !Enabled() {
		return base
	}
	return otelhttp.NewTransport(base, otelhttp.WithPropagators(Propagator()))
}

// Extract is ctx with the remote parent named by the `traceparent` (and `tracestate`)
// strings of fields: a websocket's connection_init payload, a subscribe message's
// extensions. A missing or malformed one leaves ctx as it is; so does tracing off.
func Extract(ctx context.Context, fields map[string]any) context.Context {
	if !Enabled() || fields == nil {
		return ctx
	}
	carrier := propagation.MapCarrier{}
	for _, k := range []string{"traceparent", "tracestate"} {
		if v, ok := fields[k].(string); ok && len(v) <= 512 {
			carrier[k] = v
		}
	}
	if carrier["traceparent"] == "" {
		return ctx
	}
	return Propagator().Extract(ctx, carrier)
}
