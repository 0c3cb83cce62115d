package app

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"seatflow/internal/nodeid"
)

// Findings of an outside probe: what a client sends is answered with a code,
// and is never the server's error.

// TestNoClientInputLogsAnError: a batch of hostile requests (odd dates and times, ids out
// of range, huge and negative sizes, broken tokens and bodies, control characters, admin
// input at the edges of every limit) is answered, and the server's log holds no ERROR
// line: an ERROR means the server is at fault, and one a client can cause per request
// drowns the real ones and costs a log line per request. INTERNAL is never the answer.
func TestNoClientInputLogsAnError(t *testing.T) {
	a := newTestApp(t)
	show, seats := a.onSaleShowtime()
	movie := a.createMovie("Metropolis", 153)
	alice := a.token("alice", "customer")
	expired := a.token("bob", "customer")
	a.clock.Advance(2 * time.Hour) // expired's hour is over
	alice = a.token("alice", "customer")
	id := func(typ string, n int) string { return nodeid.Encode(typ, n) }
	var missing []string
	for i := range 100 {
		missing = append(missing, id(nodeid.Movie, 1_000_000+i))
	}

	type probe struct {
		name, token, query string
		vars               map[string]any
	}
	probes := []probe{
		{"DateYearZero", "", `{ showtimes(date: "0000-01-01") { id } }`, nil},
		{"DateYear9999", "", `{ showtimes(date: "9999-12-31") { id } }`, nil},
		{"DateYearOne", "", `{ showtimes(date: "0001-01-01") { id } }`, nil},
		{"DateBefore1970", "", `{ showtimes(date: "1969-12-31") { id } }`, nil},
		{"DateAfter2100", "", `{ showtimes(date: "2101-01-01") { id } }`, nil},
		{"DateFebruary30", "", `{ showtimes(date: "2030-02-30") { id } }`, nil},
		{"MovieShowtimesOnYearZero", "", `query($id: ID!) { showtimes(date: "0000-01-01", movieId: $id) { id } }`, map[string]any{"id": movie}},
		{"HugeFirst", "", `{ movies(first: 2147483647) { totalCount } }`, nil},
		{"NegativeFirst", "", `{ movies(first: -1) { totalCount } }`, nil},
		{"NegativeLast", "", `{ movies(last: -5) { totalCount } }`, nil},
		{"IntOverflow", "", `{ movies(first: 99999999999999999999) { totalCount } }`, nil},
		{"CursorGarbage", "", `{ movies(after: "!!!", first: 1) { totalCount } }`, nil},
		{"CursorOfHugeID", "", `query($c: String) { movies(after: $c, first: 1) { totalCount } }`,
			map[string]any{"c": "TW92aWU6OTk5OTk5OTk5OTk5OTk5OTk5OTk5"}},
		{"BestSeatsHugeCount", "", `query($id: ID!) { bestSeats(showtimeId: $id, count: 2147483647) { id } }`, map[string]any{"id": show}},
		{"BestSeatsNegativeCount", "", `query($id: ID!) { bestSeats(showtimeId: $id, count: -3) { id } }`, map[string]any{"id": show}},
		{"NodeEmptyID", "", `{ node(id: "") { id } }`, nil},
		{"NodeNotBase64", "", `{ node(id: "%%%") { id } }`, nil},
		{"NodeOfIDZero", "", `query($id: ID!) { node(id: $id) { id } }`, map[string]any{"id": id(nodeid.Movie, 0)}},
		{"NodeOfHugeID", "", `query($id: ID!) { node(id: $id) { id } }`, map[string]any{"id": "TW92aWU6OTk5OTk5OTk5OTk5OTk5OTk5OTk5"}},
		{"NodeOfAType", "", `query($id: ID!) { node(id: $id) { id } }`, map[string]any{"id": id(nodeid.SeatMap, 1)}},
		{"NodesMissing", "", `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, map[string]any{"ids": missing}},
		{"NodesTooMany", "", `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, map[string]any{"ids": append(missing, missing...)}},
		{"SeatMapOfMissingShowtime", "", `query($id: ID!) { seatMap(showtimeId: $id) { version } }`, map[string]any{"id": id(nodeid.Showtime, 999_999)}},
		{"ShowtimeIDAsMovie", "", `query($id: ID!) { showtime(id: $id) { id } }`, map[string]any{"id": movie}},
		{"ExpiredToken", expired, `{ myOrders { id } }`, nil},
		{"GarbageToken", "x.y.z", `{ myOrders { id } }`, nil},
		{"HoldHugeSeatIDs", alice, holdQ, holdVars(show, []string{id(nodeid.Seat, 2147483647), id(nodeid.Seat, 1<<62)}, "k1")},
		{"HoldOtherShowtimesSeats", alice, holdQ, holdVars(id(nodeid.Showtime, 999_999), seats[:1], "k2")},
		{"HoldLongKey", alice, holdQ, holdVars(show, seats[:1], strings.Repeat("k", 10_000))},
		{"HoldKeyWithNUL", alice, holdQ, holdVars(show, seats[:1], "k\x00")},
		{"HoldKeyOfSpaces", alice, holdQ, holdVars(show, seats[:1], "   ")},
		{"PayMissingOrder", alice, `mutation($id: ID!) { payOrder(orderId: $id, paymentRef: "r") { id } }`, map[string]any{"id": id(nodeid.Order, 999_999)}},
		{"PayWithNULRef", alice, `mutation($id: ID!) { payOrder(orderId: $id, paymentRef: "\u0000") { id } }`, map[string]any{"id": id(nodeid.Order, 1)}},
		{"ShowtimeAtYearZero", a.admin, createShowtimeQ, showtimeAt(movie, "0000-01-01T00:00:00Z")},
		{"ShowtimeAtYear9999", a.admin, createShowtimeQ, showtimeAt(movie, "9999-12-31T23:59:59Z")},
		{"ShowtimeAtMonth13", a.admin, createShowtimeQ, showtimeAt(movie, "2030-13-01T00:00:00Z")},
		{"ShowtimeHugePrice", a.admin, createShowtimeQ, map[string]any{"in": map[string]any{"movieId": movie, "hallId": id(nodeid.Hall, 1),
			"startsAt": testNow.Add(48 * time.Hour).Format(time.RFC3339), "prices": []map[string]any{{"kind": "STANDARD", "amountCents": 2147483647}}}}},
		{"MovieOfMultibyteTitle", a.admin, createMovieQ, movieIn(strings.Repeat("é", 150))},
		{"MovieOfNULTitle", a.admin, createMovieQ, movieIn("Metro\x00polis")},
		{"MovieOfBidiTitle", a.admin, createMovieQ, movieIn("Metro\u202epolis")},
		{"MovieOfHugeDuration", a.admin, createMovieQ, map[string]any{"in": map[string]any{"title": "Long", "durationMinutes": 2147483647}}},
		{"HallOfBidiLabel", a.admin, createHallQ, map[string]any{"in": map[string]any{"name": "H", "rows": []map[string]any{{"label": "\u2066A", "seats": 2}}}}},
		{"HallOfMultibyteName", a.admin, createHallQ, map[string]any{"in": map[string]any{"name": strings.Repeat("ü", 100), "rows": []map[string]any{{"label": "ÄÖÜ", "seats": 2}}}}},
	}
	for _, p := range probes {
		t.Run(p.name, func(t *testing.T) {
			r := a.do(p.token, p.query, p.vars)
			for _, c := range r.codes() {
				if c == "INTERNAL" || c == "" {
					t.Errorf("answered %q: %+v", c, r.Errors)
				}
			}
		})
	}
	// And at the transport: bodies, parameters and headers.
	for _, raw := range []struct{ method, path, body string }{
		{"POST", "/query", `{"query": "{ showtimes(date: \"0000-01-01\") { id } }"`},
		{"POST", "/query", "{\"query\": \"{ __typename }\xff\"}"},
		{"POST", "/query", `{"query": "{ __typename }", "variables": {"x": 1e999}}`},
		{"GET", "/query?query=" + url.QueryEscape(`{ showtimes(date: "9999-12-31") { id } }`), ""},
		{"GET", "/query?query=%ff%fe", ""},
		{"GET", "/query?query=%7B__typename%7D&variables=%5B%5D", ""},
	} {
		var body []byte
		if raw.body != "" {
			body = []byte(raw.body)
		}
		if status, _, out := a.request(raw.method, raw.path, body, http.Header{"Authorization": {"Bearer not-a-token"}}); status >= 500 {
			t.Errorf("%s %s: %d %s", raw.method, raw.path, status, out)
		}
	}
	for _, line := range strings.Split(a.logBuf.String(), "\n") {
		if strings.Contains(line, "level=ERROR") {
			t.Errorf("a client's request logged an error: %s", line)
		}
	}
}

func showtimeAt(movie, startsAt string) map[string]any {
	return map[string]any{"in": map[string]any{"movieId": movie, "hallId": nodeid.Encode(nodeid.Hall, 1),
		"startsAt": startsAt, "prices": allPrices}}
}

func movieIn(title string) map[string]any {
	return map[string]any{"in": map[string]any{"title": title, "durationMinutes": 90}}
}

// TestDateRange: a Date is a day from 1970-01-01 to 2100-12-31 (the schema says so);
// another well-formed day is BAD_USER_INPUT, not an INTERNAL error of the day's bounds.
func TestDateRange(t *testing.T) {
	a := newTestApp(t)
	for _, c := range []struct{ date, code string }{
		{"1970-01-01", ""}, {"2100-12-31", ""}, {"2030-03-10", ""},
		{"1969-12-31", "BAD_USER_INPUT"}, {"2101-01-01", "BAD_USER_INPUT"},
		{"0000-01-01", "BAD_USER_INPUT"}, {"9999-12-31", "BAD_USER_INPUT"},
	} {
		t.Run(c.date, func(t *testing.T) {
			r := a.do("", `query($d: Date!) { showtimes(date: $d) { id } }`, map[string]any{"d": c.date})
			if r.Code() != c.code {
				t.Fatalf("showtimes(date: %s): code %q (%+v), want %q", c.date, r.Code(), r.Errors, c.code)
			}
			if c.code != "" && !strings.Contains(r.Errors[0].Message, "1970-01-01 to 2100-12-31") {
				t.Errorf("message %q does not name the days a Date may be", r.Errors[0].Message)
			}
		})
	}
}

// TestIdempotencyKeysComparedAlike: "pad" and "pad " were one key to MariaDB (utf8mb4_bin
// pads with spaces) and two to Redis, so the second request, for other seats, got the
// first order. Keys (and payment references) with white space at an end or a control
// character are refused; the rest compare byte for byte in both stores.
func TestIdempotencyKeysComparedAlike(t *testing.T) {
	a := newTestApp(t)
	show, seats := a.onSaleShowtime()
	alice := a.token("alice", "customer")
	first := a.hold(alice, show, seats[:1], "pad")
	for _, key := range []string{"pad ", " pad", "pad\t", "pad\n", "p\x00ad", "pad\u0085", "pad\u202e", "pad\u00a0"} {
		t.Run(strconvQuote(key), func(t *testing.T) {
			r := a.do(alice, holdQ, holdVars(show, seats[1:2], key))
			if r.Code() != "BAD_USER_INPUT" {
				t.Fatalf("key %q: code %q, data %s; want BAD_USER_INPUT (the first order, %s, is for another seat)",
					key, r.Code(), r.Data, first.ID)
			}
			if !strings.Contains(r.Errors[0].Message, "idempotencyKey") {
				t.Errorf("message %q does not name idempotencyKey", r.Errors[0].Message)
			}
		})
	}
	t.Run("OtherKeysStayApart", func(t *testing.T) {
		// Case and inner spaces are different keys in both stores: a new order each.
		for i, key := range []string{"PAD", "p ad"} {
			o := a.hold(alice, show, seats[1+i:2+i], key)
			if o.ID == first.ID {
				t.Fatalf("key %q got the order of key %q", key, "pad")
			}
		}
	})
	t.Run("PaymentRefWithTrailingSpace", func(t *testing.T) {
		a.wantCode(alice, `mutation($id: ID!) { payOrder(orderId: $id, paymentRef: "ref ") { id } }`,
			map[string]any{"id": first.ID}, "BAD_USER_INPUT")
	})
}

func strconvQuote(s string) string { return strings.Trim(fmt.Sprintf("%+q", s), `"`) }
