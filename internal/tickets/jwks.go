package tickets

import (
	"encoding/json"
	"net/http"
)

// JWKSPath is where the published keys are served.
const JWKSPath = "/.well-known/ticket-keys"

// JWKSHandler serves GET JWKSPath: the published keys as a JWK Set (RFC 7517), to anyone
// (they are public keys), cacheable for a minute. A scanner fetches it before the doors
// open and again when it meets a kid it does not know.
func (s *Service) JWKSHandler() http.Handler {
	type jwk struct {
		Kty string `json:"kty"`
		Crv string `json:"crv"`
		X   string `json:"x"`
		Kid string `json:"kid"`
		Use string `json:"use"`
		Alg string `json:"alg"`
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys, err := s.Keys.Published(r.Context())
		if err != nil {
			s.log().Warn("tickets: publish keys", "err", err)
			http.Error(w, "ticket keys are unavailable, try again shortly", http.StatusServiceUnavailable)
			return
		}
		set := struct {
			Keys []jwk `json:"keys"`
		}{Keys: make([]jwk, len(keys))}
		for i, k := range keys {
			set.Keys[i] = jwk{Kty: k.Kty, Crv: k.Crv, X: k.X, Kid: k.Kid, Use: k.Use, Alg: k.Alg}
		}
		h := w.Header()
		h.Set("Content-Type", "application/jwk-set+json")
		h.Set("Cache-Control", "public, max-age=60")
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("X-Content-Type-Options", "nosniff")
		_ = json.NewEncoder(w).Encode(set)
	})
}
