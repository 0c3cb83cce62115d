package httpapi

import (
	"context"
	"fmt"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"

	"seatflow"
)

// documentLimits refuses, before gqlgen validates it, a document with more field
// selections or aliases than the limits: validation compares the fields of a selection
// set pairwise, so its cost grows with their square, and a few kilobytes of aliases
// would otherwise buy seconds of CPU and tens of thousands of errors. Counting needs one
// more (linear) parse; verdicts are kept per document text.
type documentLimits struct {
	MaxFields, MaxAliases, MaxTokens int

	mu      sync.Mutex
	checked *simplelru.LRU[string, *gqlerror.Error]
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationParameterMutator
} = (*documentLimits)(nil)

// ExtensionName names the extension for gqlgen.
func (*documentLimits) ExtensionName() string { return "DocumentLimits" }

// Validate accepts any schema.
func (*documentLimits) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationParameters counts the document's fields and aliases.
func (d *documentLimits) MutateOperationParameters(ctx context.Context, p *graphql.RawParams) *gqlerror.Error {
	if p.Query == "" {
		return nil
	}
	d.mu.Lock()
	if d.checked == nil {
		d.checked, _ = simplelru.NewLRU[string, *gqlerror.Error](1000, nil)
	}
	verdict, ok := d.checked.Get(p.Query)
	d.mu.Unlock()
	if ok {
		return verdict
	}
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: p.Query}, d.MaxTokens)
	if err == nil {
		fields, aliases := 0, 0
		var count func(set ast.SelectionSet)
		count = func(set ast.SelectionSet) {
			for _, sel := range set {
				switch s := sel.(type) {
				case *ast.Field:
					fields++
					if s.Alias != "" && s.Alias != s.Name {
						aliases++
					}
					count(s.SelectionSet)
				case *ast.InlineFragment:
					count(s.SelectionSet)
				}
			}
		}
		for _, op := range doc.Operations {
			count(op.SelectionSet)
		}
		for _, f := range doc.Fragments {
			count(f.SelectionSet)
		}
		switch {
		case d.MaxFields > 0 && fields > d.MaxFields:
			verdict = &gqlerror.Error{Message: fmt.Sprintf("the document selects %d fields; the limit is %d", fields, d.MaxFields),
				Extensions: map[string]any{"code": seatflow.EFIELDLIMIT}}
		case d.MaxAliases > 0 && aliases > d.MaxAliases:
			verdict = &gqlerror.Error{Message: fmt.Sprintf("the document uses %d aliases; the limit is %d", aliases, d.MaxAliases),
				Extensions: map[string]any{"code": seatflow.EALIASLIMIT}}
		}
	} // a parse error is gqlgen's to report
	d.mu.Lock()
	d.checked.Add(p.Query, verdict)
	d.mu.Unlock()
	return verdict
}

// oneMutation refuses an operation that selects more than one mutation field: a
// mutation's result is not nullable, so one failing field would null the others' and a
// client would never learn which of several holds succeeded. One mutation per request.
type oneMutation struct{}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = oneMutation{}

// ExtensionName names the extension for gqlgen.
func (oneMutation) ExtensionName() string { return "OneMutation" }

// Validate accepts any schema.
func (oneMutation) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationContext counts the operation's mutation fields.
func (oneMutation) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	if oc.Operation == nil || oc.Operation.Operation != ast.Mutation {
		return nil
	}
	n := 0
	for _, f := range graphql.CollectFields(oc, oc.Operation.SelectionSet, []string{"Mutation"}) {
		if f.Name != "__typename" {
			n++
		}
	}
	if n > 1 {
		return &gqlerror.Error{Message: fmt.Sprintf("the request has %d mutation fields: send one mutation per request", n),
			Extensions: map[string]any{"code": seatflow.EMULTIPLEMUTATIONS}}
	}
	return nil
}
