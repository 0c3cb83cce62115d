package wstransport

import (
	"net/http"
	"net/url"
	"strings"
)

// authorization finds the Authorization entry of a connection_init payload, whatever
// the case of its key. An empty string counts as no token.
func authorization(payload map[string]any) (any, bool) {
	for k, v := range payload {
		if strings.EqualFold(k, "Authorization") {
			if s, ok := v.(string); ok && strings.TrimSpace(s) == "" {
				return nil, false
			}
			return v, v != nil
		}
	}
	return nil, false
}

// bearerToken extracts the token of "Bearer <token>" (scheme case-insensitive).
func bearerToken(v any) (string, bool) {
	s, _ := v.(string)
	scheme, token, ok := strings.Cut(strings.TrimSpace(s), " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "Bearer") && token != ""
}

// originChecker allows requests without an Origin header, any origin when allowed
// contains "*", the listed origins, and with an empty list the same origin only.
func originChecker(allowed []string) func(*http.Request) bool {
	anyOrigin := false
	set := map[string]bool{}
	for _, o := range allowed {
		o = strings.TrimRight(strings.TrimSpace(o), "/")
		if o == "*" {
			anyOrigin = true
		} else if o != "" {
			set[strings.ToLower(o)] = true
		}
	}
	return func(r *http.Request) bool {
		origin := r.Header.Get("Origin")
		if origin == "" || anyOrigin {
			return true
		}
		if len(set) > 0 {
			return set[strings.ToLower(origin)]
		}
		u, err := url.Parse(origin)
		return err == nil && strings.EqualFold(u.Host, r.Host)
	}
}
