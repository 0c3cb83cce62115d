package app

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"seatflow/internal/nodeid"
)

func TestAuthEdges(t *testing.T) {
	a := newTestApp(t)
	secret := []byte(a.Config.JWTSecret)
	sign := func(method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
		tok, err := jwt.NewWithClaims(method, claims).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	now := time.Now()
	valid := func() jwt.MapClaims {
		return jwt.MapClaims{"sub": "alice", "role": "customer", "exp": now.Add(time.Hour).Unix(), "nbf": now.Add(-time.Minute).Unix()}
	}
	with := func(k string, v any) jwt.MapClaims {
		c := valid()
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	cases := []struct{ name, token string }{
		{"AlgNone", sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, valid())},
		{"WrongSecret", sign(jwt.SigningMethodHS256, []byte("another-secret-entirely"), valid())},
		{"HS512", sign(jwt.SigningMethodHS512, secret, valid())},
		{"Expired", sign(jwt.SigningMethodHS256, secret, with("exp", now.Add(-time.Minute).Unix()))},
		{"NoExpiry", sign(jwt.SigningMethodHS256, secret, with("exp", nil))},
		{"NotYetValid", sign(jwt.SigningMethodHS256, secret, with("nbf", now.Add(time.Hour).Unix()))},
		{"NoSubject", sign(jwt.SigningMethodHS256, secret, with("sub", nil))},
		{"UnknownRole", sign(jwt.SigningMethodHS256, secret, with("role", "superuser"))},
		{"Garbage", "a.b.c"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := a.do(c.token, `{ myOrders { id } }`, nil)
			if r.Code() != "UNAUTHENTICATED" || r.Status != http.StatusUnauthorized {
				t.Fatalf("code %q status %d, want UNAUTHENTICATED 401 (%+v)", r.Code(), r.Status, r.Errors)
			}
			if strings.Contains(r.Errors[0].Message, c.token) {
				t.Fatal("the error echoes the token")
			}
		})
	}
	t.Run("ValidTokenAccepted", func(t *testing.T) {
		a.must(sign(jwt.SigningMethodHS256, secret, valid()), `{ myOrders { id } }`, nil, nil)
	})
	t.Run("CustomerNeverReachesAdmin", func(t *testing.T) {
		a.wantCode(sign(jwt.SigningMethodHS256, secret, valid()), `mutation { runReconcile { startedAt } }`, nil, "FORBIDDEN")
	})
}

// TestOrdersOfOthersAreInvisible: user B tries every order operation on A's order; each is
// NOT_FOUND, as for an id that does not exist, and A's order is unchanged.
func TestOrdersOfOthersAreInvisible(t *testing.T) {
	a := newTestApp(t)
	alice, bob := a.token("alice", "customer"), a.token("bob", "customer")
	show, seats := a.onSaleShowtime()
	o := a.hold(alice, show, seats[:2], "k")
	ops := []string{
		`query($id: ID!) { order(id: $id) { id } }`,
		`mutation($id: ID!) { payOrder(orderId: $id, paymentRef: "stolen") { id } }`,
		`mutation($id: ID!) { cancelOrder(orderId: $id) { id } }`,
		`mutation($id: ID!) { extendHold(orderId: $id) { id } }`,
	}
	for _, q := range ops {
		theirs := a.wantCode(bob, q, map[string]any{"id": o.ID}, "NOT_FOUND")
		missing := a.wantCode(bob, q, map[string]any{"id": nodeid.Encode(nodeid.Order, 987654321)}, "NOT_FOUND")
		if theirs.Errors[0].Message != missing.Errors[0].Message {
			t.Fatalf("someone else's order (%q) reads differently from a missing one (%q)", theirs.Errors[0].Message, missing.Errors[0].Message)
		}
	}
	var out struct {
		Order struct{ Status, ExpiresAt string }
	}
	a.must(alice, `query($id: ID!) { order(id: $id) { status expiresAt } }`, map[string]any{"id": o.ID}, &out)
	if out.Order.Status != "PENDING_PAYMENT" || out.Order.ExpiresAt != o.ExpiresAt {
		t.Fatalf("alice's order changed: %+v (was %s)", out.Order, o.ExpiresAt)
	}
}

func TestQueryLimits(t *testing.T) {
	a := newTestApp(t, "-complexity-limit", "300", "-max-depth", "4", "-max-tokens", "200", "-max-body-bytes", "8192")
	cases := []struct{ name, query, code string }{
		{"Complexity", `{ showtimes(date: "2030-01-01") { id hall { seats { id } } } }`, "COMPLEXITY_LIMIT_EXCEEDED"},
		{"Depth", `{ movies { edges { node { showtimes { hall { name } } } } } }`, "DEPTH_LIMIT_EXCEEDED"},
		{"DepthThroughFragments", `fragment F on Showtime { hall { name } } { movies { edges { node { showtimes { ...F } } } } }`, "DEPTH_LIMIT_EXCEEDED"},
		{"Tokens", "{ " + strings.Repeat("__typename ", 250) + "}", "GRAPHQL_PARSE_FAILED"},
		{"MaxFirst", `{ movies(first: 101) { totalCount } }`, "BAD_USER_INPUT"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := a.wantCode("", c.query, nil, c.code)
			if len(r.Data) > 0 && string(r.Data) != "null" {
				t.Fatalf("a refused query returned data: %s", r.Data)
			}
		})
	}
	t.Run("BodySize", func(t *testing.T) {
		body := `{"query":"{ __typename }","variables":{"pad":"` + strings.Repeat("x", 10000) + `"}}`
		resp, err := http.Post(a.srv.URL+"/query", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("status = %d, want 413", resp.StatusCode)
		}
	})
	t.Run("HoldRate", func(t *testing.T) {
		b := newTestApp(t, "-holds-per-minute", "3")
		show, seats := b.onSaleShowtime()
		tok := b.token("sweeper", "customer")
		var last *gqlResponse
		for i := 0; i < 4; i++ {
			last = b.do(tok, holdQ, holdVars(show, []string{seats[i*2]}, "sweep-"+string(rune('a'+i))))
		}
		if last.Code() != "RATE_LIMITED" {
			t.Fatalf("4th hold in a minute: %q, want RATE_LIMITED", last.Code())
		}
	})
}

// post sends a raw request and returns status, content type and body.
func (a *testApp) post(method, path, contentType, accept string, body []byte) (int, string, []byte) {
	a.t.Helper()
	req, _ := http.NewRequest(method, a.srv.URL+path, bytes.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), b
}

func TestGraphQLOverHTTP(t *testing.T) {
	a := newTestApp(t)
	cases := []struct {
		name, accept, body string
		status             int
		contentType        string
	}{
		{"JSONByDefault", "", `{"query":"{ __typename }"}`, 200, "application/json"},
		{"GraphQLResponseJSONWhenAccepted", "application/graphql-response+json", `{"query":"{ __typename }"}`, 200, "application/graphql-response+json"},
		{"ParseErrorGraphQLResponse", "application/graphql-response+json", `{"query":"{ movies("}`, 400, "application/graphql-response+json"},
		{"ValidationErrorGraphQLResponse", "application/graphql-response+json", `{"query":"{ nope }"}`, 400, "application/graphql-response+json"},
		{"ParseErrorJSON", "application/json", `{"query":"{ movies("}`, 200, "application/json"},
		{"BadJSON", "application/json", `{"query":`, 400, "application/json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, ct, body := a.post("POST", "/query", "application/json", c.accept, []byte(c.body))
			if status != c.status || !strings.HasPrefix(ct, c.contentType) {
				t.Fatalf("status %d %q, want %d %q; body %s", status, ct, c.status, c.contentType, body)
			}
			if !json.Valid(body) {
				t.Fatalf("body is not JSON: %s", body)
			}
		})
	}
	t.Run("MutationOverGETRefused", func(t *testing.T) {
		q := url.Values{"query": {`mutation { createMovie(input: {title: "x", durationMinutes: 1}) { id } }`}}
		status, _, body := a.post("GET", "/query?"+q.Encode(), "", "", nil)
		if status != http.StatusMethodNotAllowed {
			t.Fatalf("status %d, want 405: %s", status, body)
		}
	})
	t.Run("PersistedQueries", func(t *testing.T) {
		query := `{ movies { totalCount } }`
		sum := sha256.Sum256([]byte(query))
		ext := `{"persistedQuery":{"version":1,"sha256Hash":"` + hex.EncodeToString(sum[:]) + `"}}`
		get := func() []byte {
			_, _, body := a.post("GET", "/query?"+url.Values{"extensions": {ext}}.Encode(), "", "", nil)
			return body
		}
		if body := get(); !strings.Contains(string(body), "PersistedQueryNotFound") {
			t.Fatalf("unknown hash: %s", body)
		}
		a.post("POST", "/query", "application/json", "", []byte(`{"query":"`+query+`","extensions":`+ext+`}`))
		if body := get(); !strings.Contains(string(body), `"totalCount":0`) {
			t.Fatalf("hash after registering: %s", body)
		}
		if n, _ := a.Redis.Exists(t.Context(), a.Keys.APQ()+hex.EncodeToString(sum[:])).Result(); n != 1 {
			t.Fatal("the persisted query is not in Redis")
		}
	})
	t.Run("CORS", func(t *testing.T) {
		b := newTestApp(t, "-allowed-origins", "https://tickets.example")
		preflight := func(origin string) http.Header {
			req, _ := http.NewRequest("OPTIONS", b.srv.URL+"/query", nil)
			req.Header.Set("Origin", origin)
			req.Header.Set("Access-Control-Request-Method", "POST")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.Header
		}
		if h := preflight("https://tickets.example"); h.Get("Access-Control-Allow-Origin") != "https://tickets.example" || !strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") {
			t.Fatalf("allowed origin got %v", h)
		}
		if h := preflight("https://evil.example"); h.Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("other origin got %v", h)
		}
	})
	t.Run("IntrospectionCanBeTurnedOff", func(t *testing.T) {
		a.must("", `{ __schema { queryType { name } } }`, nil, nil)
		b := newTestApp(t, "-introspection=false")
		if r := b.do("", `{ __schema { queryType { name } } }`, nil); len(r.Errors) == 0 {
			t.Fatal("introspection answered while turned off")
		}
	})
}
