// Package graph is the GraphQL layer: thin resolvers over the internal services, plus
// gqlgen's generated executor. Rules and multi-step work live in internal/.
package graph

// Resolver is the root resolver: the services the API needs.
type Resolver struct{}
