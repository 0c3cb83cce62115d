package httpapi

import (
	"context"
	"regexp"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/vektah/gqlparser/v2/ast"
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

// operationMetrics counts operations and their latency by operation name.
type operationMetrics struct{}

var _ interface {
	graphql.HandlerExtension
	graphql.ResponseInterceptor
} = operationMetrics{}

func (operationMetrics) ExtensionName() string                   { return "OperationMetrics" }
func (operationMetrics) Validate(graphql.ExecutableSchema) error { return nil }
func (operationMetrics) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	if !graphql.HasOperationContext(ctx) {
		return resp
	}
	oc := graphql.GetOperationContext(ctx)
	if oc.Operation != nil && oc.Operation.Operation == ast.Subscription {
		return resp // a subscription's responses are events, not requests
	}
	name := operationLabel(oc.OperationName)
	outcome := "ok"
	if resp != nil && len(resp.Errors) > 0 {
		outcome = "error"
	}
	requestsTotal.WithLabelValues(name, outcome).Inc()
	requestSeconds.WithLabelValues(name).Observe(time.Since(oc.Stats.OperationStart).Seconds())
	return resp
}

var (
	labelsMu   sync.Mutex
	labelsSeen = map[string]bool{}
	validLabel = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)
)

// operationLabel bounds the label set: operation names come from clients, so only the
// first 200 well-formed names get a series of their own.
func operationLabel(name string) string {
	if name == "" {
		return "anonymous"
	}
	if !validLabel.MatchString(name) {
		return "other"
	}
	labelsMu.Lock()
	defer labelsMu.Unlock()
	if !labelsSeen[name] {
		if len(labelsSeen) >= 200 {
			return "other"
		}
		labelsSeen[name] = true
	}
	return name
}
