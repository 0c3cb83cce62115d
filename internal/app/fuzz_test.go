package app

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// fuzzPost sends one GraphQL request and fails on what must never happen whatever the
// input: a 5xx, a body that is not JSON, or an INTERNAL error (which would also be where
// internals could leak).
func fuzzPost(t *testing.T, a *testApp, token string, body []byte) {
	req, _ := http.NewRequest(http.MethodPost, a.srv.URL+"/query", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 500 {
		t.Fatalf("status %d for %s: %s", resp.StatusCode, body, raw)
	}
	var out gqlResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("response is not JSON for %s: %s", body, raw)
	}
	if out.Code() == "INTERNAL" {
		t.Fatalf("INTERNAL for %s: %s", body, raw)
	}
}

// FuzzGraphQL sends random documents and variables to the real endpoint as a customer.
func FuzzGraphQL(f *testing.F) {
	a := newTestApp(f)
	show, seats := a.onSaleShowtime()
	tok := a.token("fuzzer", "customer")
	for _, seed := range []struct{ doc, vars string }{
		{`{ movies(first: 3) { edges { cursor node { id title showtimes { id startsAt } } } pageInfo { endCursor } } }`, `{}`},
		{`query($d: Date!) { showtimes(date: $d) { id movie { title } hall { seats { id row } } } }`, `{"d":"2030-03-11"}`},
		{`query($id: ID!) { showtime(id: $id) { status seatMap { available seats { status } } } }`, `{"id":"` + show + `"}`},
		{`query($id: ID!, $n: Int!) { bestSeats(showtimeId: $id, count: $n) { id } }`, `{"id":"` + show + `","n":3}`},
		{holdQ, `{"in":{"showtimeId":"` + show + `","seatIds":["` + seats[3] + `"],"idempotencyKey":"f1"}}`},
		{`mutation($id: ID!) { payOrder(orderId: $id, paymentRef: "p") { status } }`, `{"id":"1"}`},
		{`mutation($id: ID!) { cancelOrder(orderId: $id) { status } }`, `{"id":"-1"}`},
		{`{ myOrders { id seats { id } showtime { id } } }`, `null`},
		{`query($a: String) { movies(after: $a) { totalCount } }`, `{"a":"bW92aWU6OTk5"}`},
		{`{ order(id: "abc") { id } }`, `{}`},
		{`fragment F on Movie { title } { movies { edges { node { ...F ...F } } } }`, `{}`},
	} {
		f.Add(seed.doc, seed.vars)
	}
	f.Fuzz(func(t *testing.T, doc, vars string) {
		body := map[string]any{"query": doc}
		if json.Valid([]byte(vars)) {
			body["variables"] = json.RawMessage(vars)
		}
		raw, err := json.Marshal(body)
		if err != nil {
			return
		}
		fuzzPost(t, a, tok, raw)
	})
}

// FuzzHoldInput sends holdSeats with random seat lists, showtime ids and keys.
func FuzzHoldInput(f *testing.F) {
	a := newTestApp(f, "-holds-per-minute", "0")
	show, seats := a.onSaleShowtime()
	tok := a.token("fuzzer", "customer")
	f.Add(show, strings.Join(seats[:2], ","), "k1")
	f.Add(show, seats[0]+","+seats[0], "dup")
	f.Add("0", "1,2,3", "")
	f.Add(show, "-5,abc,99999999999999999999", "k2")
	f.Add(show, strings.Join(seats, ","), strings.Repeat("k", 300))
	f.Fuzz(func(t *testing.T, showID, seatList, key string) {
		var ids []string
		for _, s := range strings.Split(seatList, ",") {
			ids = append(ids, strings.TrimSpace(s))
		}
		raw, err := json.Marshal(map[string]any{"query": holdQ, "variables": holdVars(showID, ids, key)})
		if err != nil {
			return
		}
		fuzzPost(t, a, tok, raw)
	})
}
