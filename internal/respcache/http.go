package respcache

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"seatflow/internal/cache"
)

// pending is what the middleware and the GraphQL extension share about one request: its
// key, the store's generation before the first cache read, the trace of the catalog keys
// read, and what the extension found.
type pending struct {
	key         string
	gen         uint64
	trace       cache.Trace
	shareable   bool // an anonymous GET: its answer may be cached by browsers and CDNs
	catalogOnly bool
	// Set by the extension before the answer is written (same goroutine).
	hit    bool
	etag   string // of a shareable catalog answer's data
	maxAge int    // seconds a shareable answer stays fresh; 0: not cacheable
}

type pendingKey struct{}

// Middleware keys each GraphQL request by its bytes for the Extension, which answers it
// from the store when it can and otherwise stores the data of a catalog-only query built
// entirely from local cache copies, with no error. The store sits inside the executor, so
// a hit is still parsed, limited and charged its cost like any query: it saves the
// execution, not the checks. The middleware must sit inside authentication (an invalid
// token is refused before) and outside the GraphQL handler.
func (s *Store) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, ok := requestKey(r)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		p := &pending{key: key, gen: s.generation(), // before the first cache read: a drop after it stops the put
			shareable: r.Method == http.MethodGet && r.Header.Get("Authorization") == ""}
		ctx := cache.WithTrace(context.WithValue(r.Context(), pendingKey{}, p), &p.trace)
		next.ServeHTTP(&answer{ResponseWriter: w, p: p, ifNoneMatch: r.Header.Get("If-None-Match")}, r.WithContext(ctx))
	})
}

// requestKey identifies a request by everything its response can depend on once the
// caller is authenticated: method, Content-Type (gqlgen refuses all but JSON bodies),
// Accept (the response's media type) and the GraphQL request itself (query, operation
// name, variables, extensions), byte for byte.
func requestKey(r *http.Request) (string, bool) {
	if r.Header.Get("Upgrade") != "" {
		return "", false
	}
	var req string
	switch r.Method {
	case http.MethodGet:
		req = r.URL.RawQuery
	case http.MethodPost:
		body, err := io.ReadAll(r.Body)
		// gqlgen reads the body again: the bytes read, then the read error, if any.
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), errReader{err}), r.Body}
		if err != nil {
			return "", false
		}
		req = string(body)
	default:
		return "", false
	}
	return r.Method + "\n" + r.Header.Get("Content-Type") + "\n" + r.Header.Get("Accept") + "\n" + req, true
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return 0, io.EOF
}

// Extension is the gqlgen side of the store: once an operation is parsed and validated, it
// tells the middleware whether every field the operation selects is catalog data.
func (s *Store) Extension() graphql.HandlerExtension { return extension{s} }

type extension struct{ s *Store }

var _ interface {
	graphql.OperationContextMutator
	graphql.ResponseInterceptor
} = extension{}

func (extension) ExtensionName() string { return "ResponseCache" }

// Validate learns the catalog fields from the schema: the field definitions carrying the
// @catalog directive. gqlgen calls it once, when the extension is added, before any request.
func (e extension) Validate(es graphql.ExecutableSchema) error {
	for _, def := range es.Schema().Types {
		for _, f := range def.Fields {
			if f.Directives.ForName(CatalogDirective) != nil {
				e.s.fields[def.Name+"."+f.Name] = true
			}
		}
	}
	if len(e.s.fields) == 0 {
		return fmt.Errorf("response cache: the schema marks no field @%s", CatalogDirective)
	}
	return nil
}

// CatalogDirective marks, in the schema, the fields whose values come from the catalog
// cache alone.
const CatalogDirective = "catalog"

func (e extension) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	p, _ := ctx.Value(pendingKey{}).(*pending)
	if p != nil && oc.Operation != nil && oc.Operation.Operation == ast.Query {
		p.catalogOnly = e.s.catalogOnly(oc.Operation.SelectionSet)
	}
	return nil
}

// InterceptResponse answers a catalog-only query from the store, or runs it and keeps its
// data when every catalog value it read came from the local cache level and nothing failed.
func (e extension) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	p, _ := ctx.Value(pendingKey{}).(*pending)
	if p == nil || !p.catalogOnly {
		return next(ctx)
	}
	s := e.s
	if e, ok := s.get(p.key); ok {
		s.hits.Add(1)
		lookupHit.Inc()
		p.hit = true
		p.fresh(e.etag, e.until, s.now.Now())
		return &graphql.Response{Data: e.data}
	}
	resp := next(ctx)
	until, fromLocal := p.trace.Until()
	if resp == nil || len(resp.Errors) > 0 || !fromLocal {
		s.skipped.Add(1)
		lookupSkipped.Inc()
		return resp
	}
	stored := &entry{data: resp.Data, etag: etagOf(resp.Data), tags: p.trace.Keys(), until: until}
	p.fresh(stored.etag, until, s.now.Now())
	if s.put(p.key, p.gen, stored) {
		s.misses.Add(1)
		lookupMiss.Inc()
	} else {
		s.skipped.Add(1)
		lookupSkipped.Inc()
	}
	return resp
}

// catalogOnly reports whether every field selected in set (fragments followed) is one of
// the store's catalog fields.
func (s *Store) catalogOnly(set ast.SelectionSet) bool {
	for _, sel := range set {
		switch x := sel.(type) {
		case *ast.Field:
			if x.Name == "__typename" {
				continue
			}
			if x.ObjectDefinition == nil || !s.fields[x.ObjectDefinition.Name+"."+x.Name] || !s.catalogOnly(x.SelectionSet) {
				return false
			}
		case *ast.InlineFragment:
			if !s.catalogOnly(x.SelectionSet) {
				return false
			}
		case *ast.FragmentSpread:
			if x.Definition == nil || !s.catalogOnly(x.Definition.SelectionSet) {
				return false
			}
		default:
			return false
		}
	}
	return true
}
