// Package telemetry owns the instance's traces: the OpenTelemetry SDK set up from the
// standard OTEL_* variables (exporter, sampler, service name and resource), the W3C
// propagation of trace context, the HTTP server span with the `traceresponse` header, the
// background work's root spans, and the trace and span ids on log lines. When no OTLP
// endpoint is set it installs nothing: the API's no-op tracer stays, and the stores and
// the HTTP handler are not instrumented at all. It decides nothing about the business and
// records no variables, tokens, payment or personal data.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ServiceName is the service name when OTEL_SERVICE_NAME does not set one.
const ServiceName = "seatflow"

// instrumentationName names the tracer of the spans this project starts itself.
const instrumentationName = "seatflow"

// enabled is whether a tracer provider of the SDK is installed (Setup or Install).
var enabled atomic.Bool

// Enabled reports whether traces are recorded: the stores and the HTTP handler are
// instrumented only then, so an instance without an endpoint pays nothing.
func Enabled() bool { return enabled.Load() }

// tracer is the project's tracer of the installed provider; nil before Install.
var tracer atomic.Pointer[sampledOnly]

// Tracer is the tracer of the project's own spans (GraphQL operations, transactions,
// background work): the installed provider's, taken once (the SDK's provider looks a
// tracer up under a lock on every call), starting no span under a parent the sampler left
// out (sampledOnly).
func Tracer() trace.Tracer {
	if t := tracer.Load(); t != nil {
		return t
	}
	return otel.Tracer(instrumentationName)
}

// TracerProvider is the provider of the stores' instrumentation (otelsql, redisotel): the
// installed one, its tracers starting no span under a parent the sampler left out.
func TracerProvider() trace.TracerProvider {
	return sampledOnlyProvider{otel.GetTracerProvider()}
}

// sampledOnly is a tracer that starts no span under a parent the sampler left out: the
// parent stands in for the child (its End, attributes and status do nothing). With one
// trace in a hundred sampled, 99 requests in 100 made a span for every SQL statement,
// Redis command and transaction that was never recorded (the SDK's sampler, ids and
// span for each, and the hooks' attributes before it): tracing at 1 % cost holdSeats
// about a tenth more server CPU than tracing off (make bench BENCH_ONLY=tracing), and as
// much as not instrumenting the stores at all was worth. The samplers OTEL_TRACES_SAMPLER
// names decide alike for a child of a parent of this instance that they left out
// (parent-based ones follow the parent, the ratio one decides on the trace id, which the
// child shares, always_on leaves nothing out), so no span that would have been recorded is
// lost. A span without a parent, under a remote parent (a caller's traceparent: the
// sampler decides the server's span) or asked as a new root (trace.WithNewRoot) is
// started as asked.
type sampledOnly struct{ trace.Tracer }

func (t sampledOnly) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if parent := trace.SpanFromContext(ctx); leftOut(parent.SpanContext()) {
		if cfg := trace.NewSpanStartConfig(opts...); !cfg.NewRoot() {
			return ctx, parent
		}
	}
	return t.Tracer.Start(ctx, name, opts...)
}

// Unsampled reports whether ctx is in a span of this instance that the sampler left out:
// a child of it is never started (sampledOnly), so a caller may skip what it would build
// for one (its name, its attributes).
func Unsampled(ctx context.Context) bool { return leftOut(trace.SpanContextFromContext(ctx)) }

// leftOut reports whether sc is a span of this instance that the sampler left out.
func leftOut(sc trace.SpanContext) bool { return sc.IsValid() && !sc.IsSampled() && !sc.IsRemote() }

type sampledOnlyProvider struct{ trace.TracerProvider }

func (p sampledOnlyProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return sampledOnly{p.TracerProvider.Tracer(name, opts...)}
}

// Propagator is the W3C trace context and baggage, the propagation every instance uses.
func Propagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}

// Install makes tp the provider of every span and turns instrumentation on (for what is
// opened and built after it); the tests install a provider with a span recorder. restore
// puts back the provider and the switch as they were.
func Install(tp trace.TracerProvider) (restore func()) {
	prevTP, prevProp, prevOn, prevTracer := otel.GetTracerProvider(), otel.GetTextMapPropagator(), enabled.Load(), tracer.Load()
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(Propagator())
	tracer.Store(&sampledOnly{tp.Tracer(instrumentationName)})
	enabled.Store(true)
	return func() {
		if !prevOn {
			prevTP = noop.NewTracerProvider() // the global delegate would forward to tp
		}
		otel.SetTracerProvider(prevTP)
		otel.SetTextMapPropagator(prevProp)
		tracer.Store(prevTracer)
		enabled.Store(prevOn)
	}
}

// endpointSet reports whether an OTLP endpoint for traces is configured.
func endpointSet(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || getenv("OTEL_TRACES_EXPORTER") == "none" {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// protocol is the OTLP protocol of traces: http/protobuf (the default) or grpc.
func protocol(getenv func(string) string) (string, error) {
	p := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if p == "" {
		p = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch p {
	case "", "http/protobuf":
		return "http/protobuf", nil
	case "grpc":
		return "grpc", nil
	}
	return "", fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: want http/protobuf or grpc", p)
}

// Setup installs the SDK's tracer provider when an OTLP endpoint is set
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT): the exporter of
// OTEL_EXPORTER_OTLP_PROTOCOL, the sampler of OTEL_TRACES_SAMPLER and _ARG (read by the
// SDK; parent-based always-on when unset), the resource of OTEL_SERVICE_NAME (seatflow
// when unset) and OTEL_RESOURCE_ATTRIBUTES. The exporter's own variables (headers,
// timeout, insecure) are read by the exporter. Without an endpoint it installs nothing
// and shutdown does nothing. shutdown flushes the spans still batched.
//
// An exporter that cannot reach its endpoint slows no request (spans wait in the batch and
// are dropped when it is full); its errors are logged to log at most once a minute, with
// how many were not logged, and shutdown logs the count of those not logged since the last.
func Setup(ctx context.Context, log *slog.Logger) (shutdown func(context.Context) error, err error) {
	nothing := func(context.Context) error { return nil }
	if !endpointSet(os.Getenv) {
		return nothing, nil
	}
	proto, err := protocol(os.Getenv)
	if err != nil {
		return nothing, err
	}
	var exp sdktrace.SpanExporter
	if proto == "grpc" {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nothing, fmt.Errorf("otlp exporter: %w", err)
	}
	res, err := Resource(ctx)
	if err != nil {
		return nothing, err
	}
	warn := &warnings{log: log, every: time.Minute, now: time.Now}
	otel.SetErrorHandler(warn)
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	Install(tp)
	return func(ctx context.Context) error {
		err := tp.Shutdown(ctx)
		warn.flush()
		return err
	}, nil
}

// Resource is the instance's resource: service.name seatflow unless OTEL_SERVICE_NAME
// or OTEL_RESOURCE_ATTRIBUTES name another, the other attributes of
// OTEL_RESOURCE_ATTRIBUTES, the SDK's and the host's.
func Resource(ctx context.Context) (*resource.Resource, error) {
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", ServiceName)),
		resource.WithFromEnv(), resource.WithTelemetrySDK(), resource.WithHost())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	return res, nil
}

// RootSpan starts a span of background work (a reconciler run, an expiry batch, an
// outbox relay pass): a root of its own trace whatever ctx carries.
func RootSpan(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if !Enabled() {
		return ctx, trace.SpanFromContext(context.Background())
	}
	return Tracer().Start(ctx, name, trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attrs...))
}

// End ends span, marking it failed with err's message when err is not nil.
func End(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// warnings logs the SDK's errors (an unreachable endpoint fails every batch) at most once
// per every, counting the ones it left out.
type warnings struct {
	log        *slog.Logger
	every      time.Duration
	now        func() time.Time
	mu         sync.Mutex
	last       time.Time
	suppressed int
	lastErr    error // the latest of the suppressed
}

// ExportWarning is the message of every export-failure warning (the bench counts them).
const ExportWarning = "traces: export failed"

// Handle logs err unless another was logged less than every ago.
func (w *warnings) Handle(err error) {
	w.mu.Lock()
	now := w.now()
	if !w.last.IsZero() && now.Sub(w.last) < w.every {
		w.suppressed++
		w.lastErr = err
		w.mu.Unlock()
		return
	}
	suppressed := w.suppressed
	w.last, w.suppressed, w.lastErr = now, 0, nil
	w.mu.Unlock()
	w.logger().Warn(ExportWarning, "err", err, "not_logged_since_last", suppressed)
}

// flush logs the latest error left out, with their count, when some were: the instance
// stops without the failures of its last minute going unsaid.
func (w *warnings) flush() {
	w.mu.Lock()
	suppressed, err := w.suppressed, w.lastErr
	w.suppressed, w.lastErr = 0, nil
	w.mu.Unlock()
	if suppressed > 0 {
		w.logger().Warn(ExportWarning, "err", err, "not_logged_since_last", suppressed)
	}
}

func (w *warnings) logger() *slog.Logger {
	if w.log == nil {
		return slog.Default()
	}
	return w.log
}
