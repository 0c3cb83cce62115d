package httpapi

import (
	"context"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
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
)

// operationMetrics counts operations and their latency by operation name: the name of
// the operation the document defines, and only for an operation that executed (a refused
// one counts as "refused"). With a persisted-query manifest, only the manifest's
// operation names are labels; without one, the first maxLabels names that executed.
type operationMetrics struct {
	labels *operationLabels
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationInterceptor
	graphql.ResponseInterceptor
} = operationMetrics{}

const executedStats = "executed"

func (operationMetrics) ExtensionName() string                   { return "OperationMetrics" }
func (operationMetrics) Validate(graphql.ExecutableSchema) error { return nil }

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
		name = m.labels.of(oc.Operation.Name)
	}
	outcome := "ok"
	if resp != nil && len(resp.Errors) > 0 {
		outcome = "error"
	}
	requestsTotal.WithLabelValues(name, outcome).Inc()
	requestSeconds.WithLabelValues(name).Observe(time.Since(oc.Stats.OperationStart).Seconds())
	return resp
}

const maxLabels = 200

// operationLabels bounds the label set: operation names come from clients.
type operationLabels struct {
	mu      sync.Mutex
	seen    map[string]bool
	allowed map[string]bool // the manifest's names; nil: first come, up to maxLabels
}

// newOperationLabels allows the operation names of the manifest's documents, or, with no
// manifest, the first names seen.
func newOperationLabels(manifest map[string]string) *operationLabels {
	l := &operationLabels{seen: map[string]bool{}}
	if len(manifest) > 0 {
		l.allowed = map[string]bool{}
		for _, q := range manifest {
			doc, err := parser.ParseQuery(&ast.Source{Input: q})
			if err != nil {
				continue
			}
			for _, op := range doc.Operations {
				if op.Name != "" {
					l.allowed[op.Name] = true
				}
			}
		}
	}
	return l
}

func (l *operationLabels) of(name string) string {
	switch {
	case name == "":
		return "anonymous"
	case len(name) > 64:
		return "other"
	case l.allowed != nil:
		if l.allowed[name] {
			return name
		}
		return "other"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.seen[name] {
		if len(l.seen) >= maxLabels {
			return "other"
		}
		l.seen[name] = true
	}
	return name
}
