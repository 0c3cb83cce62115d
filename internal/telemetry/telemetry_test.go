package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"seatflow/internal/tooling/otlpreceiver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// clearOTEL unsets the OTEL_* variables the tests' environment may hold.
func clearOTEL(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG", "OTEL_SERVICE_NAME",
		"OTEL_RESOURCE_ATTRIBUTES", "OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER"} {
		t.Setenv(k, "")
	}
}

type plain struct{}

func (plain) ServeHTTP(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }

func TestOffWithoutEndpoint(t *testing.T) {
	clearOTEL(t)
	shutdown, err := Setup(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(context.Background())
	if Enabled() {
		t.Fatal("tracing on without an endpoint")
	}
	if _, ok := Handler(plain{}).(plain); !ok {
		t.Error("Handler wrapped the handler with tracing off")
	}
	if Transport(http.DefaultTransport) != http.DefaultTransport {
		t.Error("Transport wrapped the transport with tracing off")
	}
}

func TestBadProtocolRefused(t *testing.T) {
	clearOTEL(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	if _, err := Setup(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_PROTOCOL") {
		t.Fatalf("err = %v, want the protocol named", err)
	}
	if Enabled() {
		t.Fatal("tracing on after a refused configuration")
	}
}

func TestSetupExportsOverOTLPHTTP(t *testing.T) {
	for _, tc := range []struct {
		name, sampler string
		want          bool
	}{{"SampledByDefault", "", true}, {"SamplerFromEnvironment", "always_off", false}} {
		t.Run(tc.name, func(t *testing.T) {
			clearOTEL(t)
			rc := otlpreceiver.New()
			srv := httptest.NewServer(rc)
			defer srv.Close()
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
			t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test")
			t.Setenv("OTEL_TRACES_SAMPLER", tc.sampler)
			shutdown, err := Setup(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer enabled.Store(false)
			_, span := RootSpan(context.Background(), "expiry.batch")
			span.End()
			if err := shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			names, res := rc.Names(), rc.Resource()
			if got := len(names) == 1 && names[0] == "expiry.batch"; got != tc.want {
				t.Fatalf("exported %v, want the span: %v", names, tc.want)
			}
			if tc.want && (res["service.name"] != "seatflow" || res["deployment.environment"] != "test") {
				t.Errorf("resource = %v, want service.name seatflow and the variable's attribute", res)
			}
		})
	}
}

func TestHandler(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	restore := Install(tp)
	defer restore()
	srv := httptest.NewServer(Handler(plain{}))
	defer srv.Close()
	get := func(path string, header http.Header) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	t.Run("TraceresponseContinuesTheCaller", func(t *testing.T) {
		resp := get("/query", http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}})
		if got := resp.Header.Get("traceresponse"); !strings.HasPrefix(got, "00-4bf92f3577b34da6a3ce929d0e0e4736-") || strings.Contains(got, "00f067aa0ba902b7") {
			t.Errorf("traceresponse = %q, want the caller's trace and a span of ours", got)
		}
	})
	t.Run("NoSpanForProbesAndUpgrades", func(t *testing.T) {
		before := len(rec.Ended())
		for _, r := range []struct {
			path string
			h    http.Header
		}{{"/healthz", nil}, {"/readyz", nil}, {"/metrics", nil}, {"/query", http.Header{"Upgrade": {"websocket"}, "Connection": {"Upgrade"}}}} {
			if resp := get(r.path, r.h); resp.Header.Get("traceresponse") != "" {
				t.Errorf("%s %v: traceresponse %q", r.path, r.h, resp.Header.Get("traceresponse"))
			}
		}
		if n := len(rec.Ended()) - before; n != 0 {
			t.Errorf("%d spans for probes and upgrades", n)
		}
	})
	t.Run("SpanNamesBounded", func(t *testing.T) {
		get("/demo/anything-a-client-chooses", nil)
		spans := rec.Ended()
		if got := spans[len(spans)-1].Name(); got != "GET" {
			t.Errorf("span name %q, want the method alone for a path of the client's choosing", got)
		}
	})
	t.Run("RecordedSpanHasTheHTTPConventions", func(t *testing.T) {
		get("/query", nil)
		spans := rec.Ended()
		attrs := map[string]string{}
		for _, kv := range spans[len(spans)-1].Attributes() {
			attrs[string(kv.Key)] = kv.Value.Emit()
		}
		if attrs["http.request.method"] != "GET" || attrs["url.path"] != "/query" || attrs["http.response.status_code"] != "200" {
			t.Errorf("attributes %v, want the method, the path and the status", attrs)
		}
	})
	t.Run("UnsampledRequestKeepsItsTrace", func(t *testing.T) {
		restore := Install(sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()), sdktrace.WithSpanProcessor(rec)))
		defer restore()
		before := len(rec.Ended())
		resp := get("/query", nil)
		if len(rec.Ended()) != before {
			t.Error("an unsampled request recorded a span")
		}
		if got := resp.Header.Get("traceresponse"); !strings.HasPrefix(got, "00-") || !strings.HasSuffix(got, "-00") {
			t.Errorf("traceresponse = %q, want the request's trace, not sampled", got)
		}
	})
	tp.Shutdown(context.Background())
}

func TestLogLinesCarryTheTrace(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(LogHandler(slog.NewJSONHandler(&buf, nil))).With("instance", "a")
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid}))
	log.InfoContext(ctx, "in a request")
	log.Info("outside")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var first, second map[string]any
	json.Unmarshal([]byte(lines[0]), &first)
	json.Unmarshal([]byte(lines[1]), &second)
	if first["trace_id"] != tid.String() || first["span_id"] != sid.String() || first["instance"] != "a" {
		t.Errorf("request line = %v, want its trace_id and span_id", first)
	}
	if _, ok := second["trace_id"]; ok {
		t.Errorf("a line without a span has a trace_id: %v", second)
	}
}

// TestExportWarningsRateLimited: an endpoint that is down fails every batch; one warning a
// minute is logged, with the count of those left out.
func TestExportWarningsRateLimited(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Date(2030, 1, 1, 21, 0, 0, 0, time.UTC)
	w := &warnings{log: slog.New(slog.NewJSONHandler(&buf, nil)), every: time.Minute, now: func() time.Time { return clock }}
	for range 100 {
		w.Handle(errors.New("connection refused"))
		clock = clock.Add(time.Second)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 { // at 0 s and at 60 s
		t.Fatalf("%d warnings for 100 failures in 100 s, want 2:\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[1], `"not_logged_since_last":59`) {
		t.Errorf("second warning = %s, want 59 left out", lines[1])
	}
	// At shutdown, the 39 failures after the second warning are logged as one.
	w.flush()
	lines = strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[2], `"not_logged_since_last":39`) || !strings.Contains(lines[2], "connection refused") {
		t.Fatalf("after flush: %s, want a third warning with 39 left out", buf.String())
	}
	w.flush()
	if n := len(strings.Split(strings.TrimSpace(buf.String()), "\n")); n != 3 {
		t.Errorf("a flush with nothing left out logged: %d lines", n)
	}
}

// TestEndpointDownSlowsNoRequest: with the endpoint refusing connections, starting and
// ending spans costs what it costs with it up: nothing waits for the export.
func TestEndpointDownSlowsNoRequest(t *testing.T) {
	clearOTEL(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
	var buf syncBuffer
	shutdown, err := Setup(context.Background(), slog.New(slog.NewJSONHandler(&buf, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer enabled.Store(false)
	start := time.Now()
	for range 10000 {
		_, span := RootSpan(context.Background(), "expiry.batch")
		span.End()
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("10,000 spans took %s with the endpoint down", took)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	shutdown(ctx)
}

// syncBuffer is a bytes.Buffer safe for the exporter's goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// TestNoChildSpansUnderAnUnsampledParent: under a span of this instance the sampler left
// out, the project's tracer and the stores' start no span (the parent stands in, its span
// id unchanged); a new root, a sampled parent's child and a remote parent's child are
// started as the sampler decides.
func TestNoChildSpansUnderAnUnsampledParent(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	restore := Install(sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())), sdktrace.WithSpanProcessor(rec)))
	ctx, parent := Tracer().Start(context.Background(), "POST /query")
	if parent.SpanContext().IsSampled() || !parent.SpanContext().IsValid() {
		t.Fatalf("the root %v, want a valid span left out", parent.SpanContext())
	}
	for name, tr := range map[string]trace.Tracer{"project": Tracer(), "store": TracerProvider().Tracer("redis")} {
		if _, child := tr.Start(ctx, "EVALSHA"); !child.SpanContext().Equal(parent.SpanContext()) {
			t.Errorf("%s tracer: a child %v under an unsampled parent, want the parent %v itself", name, child.SpanContext(), parent.SpanContext())
		}
	}
	if _, root := Tracer().Start(ctx, "reconcile", trace.WithNewRoot()); root.SpanContext().TraceID() == parent.SpanContext().TraceID() {
		t.Error("a new root under an unsampled parent stayed in its trace")
	}
	restore()

	// Every span sampled: each child is a span of its own, recorded.
	restore = Install(sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(rec)))
	defer restore()
	ctx, parent = Tracer().Start(context.Background(), "POST /query")
	_, child := TracerProvider().Tracer("redis").Start(ctx, "EVALSHA")
	child.End()
	if child.SpanContext().SpanID() == parent.SpanContext().SpanID() || len(rec.Ended()) != 1 || rec.Ended()[0].Name() != "EVALSHA" {
		t.Errorf("a sampled parent's child: %v, recorded %d, want a span of its own, recorded", child.SpanContext(), len(rec.Ended()))
	}
	// A caller's unsampled traceparent: the sampler (always on here) decides the server's span.
	remote := trace.NewSpanContext(trace.SpanContextConfig{TraceID: parent.SpanContext().TraceID(), SpanID: parent.SpanContext().SpanID(), Remote: true})
	_, server := Tracer().Start(trace.ContextWithRemoteSpanContext(context.Background(), remote), "POST /query")
	if !server.IsRecording() || server.SpanContext().SpanID() == remote.SpanID() {
		t.Errorf("under a remote unsampled parent the span %v is not recorded: the sampler was not asked", server.SpanContext())
	}
}

// TestTraceParentFormat: the traceresponse value is the W3C form of the span context, the
// flags included.
func TestTraceParentFormat(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	for flags, want := range map[trace.TraceFlags]string{
		0:                  "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
		trace.FlagsSampled: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
	} {
		if got := TraceParent(trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags})); got != want {
			t.Errorf("TraceParent = %q, want %q", got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { TraceParent(trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid})) }); n > 1 {
		t.Errorf("TraceParent allocates %.0f times, want 1", n)
	}
}
