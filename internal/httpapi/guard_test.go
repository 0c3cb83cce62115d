package httpapi

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"seatflow"
)

// TestGuard: before GraphQL reads a request, a body over MaxBodyBytes is 413 (whether its
// length is announced or not), a bearer token that is present but invalid is 401, and a
// request's work ends at RequestTimeout.
func TestGuard(t *testing.T) {
	a := newAPI(t, nil)             // MaxBodyBytes 4096
	body := func(size int) string { // a valid request of exactly size bytes
		head, tail := `{"query":"{ __typename }"`, "}"
		return head + strings.Repeat(" ", size-len(head)-len(tail)) + tail
	}
	issue := func(ttl time.Duration) string {
		token, err := a.Auth.Issue("guard-user", "customer", ttl)
		if err != nil {
			t.Fatal(err)
		}
		return token
	}
	bearer := func(v string) http.Header { return http.Header{"Authorization": {v}} }
	cases := []struct {
		name    string
		body    string
		chunked bool
		header  http.Header
		status  int
		code    string
	}{
		{"BodyAtTheLimit", body(4096), false, nil, http.StatusOK, ""},
		{"BodyOverTheLimit", body(4097), false, nil, http.StatusRequestEntityTooLarge, seatflow.EBADREQUEST},
		{"ChunkedBodyAtTheLimit", body(4096), true, nil, http.StatusOK, ""},
		{"ChunkedBodyOverTheLimit", body(4097), true, nil, http.StatusRequestEntityTooLarge, seatflow.EBADREQUEST},
		{"ValidToken", body(100), false, bearer("Bearer " + issue(time.Hour)), http.StatusOK, ""},
		{"SchemeAloneIsAnonymous", body(100), false, bearer("Bearer"), http.StatusOK, ""},
		{"InvalidToken", body(100), false, bearer("Bearer not-a-token"), http.StatusUnauthorized, seatflow.EUNAUTHENTICATED},
		{"ExpiredToken", body(100), false, bearer("Bearer " + issue(-time.Minute)), http.StatusUnauthorized, seatflow.EUNAUTHENTICATED},
		{"OtherScheme", body(100), false, bearer("Basic dTpw"), http.StatusUnauthorized, seatflow.EUNAUTHENTICATED},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(c.body)
			if c.chunked {
				body = io.MultiReader(body) // hides the length: sent chunked
			}
			got := a.post(t, body, c.header)
			wantAnswer(t, got, c.status, c.code)
			if c.code != "" && got.Data != nil {
				t.Errorf("data = %v, want none: the request was refused before GraphQL", got.Data)
			}
		})
	}

	// A request whose deadline passes before its operation runs is refused
	// SERVICE_UNAVAILABLE, with or without a store to read; never INTERNAL.
	t.Run("RequestTimeout", func(t *testing.T) {
		a := newAPI(t, func(o *Options) { o.RequestTimeout = time.Nanosecond })
		for _, q := range []string{"{ __typename }", `query($s: ID!) { showtime(id: $s) { id } }`} {
			got := a.query(t, q, map[string]any{"s": a.showtimeID()}, nil)
			wantAnswer(t, got, http.StatusOK, seatflow.EUNAVAILABLE)
		}
	})
}
