package background

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"seatflow/internal/telemetry"
)

// TestPassIsARootSpan: a pass of background work is the root of a trace of its own even
// when started from a request's context, and its error marks it failed.
func TestPassIsARootSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer telemetry.Install(tp)()
	defer tp.Shutdown(context.Background())
	reqCtx, req := telemetry.Tracer().Start(context.Background(), "POST /query")
	var inner context.Context
	Pass(reqCtx, ReconcileRun, func(ctx context.Context) error { inner = ctx; return nil })
	err := Pass(reqCtx, ExpiryBatch, func(ctx context.Context) error { return errors.New("redis down") })
	req.End()
	if err == nil {
		t.Fatal("Pass lost fn's error")
	}
	spans := rec.Ended()
	if len(spans) != 3 {
		t.Fatalf("spans = %d, want 3", len(spans))
	}
	for _, s := range spans[:2] {
		if s.Parent().IsValid() || s.SpanContext().TraceID() == req.SpanContext().TraceID() {
			t.Errorf("%s: parent %v, want a root of its own trace", s.Name(), s.Parent())
		}
	}
	if spans[0].Name() != ReconcileRun || !spans[0].SpanContext().Equal(traceOf(inner)) {
		t.Errorf("fn did not run inside the pass's span")
	}
	if spans[1].Name() != ExpiryBatch || spans[1].Status().Code != codes.Error {
		t.Errorf("%s status %v, want an error", spans[1].Name(), spans[1].Status())
	}
}

func traceOf(ctx context.Context) trace.SpanContext { return trace.SpanContextFromContext(ctx) }
