package seats

import (
	"context"

	"go.opentelemetry.io/otel/trace"
)

// traceparent is the W3C traceparent of ctx's span, passed to the scripts that publish a
// delta (the last ARGV) so the instances delivering it link their spans to the change; ""
// when ctx has no span context, as always when traces are not recorded (nothing then
// puts one in a context), which costs the scripts an empty argument.
func traceparent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}
