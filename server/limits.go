package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/redis/go-redis/v9"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"seatflow"
	"seatflow/graph"
	"seatflow/internal/auth"
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
	c.Query.Movies = func(child int, first *int, _ *string, _ *string) int {
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

// apqCache keeps automatic persisted queries in Redis for a day, shared by every instance.
type apqCache struct {
	rdb    redis.UniversalClient
	prefix string
}

const apqTTL = 24 * time.Hour

func (c apqCache) Get(ctx context.Context, key string) (string, bool) {
	s, err := c.rdb.Get(ctx, c.prefix+key).Result()
	return s, err == nil
}

func (c apqCache) Add(ctx context.Context, key string, value string) {
	c.rdb.Set(ctx, c.prefix+key, value, apqTTL)
}

// writeError answers a request refused before GraphQL runs, in GraphQL's error format.
func writeError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]any{
		{"message": message, "extensions": map[string]any{"code": code}},
	}})
}

// guardHTTP applies what must hold before a request reaches GraphQL: the body size limit,
// a write deadline for plain requests (websockets live long and keep their own keep-alives),
// and refusal of a bearer token that is present but invalid.
func (a *App) guardHTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "" {
			_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(a.Config.WriteTimeout))
			if r.ContentLength > a.Config.MaxBodyBytes {
				writeError(w, http.StatusRequestEntityTooLarge, seatflow.EINVALID,
					fmt.Sprintf("request body is larger than %d bytes", a.Config.MaxBodyBytes))
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, a.Config.MaxBodyBytes)
		}
		if err := auth.TokenError(r.Context()); err != nil {
			writeError(w, http.StatusUnauthorized, seatflow.ErrorCode(err), seatflow.ErrorMessage(err))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// cors lets the configured browser origins call the API ("*" = any origin).
func (a *App) cors(next http.Handler) http.Handler {
	origins := a.allowedOrigins()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin != "" && (slices.Contains(origins, "*") || slices.Contains(origins, origin)) {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept")
			h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
			h.Set("Access-Control-Max-Age", "600")
		}
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// allowedOrigins is the origin list of CORS and the websocket origin check: any origin in
// embedded mode unless configured, else only the configured ones.
func (a *App) allowedOrigins() []string {
	var out []string
	for _, o := range strings.Split(a.Config.AllowedOrigins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			out = append(out, o)
		}
	}
	if len(out) == 0 && a.Config.Embedded() {
		out = []string{"*"}
	}
	return out
}
