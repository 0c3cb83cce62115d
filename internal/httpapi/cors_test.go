package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

// TestCORS: an allowed origin gets its origin back (and a preflight its answer, 204,
// before GraphQL); any other origin gets no CORS header, so a browser keeps the answer
// from the page; "*" allows every origin.
func TestCORS(t *testing.T) {
	const allowed, other = "https://tickets.example", "https://evil.example"
	listed := newAPI(t, func(o *Options) { o.AllowedOrigins = []string{allowed} })
	anyOrigin := newAPI(t, func(o *Options) { o.AllowedOrigins = []string{"*"} })
	preflight := func(origin, headers string) http.Header {
		h := http.Header{"Origin": {origin}, "Access-Control-Request-Method": {"POST"}}
		if headers != "" {
			h.Set("Access-Control-Request-Headers", headers)
		}
		return h
	}
	type want struct {
		status       int
		allowOrigin  string // "" = absent
		allowHeaders string // "" = absent
		vary         string // a Vary value that must be present
	}
	cases := []struct {
		name   string
		api    *testAPI
		method string
		header http.Header
		want   want
	}{
		{"AllowedOrigin", listed, http.MethodPost, http.Header{"Origin": {allowed}}, want{http.StatusOK, allowed, "", "Origin"}},
		{"OtherOrigin", listed, http.MethodPost, http.Header{"Origin": {other}}, want{http.StatusOK, "", "", "Origin"}},
		{"NoOrigin", listed, http.MethodPost, nil, want{http.StatusOK, "", "", "Origin"}},
		{"AnyOriginWithStar", anyOrigin, http.MethodPost, http.Header{"Origin": {other}}, want{http.StatusOK, other, "", "Origin"}},
		{"PreflightAllowedGetsTheHeadersItAsks", listed, http.MethodOptions, preflight(allowed, "authorization, content-type, x-trace-id"),
			want{http.StatusNoContent, allowed, "authorization, content-type, x-trace-id", "Access-Control-Request-Headers"}},
		{"PreflightWithoutHeadersGetsTheDefaults", listed, http.MethodOptions, preflight(allowed, ""),
			want{http.StatusNoContent, allowed, corsHeaders, "Origin"}},
		{"PreflightAskingABadHeaderListGetsTheDefaults", listed, http.MethodOptions, preflight(allowed, "x-ok, bad header;"),
			want{http.StatusNoContent, allowed, corsHeaders, "Origin"}},
		{"PreflightAskingTooManyHeadersGetsTheDefaults", listed, http.MethodOptions, preflight(allowed, strings.Repeat("x-a,", 300)+"x-a"),
			want{http.StatusNoContent, allowed, corsHeaders, "Origin"}},
		{"PreflightOtherOrigin", listed, http.MethodOptions, preflight(other, "authorization"), want{http.StatusNoContent, "", "", "Origin"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got *answer
			if c.method == http.MethodPost {
				got = c.api.query(t, "{ __typename }", nil, c.header)
			} else {
				req, err := http.NewRequest(c.method, c.api.srv.URL+"/query", nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Header = c.header
				got = c.api.do(t, req)
			}
			h := got.header
			if got.status != c.want.status {
				t.Errorf("status = %d, want %d", got.status, c.want.status)
			}
			if v := h.Get("Access-Control-Allow-Origin"); v != c.want.allowOrigin {
				t.Errorf("Access-Control-Allow-Origin = %q, want %q", v, c.want.allowOrigin)
			}
			if v := h.Get("Access-Control-Allow-Headers"); v != c.want.allowHeaders {
				t.Errorf("Access-Control-Allow-Headers = %q, want %q", v, c.want.allowHeaders)
			}
			if vary := strings.Join(h.Values("Vary"), ", "); !strings.Contains(vary, c.want.vary) {
				t.Errorf("Vary = %q, want %s in it", vary, c.want.vary)
			}
			exposed := h.Get("Access-Control-Expose-Headers")
			switch {
			case c.want.allowOrigin != "" && exposed != "ETag, Retry-After, X-Response-Cache, traceresponse":
				t.Errorf("Access-Control-Expose-Headers = %q, want ETag, Retry-After, X-Response-Cache, traceresponse", exposed)
			case c.want.allowOrigin == "" && exposed != "":
				t.Errorf("Access-Control-Expose-Headers = %q for an origin not allowed", exposed)
			}
			preflighted := c.want.status == http.StatusNoContent && c.want.allowOrigin != ""
			if m, age := h.Get("Access-Control-Allow-Methods"), h.Get("Access-Control-Max-Age"); preflighted != (m == "GET, POST, OPTIONS" && age == "7200") {
				t.Errorf("Allow-Methods %q, Max-Age %q; want GET, POST, OPTIONS and 7200 only on an allowed preflight", m, age)
			}
			if c.want.status == http.StatusNoContent && len(got.raw) != 0 {
				t.Errorf("preflight body = %q, want none: it never reaches GraphQL", got.raw)
			}
		})
	}
}
