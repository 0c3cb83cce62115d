package httpapi

import (
	"net/http"
	"slices"
	"strings"
)

// corsHeaders are the request headers allowed when a preflight does not list its own:
// what browsers' GraphQL clients send (Apollo's client name and version, tracing).
const corsHeaders = "Authorization, Content-Type, Accept, apollographql-client-name, apollographql-client-version, " +
	"traceparent, tracestate, baggage, sentry-trace"

// cors lets the configured browser origins call the API ("*" = any origin). A preflight
// from an allowed origin gets the request headers it asks for (Access-Control-Request-
// Headers): the API reads only Authorization and the GraphQL ones, so any other header a
// client library adds (tracing, client names) is harmless; it may be cached for two hours.
func (a *API) cors(next http.Handler) http.Handler {
	origins := a.AllowedOrigins
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		h := w.Header()
		h.Add("Vary", "Origin")
		if origin != "" && (slices.Contains(origins, "*") || slices.Contains(origins, origin)) {
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Expose-Headers", "ETag, Retry-After, X-Response-Cache, traceresponse")
			if r.Method == http.MethodOptions {
				h.Add("Vary", "Access-Control-Request-Headers")
				allowed := corsHeaders
				if asked := r.Header.Get("Access-Control-Request-Headers"); asked != "" && validHeaderList(asked) {
					allowed = asked
				}
				h.Set("Access-Control-Allow-Headers", allowed)
				h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
				h.Set("Access-Control-Max-Age", "7200")
			}
		}
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// validHeaderList reports whether s is a short comma-separated list of header names.
func validHeaderList(s string) bool {
	if len(s) > 1024 {
		return false
	}
	for name := range strings.SplitSeq(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			return false
		}
		for _, c := range name {
			if !(c == '-' || c == '_' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
				return false
			}
		}
	}
	return true
}
