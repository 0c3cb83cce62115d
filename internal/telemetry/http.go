package telemetry

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"

	"github.com/felixge/httpsnoop"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// untraced are the paths no span is made for: probes and scrapes say nothing about a
// customer's request and would drown the traces.
var untraced = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true, "/favicon.ico": true}

// spanPaths are the paths a server span is named after.
var spanPaths = map[string]bool{"/query": true, "/webhooks/stripe": true}

// Handler wraps next in the HTTP server span: its parent is the request's
// traceparent/tracestate when they parse (a malformed one starts a new trace), and the
// answer carries the trace in a `traceresponse` header. Probes, /metrics and websocket
// upgrades get no span (a websocket would be one span for its whole life; its operations
// get spans of their own). Without tracing it returns next itself.
//
// Written here rather than taken from otelhttp (which the client transport below still
// uses): otelhttp builds the span's request attributes before the sampler decides, wraps
// the request body and the response writer, and computes its metrics' attributes on every
// request, sampled or not. Measured on the hot read at 1 % sampling (make bench
// BENCH_ONLY=tracing, a CPU profile of the traced server), that was about 12 % of the
// server's CPU for spans 99 % of which are never recorded; here an unsampled request costs
// the sampler's decision and the traceresponse header, and only a recorded span gets its
// attributes (the OpenTelemetry HTTP conventions) and a writer that notes the status.
func Handler(next http.Handler) http.Handler {
	if !Enabled() {
		return next
	}
	prop := Propagator()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if untraced[r.URL.Path] || IsUpgrade(r) {
			next.ServeHTTP(w, r)
			return
		}
		ctx := prop.Extract(r.Context(), headerCarrier(r.Header))
		ctx, span := Tracer().Start(ctx, serverSpanName(r), serverKind)
		defer span.End()
		if sc := span.SpanContext(); sc.IsValid() {
			w.Header()[traceResponse] = []string{TraceParent(sc)}
		}
		r = r.WithContext(ctx)
		if !span.IsRecording() {
			next.ServeHTTP(w, r)
			return
		}
		span.SetAttributes(semconv.HTTPRequestMethodKey.String(r.Method), semconv.URLPath(r.URL.Path),
			semconv.ServerAddress(r.Host), semconv.NetworkProtocolVersion(fmt.Sprintf("%d.%d", r.ProtoMajor, r.ProtoMinor)))
		status := http.StatusOK
		w = httpsnoop.Wrap(w, httpsnoop.Hooks{WriteHeader: func(next httpsnoop.WriteHeaderFunc) httpsnoop.WriteHeaderFunc {
			return func(code int) { status = code; next(code) }
		}})
		next.ServeHTTP(w, r)
		span.SetAttributes(semconv.HTTPResponseStatusCode(status))
		if status >= http.StatusInternalServerError {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
	})
}

// serverSpanName is the request's span name: the method and the path for the paths of
// the API, the method alone for any other (a client chooses the path: no name of its
// choosing).
func serverSpanName(r *http.Request) string {
	if !spanPaths[r.URL.Path] {
		return r.Method
	}
	if name, ok := spanNames[[2]string{r.Method, r.URL.Path}]; ok {
		return name
	}
	return r.Method + " " + r.URL.Path
}

// spanNames are the names of the API's requests, written once: a name built for each
// request was an allocation of every request, sampled or not.
var spanNames = func() map[[2]string]string {
	names := map[[2]string]string{}
	for path := range spanPaths {
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			names[[2]string{m, path}] = m + " " + path
		}
	}
	return names
}()

// serverKind is the server span's kind, made once (an option is an allocation).
var serverKind = trace.WithSpanKind(trace.SpanKindServer)

// traceResponse is the answer's header naming its trace, in the form a header map keeps
// (Header.Set would canonicalise it on every request).
const traceResponse = "Traceresponse"

// headerCarrier is the request's headers as the propagator reads them: the W3C fields by
// their canonical keys, written once (propagation.HeaderCarrier canonicalises each key it
// is asked for, an allocation per field per request).
type headerCarrier http.Header

var canonicalFields = map[string]string{"traceparent": "Traceparent", "tracestate": "Tracestate", "baggage": "Baggage"}

func (h headerCarrier) Get(key string) string {
	if k, ok := canonicalFields[key]; ok {
		if v := h[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	return http.Header(h).Get(key)
}

func (h headerCarrier) Set(key, value string) { http.Header(h).Set(key, value) }

func (h headerCarrier) Keys() []string { return propagation.HeaderCarrier(h).Keys() }

// IsUpgrade reports whether r asks for a websocket.
func IsUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// TraceParent is sc written as a W3C traceparent value, in one allocation (every answer
// carries one: joining the ids' strings took four).
func TraceParent(sc trace.SpanContext) string {
	var b [55]byte // 00-{32 hex}-{16 hex}-{2 hex}
	tid, sid := sc.TraceID(), sc.SpanID()
	copy(b[:], "00-")
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	hex.Encode(b[53:], []byte{byte(sc.TraceFlags())})
	return string(b[:])
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
