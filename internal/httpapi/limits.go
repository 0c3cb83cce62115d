package httpapi

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"seatflow"
)

// depthLimit refuses operations nested deeper than Max (fragments are followed).
// Introspection is not counted: the standard introspection query of every GraphQL tool
// nests 14 levels, and the schema it walks is finite.
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
		err.Extensions = map[string]any{"code": seatflow.EDEPTHLIMIT}
		return err
	}
	return nil
}

func selectionDepth(set ast.SelectionSet, depth int, visiting map[string]bool) int {
	deepest := depth
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			if s.Name == "__schema" || s.Name == "__type" {
				continue // introspection: as deep as the schema, and costed flat (cost.go)
			}
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
