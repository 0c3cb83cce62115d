package httpapi

import (
	"context"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
	"go.opentelemetry.io/otel/trace"
)

var (
	requestsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "seatflow_graphql_requests_total",
		Help: "GraphQL operations by operation name and outcome (ok or error).",
	}, []string{"operation", "outcome"})
	requestSeconds = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "seatflow_graphql_request_duration_seconds",
		Help:    "GraphQL operation latency by operation name.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"operation"})

	// The RED metrics of OpenTelemetry's and Apollo's naming, with the operation's type;
	// the duration's buckets carry the trace id of an observation as an exemplar (served
	// in OpenMetrics only).
	operationsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "graphql_operations_total",
		Help: "GraphQL operations by operation label, type (query, mutation, subscription, unknown) and outcome (ok, error, refused).",
	}, []string{"operation", "type", "outcome"})
	operationSeconds = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "graphql_operation_duration_seconds",
		Help:    "GraphQL operation latency by operation label and type; exemplars hold the trace id.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"operation", "type"})
	errorsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "graphql_errors_total",
		Help: "Errors in GraphQL answers by extensions.code.",
	}, []string{"code"})
)

// operationMetrics counts operations and their latency by operation label: the name of
// the operation when it is known at start (operationLabels), else its root field; only for
// an operation that executed (a refused one counts as "refused").
type operationMetrics struct {
	labels *operationLabels
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationInterceptor
	graphql.ResponseInterceptor
} = operationMetrics{}

const executedStats = "executed"

func (operationMetrics) ExtensionName() string { return "OperationMetrics" }

// Validate takes the schema's root fields as labels.
func (m operationMetrics) Validate(es graphql.ExecutableSchema) error {
	m.labels.rootFields(es.Schema())
	return nil
}

// InterceptOperation marks the operation as executed: it passed every check.
func (operationMetrics) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	graphql.GetOperationContext(ctx).Stats.SetExtension(executedStats, true)
	return next(ctx)
}

func (m operationMetrics) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	if !graphql.HasOperationContext(ctx) {
		return resp
	}
	oc := graphql.GetOperationContext(ctx)
	if oc.Operation != nil && oc.Operation.Operation == ast.Subscription {
		return resp // a subscription's responses are events, not requests
	}
	name := "refused"
	if executed, _ := oc.Stats.GetExtension(executedStats).(bool); executed {
		name = m.labels.of(oc.Operation)
	}
	outcome := "ok"
	if resp != nil && len(resp.Errors) > 0 {
		outcome = "error"
	}
	took := time.Since(oc.Stats.OperationStart).Seconds()
	requestsTotal.WithLabelValues(name, outcome).Inc()
	requestSeconds.WithLabelValues(name).Observe(took)
	kind := "unknown"
	if oc.Operation != nil {
		kind = string(oc.Operation.Operation)
	}
	if name == "refused" {
		outcome = "refused"
	}
	operationsTotal.WithLabelValues(name, kind, outcome).Inc()
	observe(ctx, operationSeconds.WithLabelValues(name, kind), took)
	if resp != nil {
		for _, e := range resp.Errors {
			errorsTotal.WithLabelValues(codeLabel(errorCode(e.Extensions))).Inc()
		}
	}
	return resp
}

// observe records v in h with the trace id of ctx's span as the exemplar when the span is
// sampled (an exemplar must lead to a trace that was kept).
func observe(ctx context.Context, h prometheus.Observer, v float64) {
	if sc := trace.SpanContextFromContext(ctx); sc.IsSampled() {
		if eo, ok := h.(prometheus.ExemplarObserver); ok {
			eo.ObserveWithExemplar(v, prometheus.Labels{"trace_id": sc.TraceID().String()})
			return
		}
	}
	h.Observe(v)
}

// codeLabel is code as a label: the server writes every code (no client chooses one), but
// a code that does not look like one is "other", so the series stay bounded whatever a
// future error carries.
func codeLabel(code string) string {
	if len(code) == 0 || len(code) > 40 {
		return "other"
	}
	for _, r := range code {
		if (r < 'A' || r > 'Z') && r != '_' {
			return "other"
		}
	}
	return code
}

// clientOperations are the operation names the project's own clients send: the /demo and
// /demo/door pages (internal/demo/page) and the client suite's library (clients/lib); the playground's
// sample is anonymous. TestClientOperations keeps the list equal to their sources.
var clientOperations = []string{
	"DemoBest", "DemoCancel", "DemoDeclineOffer", "DemoExtend", "DemoGuestSession", "DemoHold", "DemoJoinQueue",
	"DemoJoinWaitingList", "DemoLeaveQueue", "DemoLeaveWaitingList", "DemoMyOrders", "DemoMyWaitingList", "DemoPay",
	"DemoQueue", "DemoSeatMap", "DemoShowtime", "DemoShowtimes", "DemoTickets", "DemoWaitingList", "DoorCheckIn", "DoorCount", "DoorShowtimes",
	"Best", "Day", "GuestSession", "Hold", "SeatMap",
}

// operationLabels are the labels known at start, so that no client can choose them (nor
// use them up: the first names to arrive once took every label, and real operations
// counted as "other" until a restart). An operation is labelled with its name when it is
// one of the persisted documents' or the project's clients', else with its first root
// field (showtimes, holdSeats, ...), else "other".
type operationLabels struct {
	names map[string]bool
	roots map[string]bool
}

// newOperationLabels allows the operation names of the manifest's documents and of the
// project's clients; the root fields come with the schema (rootFields).
func newOperationLabels(manifest map[string]string) *operationLabels {
	l := &operationLabels{names: map[string]bool{}, roots: map[string]bool{}}
	for _, name := range clientOperations {
		l.names[name] = true
	}
	for _, q := range manifest {
		doc, err := parser.ParseQuery(&ast.Source{Input: q})
		if err != nil {
			continue
		}
		for _, op := range doc.Operations {
			if op.Name != "" {
				l.names[op.Name] = true
			}
		}
	}
	return l
}

// rootFields adds the fields of the schema's root types to the labels.
func (l *operationLabels) rootFields(schema *ast.Schema) {
	for _, root := range []*ast.Definition{schema.Query, schema.Mutation, schema.Subscription} {
		if root == nil {
			continue
		}
		for _, f := range root.Fields {
			if !strings.HasPrefix(f.Name, "__") {
				l.roots[f.Name] = true
			}
		}
	}
}

// of is op's label.
func (l *operationLabels) of(op *ast.OperationDefinition) string {
	if l.names[op.Name] {
		return op.Name
	}
	if f := firstField(op.SelectionSet); l.roots[f] {
		return f
	}
	return "other"
}

// firstField is the name of the first field a selection set selects, fragments followed.
func firstField(set ast.SelectionSet) string {
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			return s.Name
		case *ast.InlineFragment:
			if f := firstField(s.SelectionSet); f != "" {
				return f
			}
		case *ast.FragmentSpread:
			if s.Definition != nil {
				if f := firstField(s.Definition.SelectionSet); f != "" {
					return f
				}
			}
		}
	}
	return ""
}
