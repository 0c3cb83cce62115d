package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The abuse tests replay, through the real server, each attack of the API's probe (one
// test per finding) and check the answer is bounded and coded.

// postRaw posts a JSON body with headers and returns the status, the headers and the body.
func (a *testApp) postRaw(body any, header http.Header) (int, http.Header, []byte) {
	a.t.Helper()
	raw, _ := json.Marshal(body)
	status, h, out := a.request("POST", "/query", raw, header)
	return status, h, out
}

func (a *testApp) request(method, path string, body []byte, header http.Header) (int, http.Header, []byte) {
	a.t.Helper()
	req, _ := http.NewRequest(method, a.srv.URL+path, bytes.NewReader(body))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, out
}

// decode reads a GraphQL answer, failing the test when it is not one.
func decode(t *testing.T, body []byte) gqlResponse {
	t.Helper()
	var r gqlResponse
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("answer is not GraphQL JSON: %v: %.300s", err, body)
	}
	return r
}

// codes lists the extensions.code of every error of r.
func (r gqlResponse) codes() []string {
	var out []string
	for _, e := range r.Errors {
		c, _ := e.Extensions["code"].(string)
		out = append(out, c)
	}
	return out
}

// Finding: one anonymous 10 KB document of 449 aliases answered with 12–24 MB of errors.
func TestAbuseErrorAmplification(t *testing.T) {
	a := newTestApp(t)
	t.Run("AliasesRefusedBeforeValidation", func(t *testing.T) {
		var doc strings.Builder
		doc.WriteString("{")
		for i := 0; doc.Len() < 10<<10; i++ {
			fmt.Fprintf(&doc, ` m: movie(id:"%d"){id}`, i)
		}
		doc.WriteString("}")
		status, _, body := a.postRaw(map[string]any{"query": doc.String()}, nil)
		r := decode(t, body)
		if status != http.StatusOK || r.Code() != "ALIAS_LIMIT_EXCEEDED" || len(r.Errors) != 1 || len(body) > 1<<10 {
			t.Fatalf("status %d, %d errors %v, %d bytes; want 200, one ALIAS_LIMIT_EXCEEDED, under 1 KiB", status, len(r.Errors), r.codes(), len(body))
		}
	})
	t.Run("ValidationErrorsCapped", func(t *testing.T) {
		// 90 aliases (under the cap) that all conflict: ~4,000 pairs, each an error.
		var doc strings.Builder
		doc.WriteString("{")
		for i := range 90 {
			fmt.Fprintf(&doc, ` m: movie(id:"%d"){id}`, i)
		}
		doc.WriteString("}")
		_, _, body := a.postRaw(map[string]any{"query": doc.String()}, nil)
		r := decode(t, body)
		codes := r.codes()
		if len(r.Errors) != 21 || codes[20] != "TOO_MANY_ERRORS" || codes[0] != "GRAPHQL_VALIDATION_FAILED" || len(body) > 16<<10 {
			t.Fatalf("%d errors (%v…), %d bytes; want 20 validation errors and TOO_MANY_ERRORS, under 16 KiB", len(r.Errors), codes[:min(3, len(codes))], len(body))
		}
		if !strings.Contains(r.Errors[20].Message, "more errors not shown") {
			t.Fatalf("last error %q", r.Errors[20].Message)
		}
	})
}

// Finding: lists cost nothing: 235 aliases of a showtime with its hall's seats and its
// seat map answered 6.7 MB; movie→showtimes→movie… multiplied at each level.
func TestAbuseListsCost(t *testing.T) {
	a := newTestApp(t)
	show, _ := a.onSaleShowtime()
	vars := map[string]any{"id": show}
	t.Run("AliasedSeatLists", func(t *testing.T) {
		var doc strings.Builder
		doc.WriteString("query($id: ID!) {")
		for i := range 45 { // 90 aliases: under their cap
			fmt.Fprintf(&doc, ` s%d: showtime(id: $id) { hall { seats { id row number } } } m%d: seatMap(showtimeId: $id) { seats { status } }`, i, i)
		}
		doc.WriteString("}")
		r := a.wantCode("", doc.String(), vars, "COMPLEXITY_LIMIT_EXCEEDED")
		cost, _ := r.Errors[0].Extensions["cost"].(map[string]any)
		if n, _ := cost["requestedQueryCost"].(float64); n < 20000 {
			t.Fatalf("requested cost %v: 90 lists of up to 300 seats must cost over the 20,000 limit", cost)
		}
	})
	t.Run("NestedListsMultiply", func(t *testing.T) {
		a.wantCode("", `{ movies { edges { node { showtimes { movie { showtimes { movie { showtimes { id } } } } } } } } }`, nil,
			"COMPLEXITY_LIMIT_EXCEEDED")
	})
	t.Run("ConnectionSizedByFirst", func(t *testing.T) {
		small := a.do("", `{ movies(first: 1) { edges { node { id } } } }`, nil)
		large := a.do("", `{ movies(first: 100) { edges { node { id } } } }`, nil)
		if cs, cl := requestedCost(t, small), requestedCost(t, large); cl < 50*cs {
			t.Fatalf("first: 1 costs %d, first: 100 costs %d: the page size must count", cs, cl)
		}
	})
	t.Run("ResponseBytesCapped", func(t *testing.T) {
		b := newTestApp(t, "-max-response-bytes", "4000") // room for the fixtures' answers
		show, _ := b.onSaleShowtime()
		var doc strings.Builder
		doc.WriteString("query($id: ID!) {")
		for i := range 8 {
			fmt.Fprintf(&doc, ` s%d: showtime(id: $id) { hall { seats { id row number kind x y sellable } } }`, i)
		}
		doc.WriteString("}")
		status, _, body := b.postRaw(map[string]any{"query": doc.String(), "variables": map[string]any{"id": show}}, nil)
		r := decode(t, body)
		if status != http.StatusOK || r.Code() != "RESPONSE_TOO_LARGE" || (len(r.Data) > 0 && string(r.Data) != "null") || len(body) > 1<<10 {
			t.Fatalf("status %d, codes %v, data %.80s, %d bytes; want RESPONSE_TOO_LARGE and no data", status, r.codes(), r.Data, len(body))
		}
	})
}

func requestedCost(t *testing.T, r *gqlResponse) int {
	t.Helper()
	if len(r.Errors) > 0 {
		t.Fatalf("errors: %+v", r.Errors)
	}
	var ext struct {
		Extensions struct {
			Cost struct{ RequestedQueryCost int }
		}
	}
	raw, _ := json.Marshal(map[string]any{"extensions": r.Extensions})
	_ = json.Unmarshal(raw, &ext)
	return ext.Extensions.Cost.RequestedQueryCost
}

// Finding: { __typename ×4990 } (55 KB) cost 1.6 s of validation, whatever its spacing.
func TestAbuseQuadraticValidation(t *testing.T) {
	a := newTestApp(t)
	for _, sep := range []string{" ", "\n", " ,"} {
		doc := "{" + strings.Repeat("__typename"+sep, 4990) + "}"
		start := time.Now()
		r := a.do("", doc, nil)
		if took := time.Since(start); r.Code() != "FIELD_LIMIT_EXCEEDED" || took > time.Second {
			t.Fatalf("separator %q: %v in %s; want FIELD_LIMIT_EXCEEDED at once", sep, r.codes(), took)
		}
	}
}

// Finding: five aliased holdSeats, three succeed, two fail: data null, the three held
// orders lost to the client. One mutation per request instead.
func TestAbuseOneMutationPerRequest(t *testing.T) {
	a := newTestApp(t)
	show, seats := a.onSaleShowtime()
	alice := a.token("alice", "customer")
	var doc strings.Builder
	doc.WriteString("mutation {")
	for i := range 5 {
		fmt.Fprintf(&doc, ` h%d: holdSeats(input: {showtimeId: %q, seatIds: [%q], idempotencyKey: "k%d"}) { id }`, i, show, seats[i*2], i)
	}
	doc.WriteString("}")
	r := a.wantCode(alice, doc.String(), nil, "MULTIPLE_MUTATIONS")
	if len(r.Data) > 0 && string(r.Data) != "null" {
		t.Fatalf("refused mutations returned data %s", r.Data)
	}
	if m, _ := a.seatStatuses(show); m[seats[0]] != "AVAILABLE" || m[seats[8]] != "AVAILABLE" {
		t.Fatalf("a refused document held seats: %v", m)
	}
	// One mutation plus __typename is one mutation.
	a.must(alice, fmt.Sprintf(`mutation { __typename holdSeats(input: {showtimeId: %q, seatIds: [%q], idempotencyKey: "one"}) { id } }`,
		show, seats[0]), nil, nil)
}

// Finding: body decode errors echoed the request body and Go type names.
func TestAbuseErrorsLeakNothing(t *testing.T) {
	a := newTestApp(t)
	for _, body := range []string{
		`{"query": 12, "secret": "SECRET-MARKER"}`,
		`{"query": "{ __typename }", "variables": ["SECRET-MARKER"]}`,
		`{"query": "{ __typename }", "variables": {"x": SECRET-MARKER}}`,
		`{"query": "{ __typename }", "extensions": "SECRET-MARKER"}`,
		`SECRET-MARKER`,
	} {
		status, _, out := a.request("POST", "/query", []byte(body), nil)
		r := decode(t, out)
		for _, leak := range []string{"SECRET-MARKER", "RawParams", "json.", "map[", "[]interface", "Go value"} {
			if strings.Contains(string(out), leak) {
				t.Fatalf("body %s: answer %d %s leaks %q", body, status, out, leak)
			}
		}
		if r.Code() == "" {
			t.Fatalf("body %s: answer without a code: %s", body, out)
		}
	}
}
