package graph

import (
	"maps"

	"github.com/99designs/gqlgen/graphql"
)

// unserved are the prelude's directives of incremental delivery. This server answers
// every operation in one response: a deferred fragment would come back as a silent null.
var unserved = []string{"defer", "stream"}

// NewServedSchema is the executable schema the API serves: the generated one over r,
// given (through gqlgen's Config.Schema) a copy of the parsed schema without @defer and
// @stream. The schema then does not declare them: introspection does not list them, so
// clients do not send them, and a document that uses one fails validation ("Unknown
// directive", GRAPHQL_VALIDATION_FAILED) before anything runs.
func NewServedSchema(r *Resolver) graphql.ExecutableSchema {
	parsed := NewExecutableSchema(Config{}).Schema()
	served := *parsed
	served.Directives = maps.Clone(parsed.Directives)
	for _, name := range unserved {
		delete(served.Directives, name)
	}
	return NewExecutableSchema(Config{Resolvers: r, Schema: &served})
}
