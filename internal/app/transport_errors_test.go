package app

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
)

// TestTransportErrorsCarryCodes: every request refused by the HTTP transport, before
// GraphQL runs, says why with an extensions.code, through the real server.
func TestTransportErrorsCarryCodes(t *testing.T) {
	a := newTestApp(t)
	mutationOverGET := url.Values{"query": {`mutation { runReconcile { startedAt } }`}}.Encode()
	cases := []struct {
		name, method, path, contentType, body string
		status                                int
		code, message                         string
	}{
		{"PostWithoutContentType", "POST", "/query", "", `{"query":"{ __typename }"}`,
			415, "UNSUPPORTED_MEDIA_TYPE", "POST requests must have Content-Type: application/json (got none)"},
		{"PostTextPlain", "POST", "/query", "text/plain", `{"query":"{ __typename }"}`,
			415, "UNSUPPORTED_MEDIA_TYPE", "POST requests must have Content-Type: application/json (got text/plain)"},
		{"PostForm", "POST", "/query", "application/x-www-form-urlencoded", `query=x`,
			415, "UNSUPPORTED_MEDIA_TYPE", "POST requests must have Content-Type: application/json (got application/x-www-form-urlencoded)"},
		{"BodyNotJSON", "POST", "/query", "application/json", `query { movies }`,
			400, "BAD_REQUEST", `the request body must be a JSON object such as {"query": "{ __typename }", "variables": {}}`},
		{"BodyNotAnObject", "POST", "/query", "application/json", `["{ __typename }"]`,
			400, "BAD_REQUEST", `the request body must be a JSON object such as {"query": "{ __typename }", "variables": {}}`},
		{"VariablesNotJSON", "GET", "/query?query=%7B__typename%7D&variables=%7Bnope", "", "",
			400, "BAD_REQUEST", "the variables parameter must be a JSON object"},
		// encoding/json reads the first value of a body and lets the last of two equal names
		// win: a proxy reading it otherwise (the first "query", the second object) would
		// check another request than the one that runs.
		{"BodyWithTrailingGarbage", "POST", "/query", "application/json", `{"query":"{ __typename }"} garbage`,
			400, "BAD_REQUEST", "the request body must be one JSON object with nothing after it"},
		{"BodyWithASecondObject", "POST", "/query", "application/json", `{"query":"{ __typename }"}{"query":"mutation { runReconcile { startedAt } }"}`,
			400, "BAD_REQUEST", "the request body must be one JSON object with nothing after it"},
		{"BodyWithTheQueryTwice", "POST", "/query", "application/json", `{"query":"mutation { runReconcile { startedAt } }","query":"{ __typename }"}`,
			400, "BAD_REQUEST", "the request body repeats a member name: each may appear once in an object"},
		{"BodyWithAVariableTwice", "POST", "/query", "application/json", `{"query":"query($n: Int!) { bestSeats(showtimeId: \"x\", count: $n) { id } }","variables":{"n":1,"n":2}}`,
			400, "BAD_REQUEST", "the request body repeats a member name: each may appear once in an object"},
		{"VariablesWithTrailingGarbage", "GET", "/query?query=%7B__typename%7D&variables=" + url.QueryEscape(`{"a":1} x`), "", "",
			400, "BAD_REQUEST", "the variables parameter must be one JSON object with nothing after it"},
		{"ExtensionsWithAMemberTwice", "GET", "/query?query=%7B__typename%7D&extensions=" + url.QueryEscape(`{"a":1,"a":2}`), "", "",
			400, "BAD_REQUEST", "the extensions parameter repeats a member name: each may appear once in an object"},
		{"OtherMethod", "PUT", "/query", "application/json", `{"query":"{ __typename }"}`,
			405, "METHOD_NOT_ALLOWED", "method PUT is not allowed: use POST (or GET for queries)"},
		{"MutationOverGET", "GET", "/query?" + mutationOverGET, "", "",
			405, "METHOD_NOT_ALLOWED", "GET requests only allow query operations: send mutations with POST"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, ct, body := a.post(c.method, c.path, c.contentType, "", []byte(c.body))
			var resp gqlResponse
			if err := json.Unmarshal(body, &resp); err != nil || ct != "application/json" {
				t.Fatalf("%s body %q: %v", ct, body, err)
			}
			if status != c.status || resp.Code() != c.code || len(resp.Errors) != 1 || resp.Errors[0].Message != c.message {
				t.Fatalf("got %d %q %+v, want %d %q %q", status, resp.Code(), resp.Errors, c.status, c.code, c.message)
			}
		})
	}
	t.Run("UpgradeThatIsNotAWebsocket", func(t *testing.T) {
		status, _, body := a.request("GET", "/query", nil, http.Header{"Upgrade": {"h2c"}, "Connection": {"Upgrade"}})
		r := decode(t, body)
		if status != http.StatusBadRequest || r.Code() != "BAD_REQUEST" {
			t.Fatalf("h2c upgrade: %d %s", status, body)
		}
	})
	t.Run("AllowHeaderOn405", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodDelete, a.srv.URL+"/query", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, POST, OPTIONS" {
			t.Fatalf("DELETE: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
		}
	})
}

// TestVariableErrorsReadAsSentences: the variables' coercion errors name the variable, its
// type and what is wrong, instead of gqlparser's bare "must be defined".
func TestVariableErrorsReadAsSentences(t *testing.T) {
	a := newTestApp(t)
	const movie = `query($id: ID!) { movie(id: $id) { id } }`
	const create = `mutation($in: MovieInput!) { createMovie(input: $in) { id } }`
	const hall = `mutation($in: HallInput!) { createHall(input: $in) { id } }`
	cases := []struct {
		name, query string
		vars        map[string]any
		want        string
	}{
		{"Missing", movie, nil, "variable $id of type ID! was not provided"},
		{"Null", movie, map[string]any{"id": nil}, "variable $id of type ID! cannot be null"},
		{"MissingField", create, map[string]any{"in": map[string]any{"durationMinutes": 90}},
			"variable $in.title of type String! was not provided"},
		{"UnknownField", create, map[string]any{"in": map[string]any{"title": "x", "durationMinutes": 90, "colour": "red"}},
			"variable $in.colour: unknown field"},
		{"WrongTypeInList", hall, map[string]any{"in": map[string]any{"name": "x", "rows": []any{map[string]any{"label": "A", "seats": "many"}}}},
			"variable $in.rows[0].seats of type Int!: cannot use string as Int"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := a.do(a.admin, c.query, c.vars)
			if len(r.Errors) != 1 || r.Errors[0].Message != c.want || r.Code() != "GRAPHQL_VALIDATION_FAILED" {
				t.Fatalf("errors %+v, want one GRAPHQL_VALIDATION_FAILED %q", r.Errors, c.want)
			}
			if r.Errors[0].Path != nil {
				t.Errorf("path %v: a path names a field of the response, not a variable", r.Errors[0].Path)
			}
		})
	}
}
