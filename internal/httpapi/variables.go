package httpapi

import (
	"context"
	"fmt"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// variableError rewrites an error of the variables' coercion (gqlparser says only "must be
// defined" with the path ["variable", "id"]) into a sentence that stands alone:
// "variable $id of type ID! was not provided". It returns nil for any other error.
func variableError(ctx context.Context, schema *ast.Schema, err *gqlerror.Error) *gqlerror.Error {
	if len(err.Path) < 2 || err.Path[0] != ast.PathName("variable") || err.Rule != "" {
		return nil
	}
	name, ok := err.Path[1].(ast.PathName)
	if !ok {
		return nil
	}
	where := "$" + string(name)
	for _, el := range err.Path[2:] {
		switch el := el.(type) {
		case ast.PathName:
			where += "." + string(el)
		case ast.PathIndex:
			where += fmt.Sprintf("[%d]", int(el))
		}
	}
	typ := ""
	if t := variableType(ctx, schema, err.Path[1:]); t != nil {
		typ = " of type " + t.String()
	}
	var msg string
	switch err.Message {
	case "must be defined":
		msg = fmt.Sprintf("variable %s%s was not provided", where, typ)
	case "cannot be null":
		msg = fmt.Sprintf("variable %s%s cannot be null", where, typ)
	default:
		msg = fmt.Sprintf("variable %s%s: %s", where, typ, err.Message)
	}
	// The path named the variable, not a field of the response (what a path means in
	// GraphQL): the message says it now.
	return &gqlerror.Error{Message: msg, Locations: err.Locations, Extensions: err.Extensions}
}

// variableType is the type at path (the variable's name, then input fields and list
// indexes) in the current operation's variable definitions; nil when unknown.
func variableType(ctx context.Context, schema *ast.Schema, path ast.Path) *ast.Type {
	if !graphql.HasOperationContext(ctx) {
		return nil
	}
	op := graphql.GetOperationContext(ctx).Operation
	name, _ := path[0].(ast.PathName)
	if op == nil || schema == nil {
		return nil
	}
	def := op.VariableDefinitions.ForName(string(name))
	if def == nil {
		return nil
	}
	t := def.Type
	for _, el := range path[1:] {
		switch el := el.(type) {
		case ast.PathIndex:
			if t.Elem == nil {
				return nil
			}
			t = t.Elem
		case ast.PathName:
			in := schema.Types[t.Name()]
			if in == nil {
				return nil
			}
			f := in.Fields.ForName(strings.TrimSpace(string(el)))
			if f == nil {
				return nil
			}
			t = f.Type
		}
	}
	return t
}
