package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/99designs/gqlgen/graphql"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"seatflow"
	"seatflow/internal/telemetry"
)

// operationSpans makes each executed GraphQL operation a span, `{type} {name}` (e.g.
// `mutation HoldSeats`), a child of the request's: the operation's type and name, the
// document's sha256 (never the document, nor its variables), its cost, and the
// extensions.code of an error. An operation refused before it ran leaves its code on the
// request's span. Added only when traces are recorded (telemetry.Enabled).
type operationSpans struct{}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationInterceptor
	graphql.ResponseInterceptor
} = operationSpans{}

// Attribute keys of the operation span (OpenTelemetry's GraphQL conventions, and ours).
const (
	attrOperationName = attribute.Key("graphql.operation.name")
	attrOperationType = attribute.Key("graphql.operation.type")
	attrDocumentHash  = attribute.Key("graphql.document.hash")
	attrCost          = attribute.Key("graphql.operation.cost")
	attrErrorCode     = attribute.Key("graphql.error.code")
)

// serverKind is the operation span's kind, made once (an option is an allocation).
var serverKind = trace.WithSpanKind(trace.SpanKindServer)

// maxSpanOperationName bounds the operation name in a span's name and attribute.
const maxSpanOperationName = 100

func (operationSpans) ExtensionName() string { return "OperationSpans" }

func (operationSpans) Validate(graphql.ExecutableSchema) error { return nil }

// InterceptOperation starts the operation's span; a query's or mutation's ends with its
// answer, a subscription's with its last event.
func (operationSpans) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	oc := graphql.GetOperationContext(ctx)
	if oc.Operation == nil || telemetry.Unsampled(ctx) { // no span would be started: nothing to build for it
		return next(ctx)
	}
	kind := string(oc.Operation.Operation)
	name := oc.Operation.Name
	if len(name) > maxSpanOperationName {
		name = name[:maxSpanOperationName]
	}
	spanName := kind
	if name != "" {
		spanName += " " + name
	}
	ctx, span := telemetry.Tracer().Start(ctx, spanName, serverKind)
	if span.IsRecording() { // the document's hash only for a span that is kept: most are not sampled
		sum := sha256.Sum256([]byte(oc.RawQuery))
		span.SetAttributes(attrOperationType.String(kind), attrDocumentHash.String(hex.EncodeToString(sum[:])))
		if name != "" {
			span.SetAttributes(attrOperationName.String(name))
		}
		if spent, _ := oc.Stats.GetExtension(costStats).(*opCost); spent != nil {
			span.SetAttributes(attrCost.Int(spent.requested))
		}
	}
	responses := next(ctx)
	ended := false
	return func(ctx context.Context) *graphql.Response {
		resp := responses(ctx)
		if !ended && (resp == nil || oc.Operation.Operation != "subscription") {
			ended = true
			span.End()
		}
		return resp
	}
}

// InterceptResponse marks the span of the answer (the operation's, or the request's when
// it was refused before it ran) with its first error's code.
func (operationSpans) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	if resp == nil || len(resp.Errors) == 0 {
		return resp
	}
	span := trace.SpanFromContext(ctx)
	code := errorCode(resp.Errors[0].Extensions)
	span.SetAttributes(attrErrorCode.String(code))
	span.SetStatus(codes.Error, code)
	return resp
}

// errorCode is an error's extensions.code, INTERNAL when it has none.
func errorCode(ext map[string]any) string {
	if c, ok := ext["code"].(string); ok && c != "" {
		return c
	}
	return seatflow.EINTERNAL
}
