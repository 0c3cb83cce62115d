package respcache

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"seatflow/internal/cache"
)

// pending is what the GraphQL executor tells the middleware about a request it runs.
type pending struct{ catalogOnly atomic.Bool }

type pendingKey struct{}

// Middleware answers a request from the store when it can, and otherwise runs next and
// stores the response if the request was a catalog-only query (Extension says so) built
// entirely from local cache copies, with no error. It must sit inside authentication (an
// invalid token is refused before) and outside the GraphQL handler.
func (s *Store) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, ok := requestKey(r)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		if e, ok := s.get(key); ok {
			s.hits.Add(1)
			lookupHit.Inc()
			w.Header().Set("Content-Type", e.contentType)
			w.Header().Set("X-Response-Cache", "hit")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(e.body)
			return
		}
		p := &pending{}
		trace := &cache.Trace{}
		gen := s.generation() // before the first cache read: a drop after it stops the put
		ctx := cache.WithTrace(context.WithValue(r.Context(), pendingKey{}, p), trace)
		c := &capture{ResponseWriter: w, p: p}
		next.ServeHTTP(c, r.WithContext(ctx))
		if !p.catalogOnly.Load() {
			return
		}
		until, fromLocal := trace.Until()
		if fromLocal && c.status == http.StatusOK && !c.over && !bytes.Contains(c.buf.Bytes(), []byte(`"errors"`)) &&
			s.put(key, gen, &entry{body: c.buf.Bytes(), contentType: c.Header().Get("Content-Type"), tags: trace.Keys(), until: until}) {
			s.misses.Add(1)
			lookupMiss.Inc()
			return
		}
		s.skipped.Add(1)
		lookupSkipped.Inc()
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

// capture passes a response through and keeps a copy of up to maxEntry bytes, only of a
// catalog-only query's: the operation is known to be one before its response is written.
type capture struct {
	http.ResponseWriter
	p      *pending
	status int
	buf    bytes.Buffer
	over   bool
}

func (c *capture) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *capture) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	if !c.over && c.p.catalogOnly.Load() {
		if c.buf.Len()+len(p) > maxEntry {
			c.over = true
			c.buf = bytes.Buffer{}
		} else {
			c.buf.Write(p)
		}
	}
	return c.ResponseWriter.Write(p)
}

func (c *capture) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// Extension is the gqlgen side of the store: once an operation is parsed and validated, it
// tells the middleware whether every field the operation selects is catalog data.
func (s *Store) Extension() graphql.HandlerExtension { return extension{s} }

type extension struct{ s *Store }

var _ graphql.OperationContextMutator = extension{}

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
		p.catalogOnly.Store(e.s.catalogOnly(oc.Operation.SelectionSet))
	}
	return nil
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
