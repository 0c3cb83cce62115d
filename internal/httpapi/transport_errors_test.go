package httpapi

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"seatflow"
)

// TestRefusedRequests: a request that is not GraphQL over HTTP gets a status and a coded
// error in GraphQL's format, with no data entry, and never an echo of what it sent.
func TestRefusedRequests(t *testing.T) {
	a := newAPI(t, nil)
	get := func(query string, vars string) string {
		v := url.Values{"query": {query}}
		if vars != "" {
			v.Set("variables", vars)
		}
		return "?" + v.Encode()
	}
	cases := []struct {
		name, method, path, contentType, accept, body string
		header                                        http.Header
		status                                        int
		code, message, allow                          string // message: a part of it
	}{
		{name: "PostNotJSON", method: "POST", contentType: "text/plain", body: `{"query":"{ __typename }"}`,
			status: 415, code: seatflow.EUNSUPPORTEDMEDIATYPE, message: "(got text/plain)"},
		{name: "PostWithoutContentType", method: "POST", body: `{"query":"{ __typename }"}`,
			status: 415, code: seatflow.EUNSUPPORTEDMEDIATYPE, message: "(got none)"},
		{name: "PostInvalidMediaTypeNotEchoed", method: "POST", contentType: "text/<script>;;", body: `{}`,
			status: 415, code: seatflow.EUNSUPPORTEDMEDIATYPE, message: "(got an invalid media type)"},
		{name: "Put", method: "PUT", contentType: "application/json", body: `{"query":"{ __typename }"}`,
			status: 405, code: seatflow.EMETHODNOTALLOWED, message: "method PUT is not allowed", allow: "GET, POST, OPTIONS"},
		{name: "Delete", method: "DELETE", status: 405, code: seatflow.EMETHODNOTALLOWED, allow: "GET, POST, OPTIONS"},
		{name: "UpgradeNotAGraphQLWebsocket", method: "GET", header: http.Header{"Upgrade": {"websocket"}, "Connection": {"Upgrade"}},
			status: 400, code: seatflow.EBADREQUEST, message: "websocket handshake refused"},
		{name: "GetMutation", method: "GET", path: get(`mutation { setMovieStatus(id: "x", status: LISTED) { id } }`, ""),
			status: 405, code: seatflow.EMETHODNOTALLOWED, message: "only allow query operations", allow: "POST"},
		{name: "GetVariablesNotJSON", method: "GET", path: get("{ __typename }", "{nope"),
			status: 400, code: seatflow.EBADREQUEST, message: "the variables parameter must be a JSON object"},
		{name: "GetWithoutQuery", method: "GET", path: "?operationName=x", status: 400, code: seatflow.EBADREQUEST, message: "no query parameter"},
		{name: "BodyNotJSON", method: "POST", contentType: "application/json", body: `{"query": <script>`,
			status: 400, code: seatflow.EBADREQUEST, message: "must be a JSON object such as"},
		{name: "QueryNotAString", method: "POST", contentType: "application/json", body: `{"query": 5}`,
			status: 400, code: seatflow.EBADREQUEST, message: "the query parameter must be a string"},
		{name: "VariablesNotAnObject", method: "POST", contentType: "application/json", body: `{"query": "{ __typename }", "variables": [1]}`,
			status: 400, code: seatflow.EBADREQUEST, message: "the variables parameter must be a JSON object"},
		{name: "ExtensionsNotAnObject", method: "POST", contentType: "application/json", body: `{"query": "{ __typename }", "extensions": "x"}`,
			status: 400, code: seatflow.EBADREQUEST, message: "the extensions parameter must be a JSON object"},
		{name: "NoQuery", method: "POST", contentType: "application/json", body: `{}`,
			status: 400, code: seatflow.EBADREQUEST, message: "no query parameter"},
		{name: "InvalidDocumentJSON", method: "POST", contentType: "application/json", body: `{"query": "{ nope }"}`,
			status: 200, code: "GRAPHQL_VALIDATION_FAILED"},
		{name: "InvalidDocumentGraphQLResponse", method: "POST", contentType: "application/json", accept: mediaGraphQLResponse,
			body: `{"query": "{ nope }"}`, status: 400, code: "GRAPHQL_VALIDATION_FAILED"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(c.method, a.srv.URL+"/query"+c.path, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if c.body == "" {
				req.Body = http.NoBody
			}
			for k, vs := range c.header {
				req.Header[k] = vs
			}
			if c.contentType != "" {
				req.Header.Set("Content-Type", c.contentType)
			}
			if c.accept != "" {
				req.Header.Set("Accept", c.accept)
			}
			got := a.do(t, req)
			wantAnswer(t, got, c.status, c.code)
			if len(got.Errors) != 1 || !strings.Contains(got.Errors[0].Message, c.message) {
				t.Errorf("errors = %s, want one saying %q", got.raw, c.message)
			}
			if strings.Contains(string(got.raw), "<script>") || strings.Contains(string(got.raw), `"data"`) {
				t.Errorf("answer %s echoes the request or has a data entry", got.raw)
			}
			if v := got.header.Get("Allow"); v != c.allow {
				t.Errorf("Allow = %q, want %q", v, c.allow)
			}
			wantType := mediaJSON
			if c.accept != "" {
				wantType = c.accept
			}
			if ct := got.header.Get("Content-Type"); ct != wantType {
				t.Errorf("Content-Type = %q, want %q", ct, wantType)
			}
		})
	}
}

// TestResponseType: the answer's media type is the one of the two GraphQL over HTTP
// defines that Accept prefers, application/json when it names neither.
func TestResponseType(t *testing.T) {
	for accept, want := range map[string]string{
		"":                                      mediaJSON,
		"text/html":                             mediaJSON,
		"*/*":                                   mediaJSON,
		mediaGraphQLResponse:                    mediaGraphQLResponse,
		mediaGraphQLResponse + ", " + mediaJSON: mediaGraphQLResponse,
		mediaJSON + ", " + mediaGraphQLResponse: mediaJSON,
		mediaJSON + ";q=0.5, " + mediaGraphQLResponse + ";q=0.9": mediaGraphQLResponse,
		mediaGraphQLResponse + ";q=0, " + mediaJSON:              mediaJSON,
		mediaGraphQLResponse + ";q=2":                            mediaJSON,
	} {
		r := &http.Request{Header: http.Header{"Accept": {accept}}, Body: io.NopCloser(strings.NewReader(""))}
		if got := responseType(r); got != want {
			t.Errorf("Accept %q: %s, want %s", accept, got, want)
		}
	}
}
