package httpapi

import (
	"context"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"golang.org/x/sync/semaphore"

	"seatflow"
)

// Heavy operations: those that request heavyCost points or more share maxInflight points
// of execution at a time per instance (the memory of an execution grows with its cost,
// about a kilobyte per point); one that cannot start within heavyWait is answered
// SERVICE_UNAVAILABLE. Cheaper operations never wait.
const (
	heavyCost = 1000
	heavyWait = 5 * time.Second
)

// inflightCost bounds the cost of the heavy operations executing at once, so that a few
// clients sending the largest documents the limits allow cannot take the instance's
// memory. It runs after costLimit (which priced the operation) and after the response
// cache (a hit executes nothing).
type inflightCost struct {
	sem *semaphore.Weighted
	max int64
}

var _ interface {
	graphql.HandlerExtension
	graphql.ResponseInterceptor
} = inflightCost{}

func newInflightCost(maxPoints int) inflightCost {
	if maxPoints <= 0 {
		return inflightCost{}
	}
	return inflightCost{sem: semaphore.NewWeighted(int64(maxPoints)), max: int64(maxPoints)}
}

// ExtensionName names the extension for gqlgen.
func (inflightCost) ExtensionName() string { return "InflightCost" }

// Validate accepts any schema.
func (inflightCost) Validate(graphql.ExecutableSchema) error { return nil }

// InterceptResponse runs a heavy operation once its points are free.
func (c inflightCost) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	if c.sem == nil || !graphql.HasOperationContext(ctx) {
		return next(ctx)
	}
	oc := graphql.GetOperationContext(ctx)
	spent, _ := oc.Stats.GetExtension(costStats).(*opCost)
	if spent == nil || !spent.charged || spent.requested < heavyCost || oc.Operation.Operation == ast.Subscription {
		return next(ctx)
	}
	weight := min(int64(spent.requested), c.max)
	wait, cancel := context.WithTimeout(ctx, heavyWait)
	defer cancel()
	if err := c.sem.Acquire(wait, weight); err != nil {
		return &graphql.Response{Errors: gqlerror.List{{
			Message:    "the server is busy with other large queries: try again in a moment, or ask for fewer items",
			Extensions: map[string]any{"code": seatflow.EUNAVAILABLE}}}}
	}
	defer c.sem.Release(weight)
	return next(ctx)
}
