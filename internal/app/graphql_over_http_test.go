package app

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// Tests of the GraphQL-over-HTTP rules that graphql-http's audit (clients/, make clients)
// checks or that clients rely on, through the real server.

// TestMalformedRequestsAre400: a request that is not a well-formed GraphQL-over-HTTP
// request (no document and no persisted query's hash, a parameter of the wrong type) is
// answered 400 BAD_REQUEST naming the parameter, whichever media type the client accepts;
// a hash alone is well-formed.
func TestMalformedRequestsAre400(t *testing.T) {
	a := newTestApp(t)
	const noQuery = `the request has no query parameter: send the document as {"query": "{ __typename }"}`
	cases := []struct {
		name, method, body, query string
		message                   string
	}{
		{"EmptyObject", "POST", `{}`, "", noQuery},
		{"MisspelledQuery", "POST", `{"qeury":"{ __typename }"}`, "", noQuery},
		{"NullQuery", "POST", `{"query":null}`, "", noQuery},
		{"EmptyQuery", "POST", `{"query":""}`, "", noQuery},
		{"QueryNotAString", "POST", `{"query":3}`, "", "the query parameter must be a string"},
		{"OperationNameNotAString", "POST", `{"query":"{ __typename }","operationName":["a"]}`, "", "the operationName parameter must be a string"},
		{"VariablesNotAnObject", "POST", `{"query":"{ __typename }","variables":[1]}`, "", "the variables parameter must be a JSON object"},
		{"ExtensionsNotAnObject", "POST", `{"query":"{ __typename }","extensions":"x"}`, "", "the extensions parameter must be a JSON object"},
		{"GETWithoutQuery", "GET", "", "operationName=A", noQuery},
	}
	for _, accept := range []string{"application/json", "application/graphql-response+json"} {
		for _, c := range cases {
			t.Run(c.name+"/"+accept, func(t *testing.T) {
				contentType := "application/json"
				if c.method == "GET" {
					contentType = ""
				}
				status, ct, body := a.post(c.method, "/query?"+c.query, contentType, accept, []byte(c.body))
				var resp gqlResponse
				if err := json.Unmarshal(body, &resp); err != nil {
					t.Fatalf("body %q: %v", body, err)
				}
				if status != http.StatusBadRequest || ct != accept || resp.Code() != "BAD_REQUEST" || len(resp.Errors) != 1 || resp.Errors[0].Message != c.message {
					t.Fatalf("got %d %s %s, want 400 %s BAD_REQUEST %q", status, ct, body, accept, c.message)
				}
			})
		}
	}
	t.Run("PersistedHashAloneIsWellFormed", func(t *testing.T) {
		ext := `{"persistedQuery":{"version":1,"sha256Hash":"` + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" + `"}}`
		status, _, body := a.post("POST", "/query", "application/json", "application/json", []byte(`{"extensions":`+ext+`}`))
		var resp gqlResponse
		_ = json.Unmarshal(body, &resp)
		if status != http.StatusOK || resp.Code() != "PERSISTED_QUERY_NOT_FOUND" {
			t.Fatalf("POST: got %d %s, want 200 PERSISTED_QUERY_NOT_FOUND", status, body)
		}
		status, _, body = a.post("GET", "/query?"+url.Values{"extensions": {ext}}.Encode(), "", "", nil)
		if err := json.Unmarshal(body, &resp); err != nil || status != http.StatusOK || resp.Code() != "PERSISTED_QUERY_NOT_FOUND" {
			t.Fatalf("GET: got %d %s, want 200 PERSISTED_QUERY_NOT_FOUND", status, body)
		}
	})
}

// TestRefusalsHaveNoData: an answer to a request refused before execution (not
// well-formed, wrong method or media type, too long, a document that does not parse or
// validate, variables that do not coerce) has no data entry, whichever media type; an
// operation that ran has one, even when it is null.
func TestRefusalsHaveNoData(t *testing.T) {
	a := newTestApp(t, "-max-url-bytes", "512")
	get := func(q string) string { return "/query?" + url.Values{"query": {q}}.Encode() }
	cases := []struct {
		name, method, path, contentType, body string
		hasData                               bool
	}{
		{"NotWellFormed", "POST", "/query", "application/json", `{}`, false},
		{"BodyNotJSON", "POST", "/query", "application/json", `{"query":`, false},
		{"NotJSONMediaType", "POST", "/query", "text/plain", `{"query":"{ __typename }"}`, false},
		{"OtherMethod", "PUT", "/query", "application/json", `{"query":"{ __typename }"}`, false},
		{"MutationOverGET", "GET", get(`mutation { runReconcile { startedAt } }`), "", "", false},
		{"LongGET", "GET", get("{ __typename" + strings.Repeat(" ", 600) + "}"), "", "", false},
		{"ParseError", "POST", "/query", "application/json", `{"query":"{ movies("}`, false},
		{"ValidationError", "POST", "/query", "application/json", `{"query":"{ nope }"}`, false},
		{"VariableMissing", "POST", "/query", "application/json", `{"query":"query($id: ID!) { movie(id: $id) { id } }"}`, false},
		{"ExecutionError", "POST", "/query", "application/json", `{"query":"{ myOrders { id } }"}`, true},
		{"Success", "GET", get(`{ __typename }`), "", "", true},
	}
	for _, accept := range []string{"application/json", "application/graphql-response+json"} {
		for _, c := range cases {
			t.Run(c.name+"/"+accept, func(t *testing.T) {
				status, ct, body := a.post(c.method, c.path, c.contentType, accept, []byte(c.body))
				var resp map[string]json.RawMessage
				if err := json.Unmarshal(body, &resp); err != nil || ct != accept {
					t.Fatalf("%d %s body %q: %v", status, ct, body, err)
				}
				if _, ok := resp["data"]; ok != c.hasData {
					t.Fatalf("status %d, data entry present = %v, want %v: %s", status, ok, c.hasData, body)
				}
				if !c.hasData && (len(resp["errors"]) == 0 || status == http.StatusOK && accept != "application/json") {
					t.Fatalf("a refusal: status %d, body %s", status, body)
				}
			})
		}
	}
}

// TestAcceptNegotiation: the answer's media type is the one the client's Accept prefers,
// by q-value (the first listed among equals); application/json when Accept names neither.
func TestAcceptNegotiation(t *testing.T) {
	a := newTestApp(t)
	const gqlResp, js = "application/graphql-response+json", "application/json"
	cases := []struct{ accept, want string }{
		{"", js},
		{"*/*", js},
		{"text/html", js},
		{gqlResp, gqlResp},
		{gqlResp + ", " + js, gqlResp},
		{js + ", " + gqlResp, js},
		{gqlResp + ", " + js + ";q=0.9", gqlResp}, // Apollo Client 4, graphql-http's client
		{gqlResp + ";q=0.5, " + js, js},
		{js + ";q=0.1, " + gqlResp + ";q=0.2", gqlResp},
		{gqlResp + ";q=0, */*", js},
		{"text/html, " + gqlResp + ";q=0.8", gqlResp},
		{gqlResp + "; charset=utf-8", gqlResp},
		{gqlResp + ";q=nope, " + js + ";q=0.3", js},
	}
	for _, c := range cases {
		t.Run(c.accept, func(t *testing.T) {
			// A validation error: its status tells the media type apart too.
			status, ct, body := a.post("POST", "/query", "application/json", c.accept, []byte(`{"query":"{ nope }"}`))
			wantStatus := http.StatusOK
			if c.want == gqlResp {
				wantStatus = http.StatusBadRequest
			}
			if ct != c.want || status != wantStatus {
				t.Fatalf("Accept %q: got %d %s, want %d %s (%s)", c.accept, status, ct, wantStatus, c.want, body)
			}
		})
	}
}

// TestErrorsBeforeGraphQLNegotiate: what the HTTP layer refuses before GraphQL reads the
// request (a bad token, a body too large, whether its length is declared or not) is
// answered in the media type the client accepts, with its code and no data entry.
func TestErrorsBeforeGraphQLNegotiate(t *testing.T) {
	a := newTestApp(t, "-max-body-bytes", "1024")
	large := `{"query":"{ __typename }","variables":{"pad":"` + strings.Repeat("x", 2000) + `"}}`
	cases := []struct {
		name, auth string
		body       func() io.Reader
		status     int
		code, msg  string
	}{
		{"BadToken", "Bearer not-a-token", func() io.Reader { return strings.NewReader(`{"query":"{ __typename }"}`) }, 401, "UNAUTHENTICATED", ""},
		{"BodyTooLarge", "", func() io.Reader { return strings.NewReader(large) }, 413, "BAD_REQUEST", "request body is larger than 1024 bytes"},
		// No Content-Length: the limit is met while reading.
		{"ChunkedBodyTooLarge", "", func() io.Reader { return io.MultiReader(strings.NewReader(large)) }, 413, "BAD_REQUEST", "request body is larger than 1024 bytes"},
	}
	for _, accept := range []string{"application/json", "application/graphql-response+json"} {
		for _, c := range cases {
			t.Run(c.name+"/"+accept, func(t *testing.T) {
				req, _ := http.NewRequest("POST", a.srv.URL+"/query", c.body())
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", accept)
				if c.auth != "" {
					req.Header.Set("Authorization", c.auth)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				raw, _ := io.ReadAll(resp.Body)
				var body map[string]json.RawMessage
				var out gqlResponse
				if json.Unmarshal(raw, &body) != nil || json.Unmarshal(raw, &out) != nil {
					t.Fatalf("not JSON: %s", raw)
				}
				if resp.StatusCode != c.status || resp.Header.Get("Content-Type") != accept || out.Code() != c.code {
					t.Fatalf("got %d %s %s, want %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), raw, c.status, accept, c.code)
				}
				if _, ok := body["data"]; ok || c.msg != "" && out.Errors[0].Message != c.msg {
					t.Fatalf("body %s: want no data entry and the message %q", raw, c.msg)
				}
			})
		}
	}
}
