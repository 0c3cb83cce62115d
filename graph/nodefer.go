package graph

// The GraphQL prelude declares @defer, which this server does not serve incrementally:
// left in the schema, a deferred fragment would come back as a silent null. Without it,
// a document using @defer fails validation ("Unknown directive") and clients that ask
// introspection for it do not send it. Removed at start, before any request.
func init() { delete(parsedSchema.Directives, "defer") }
