package httpapi

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"seatflow"
	"seatflow/graph"
	"seatflow/internal/catalog"
)

// complexity weighs lists by their size argument, so `movies(first: 100)` costs a hundred
// times its selection; FixedComplexityLimit then refuses what is too heavy before any
// resolver runs.
func complexity() graph.ComplexityRoot {
	var c graph.ComplexityRoot
	size := func(n *int, def int) int {
		if n == nil {
			return def
		}
		return max(*n, 1)
	}
	c.Query.Movies = func(child int, first *int, _ *string, _ *seatflow.MovieStatus) int {
		return 1 + size(first, catalog.DefaultPageSize)*child
	}
	c.Query.BestSeats = func(child int, _ int, count int) int { return 1 + max(count, 1)*child }
	c.Query.ReconcileRuns = func(child int, first *int) int { return 1 + size(first, 20)*child }
	return c
}

// depthLimit refuses operations nested deeper than Max (fragments are followed).
type depthLimit struct{ Max int }

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = depthLimit{}

func (depthLimit) ExtensionName() string                   { return "DepthLimit" }
func (depthLimit) Validate(graphql.ExecutableSchema) error { return nil }
func (d depthLimit) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	if oc.Operation == nil {
		return nil
	}
	if depth := selectionDepth(oc.Operation.SelectionSet, 0, map[string]bool{}); depth > d.Max {
		err := gqlerror.Errorf("query is nested %d levels deep; the limit is %d", depth, d.Max)
		err.Extensions = map[string]any{"code": "DEPTH_LIMIT_EXCEEDED"}
		return err
	}
	return nil
}

func selectionDepth(set ast.SelectionSet, depth int, visiting map[string]bool) int {
	deepest := depth
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			if len(s.SelectionSet) > 0 {
				deepest = max(deepest, selectionDepth(s.SelectionSet, depth+1, visiting))
			}
		case *ast.InlineFragment:
			deepest = max(deepest, selectionDepth(s.SelectionSet, depth, visiting))
		case *ast.FragmentSpread:
			if s.Definition == nil || visiting[s.Name] {
				continue
			}
			visiting[s.Name] = true
			deepest = max(deepest, selectionDepth(s.Definition.SelectionSet, depth, visiting))
			delete(visiting, s.Name)
		}
	}
	return deepest
}
