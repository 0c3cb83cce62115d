package app

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"seatflow/internal/nodeid"
)

// What front-end tooling needs from the API, through the real server: full introspection,
// no silent @defer, globally unique ids with node(id:), identified live state, backward
// paging, CORS for the headers client libraries add, and HTTP caching of catalog reads.

// introspectionQuery is graphql-js's getIntrospectionQuery() with every option on
// (descriptions, specifiedByURL, directive isRepeatable, schema description, input value
// deprecation): what GraphiQL, graphql-codegen and IDE plugins send.
const introspectionQuery = `query IntrospectionQuery {
  __schema { description queryType { name } mutationType { name } subscriptionType { name }
    types { ...FullType }
    directives { name description isRepeatable locations args(includeDeprecated: true) { ...InputValue } } } }
fragment FullType on __Type { kind name description specifiedByURL
  fields(includeDeprecated: true) { name description args(includeDeprecated: true) { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason }
  inputFields(includeDeprecated: true) { ...InputValue } interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason } possibleTypes { ...TypeRef } }
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue isDeprecated deprecationReason }
fragment TypeRef on __Type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name
  ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } } } } }`

func TestFullIntrospection(t *testing.T) {
	a := newTestApp(t)
	var out struct {
		Schema struct {
			Types []struct {
				Name, Kind     string
				SpecifiedByURL *string
				PossibleTypes  []struct{ Name string }
			}
			Directives []struct{ Name string }
		} `json:"__schema"`
	}
	a.must("", introspectionQuery, nil, &out)
	types := map[string]int{}
	for i, typ := range out.Schema.Types {
		types[typ.Name] = i
	}
	node := out.Schema.Types[types["Node"]]
	if node.Kind != "INTERFACE" || len(node.PossibleTypes) != 8 {
		t.Fatalf("Node = %+v, want an interface of the 8 node types", node)
	}
	if u := out.Schema.Types[types["Time"]].SpecifiedByURL; u == nil || !strings.Contains(*u, "rfc3339") {
		t.Fatalf("Time's specifiedByURL = %v", u)
	}
	for _, d := range out.Schema.Directives {
		if d.Name == "defer" || d.Name == "stream" {
			t.Fatalf("the schema advertises @%s, which the server does not serve", d.Name)
		}
	}
}

func TestDeferRefusedNotSilent(t *testing.T) {
	a := newTestApp(t)
	show, _ := a.onSaleShowtime()
	q := `query($id: ID!) { showtime(id: $id) { id ... @defer { movie { title } } } }`
	for range 2 { // the second time would be a response-cache hit if the first were stored
		r := a.wantCode("", q, map[string]any{"id": show}, "GRAPHQL_VALIDATION_FAILED")
		if !strings.Contains(r.Errors[0].Message, "defer") || (len(r.Data) > 0 && string(r.Data) != "null") {
			t.Fatalf("@defer: %+v data %s", r.Errors, r.Data)
		}
	}
}

func TestGlobalIDs(t *testing.T) {
	a := newTestApp(t)
	show, seats := a.onSaleShowtime()
	alice, bob := a.token("alice", "customer"), a.token("bob", "customer")
	o := a.hold(alice, show, seats[:1], "k")
	var ids struct {
		Showtime struct {
			ID    string
			Movie struct{ ID string }
			Hall  struct{ ID string }
		}
	}
	a.must("", `query($id: ID!) { showtime(id: $id) { id movie { id } hall { id } } }`, map[string]any{"id": show}, &ids)
	movie, hall := ids.Showtime.Movie.ID, ids.Showtime.Hall.ID
	if idOf(t, show) != idOf(t, movie) || show == movie || show == hall || movie == hall {
		t.Fatalf("showtime %s, movie %s, hall %s: database ids alike, API ids must differ", show, movie, hall)
	}

	const nodesQ = `query($ids: [ID!]!) { nodes(ids: $ids) { __typename id ... on Showtime { status } ... on Movie { title } ... on Order { orderStatus: status } } }`
	var out struct {
		Nodes []*struct{ Typename, ID, Status, Title, OrderStatus string } `json:"nodes"`
	}
	missing := nodeid.Encode(nodeid.Movie, 999999)
	a.must(alice, nodesQ, map[string]any{"ids": []string{show, movie, hall, seats[0], o.ID, missing}}, &out)
	raw, _ := json.Marshal(out.Nodes)
	if len(out.Nodes) != 6 || out.Nodes[0].ID != show || out.Nodes[0].Status != "ON_SALE" || out.Nodes[1].Title != "Dune" ||
		out.Nodes[2].ID != hall || out.Nodes[3].ID != seats[0] || out.Nodes[4].OrderStatus != "PENDING_PAYMENT" || out.Nodes[5] != nil {
		t.Fatalf("nodes = %s", raw)
	}
	var mine struct{ Node *struct{ ID string } }
	a.must(bob, `query($id: ID!) { node(id: $id) { id } }`, map[string]any{"id": o.ID}, &mine)
	if mine.Node != nil {
		t.Fatal("node(id:) gave bob alice's order")
	}
	a.wantCode("", `query($id: ID!) { node(id: $id) { id } }`, map[string]any{"id": "not-an-id"}, "BAD_USER_INPUT")
	a.wantCode("", `query($id: ID!) { showtime(id: $id) { id } }`, map[string]any{"id": movie}, "NOT_FOUND")
	a.wantCode(alice, holdQ, holdVars(movie, seats[1:2], "x"), "NOT_FOUND")
}

func TestSeatMapIdentity(t *testing.T) {
	a := newTestApp(t)
	show, seats := a.onSaleShowtime()
	other := a.createShowtime(a.createMovie("Other", 90), a.createHall("Hall 2", 1, 4), testNow.Add(50*time.Hour))
	const q = `query($id: ID!) { seatMap(showtimeId: $id) { id showtimeId available seats { id seat { id } status } } }`
	type seatMap struct {
		SeatMap struct {
			ID, ShowtimeID string
			Available      int
			Seats          []struct {
				ID   string
				Seat struct{ ID string }
			}
		}
	}
	var first, second seatMap
	a.must("", q, map[string]any{"id": show}, &first)
	a.hold(a.token("alice", "customer"), show, seats[:2], "k")
	a.must("", q, map[string]any{"id": show}, &second)
	m := first.SeatMap
	if m.ShowtimeID != show || m.ID == show || m.ID != second.SeatMap.ID || m.Seats[0].ID != second.SeatMap.Seats[0].ID ||
		m.Seats[0].ID == m.Seats[0].Seat.ID || second.SeatMap.Available != m.Available-2 {
		t.Fatalf("seat map ids: %+v then %+v", m, second.SeatMap)
	}
	var o seatMap
	a.must("", q, map[string]any{"id": other}, &o)
	if o.SeatMap.ID == m.ID {
		t.Fatal("two showtimes' seat maps share an id")
	}

	c := dialWS(t, a, "graphql-transport-ws", "")
	c.send(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{
		"query":     `subscription($id: ID!) { seatMap(showtimeId: $id) { kind showtimeId version available seats { id status } } }`,
		"variables": map[string]any{"id": show}}})
	snap := c.next()
	a.hold(a.token("bob", "customer"), show, seats[2:4], "b")
	delta := c.next()
	raw, _ := json.Marshal([]any{snap, delta})
	var evs []struct {
		Payload struct {
			Data struct {
				SeatMap struct {
					Kind, ShowtimeID string
					Available        int
					Seats            []struct{ ID, Status string }
				}
			}
		}
	}
	if err := json.Unmarshal(raw, &evs); err != nil {
		t.Fatal(err)
	}
	s, d := evs[0].Payload.Data.SeatMap, evs[1].Payload.Data.SeatMap
	if s.Kind != "SNAPSHOT" || s.ShowtimeID != show || s.Available != second.SeatMap.Available || s.Seats[2].ID != m.Seats[2].ID {
		t.Fatalf("snapshot %+v", s)
	}
	if d.Kind != "DELTA" || d.Available != s.Available-2 || len(d.Seats) != 2 || d.Seats[0].ID != m.Seats[2].ID || d.Seats[0].Status != "HELD" {
		t.Fatalf("delta %+v: want the held seats' state ids (%s…) and available %d", d, m.Seats[2].ID, s.Available-2)
	}
}

func TestMoviesBackward(t *testing.T) {
	a := newTestApp(t)
	for _, title := range []string{"A", "B", "C", "D"} {
		a.createMovie(title, 90)
	}
	type page struct {
		Movies struct {
			Edges []struct {
				Cursor string
				Node   struct{ Title string }
			}
			PageInfo struct{ HasNextPage, HasPreviousPage bool }
		}
	}
	titles := func(p page) string {
		var s []string
		for _, e := range p.Movies.Edges {
			s = append(s, e.Node.Title)
		}
		return strings.Join(s, "")
	}
	const q = `query($last: Int, $before: String) { movies(last: $last, before: $before) { edges { cursor node { title } } pageInfo { hasNextPage hasPreviousPage } } }`
	var last page
	a.must("", q, map[string]any{"last": 2}, &last)
	if titles(last) != "CD" || !last.Movies.PageInfo.HasPreviousPage || last.Movies.PageInfo.HasNextPage {
		t.Fatalf("last 2: %s %+v", titles(last), last.Movies.PageInfo)
	}
	var before page
	a.must("", q, map[string]any{"last": 2, "before": last.Movies.Edges[0].Cursor}, &before)
	if titles(before) != "AB" || before.Movies.PageInfo.HasPreviousPage || !before.Movies.PageInfo.HasNextPage {
		t.Fatalf("last 2 before C: %s %+v", titles(before), before.Movies.PageInfo)
	}
}

func TestCORSForClientLibraries(t *testing.T) {
	a := newTestApp(t, "-allowed-origins", "https://tickets.example")
	req, _ := http.NewRequest("OPTIONS", a.srv.URL+"/query", nil)
	req.Header.Set("Origin", "https://tickets.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	asked := "content-type, apollographql-client-name, apollographql-client-version, traceparent, sentry-trace, baggage"
	req.Header.Set("Access-Control-Request-Headers", asked)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := resp.Header
	if resp.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "https://tickets.example" ||
		h.Get("Access-Control-Allow-Headers") != asked || h.Get("Access-Control-Max-Age") == "" {
		t.Fatalf("preflight: %d %v", resp.StatusCode, h)
	}
	req.Header.Set("Origin", "https://evil.example")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Access-Control-Allow-Origin") != "" || resp.Header.Get("Access-Control-Allow-Headers") != "" {
		t.Fatalf("preflight from another origin: %v", resp.Header)
	}
}

func TestHTTPCachingOfCatalogReads(t *testing.T) {
	a := newTestApp(t)
	show, _ := a.onSaleShowtime()
	get := func(query string, vars map[string]any, header http.Header) (int, http.Header, []byte) {
		v, _ := json.Marshal(vars)
		return a.request("GET", "/query?"+url.Values{"query": {query}, "variables": {string(v)}}.Encode(), nil, header)
	}
	const q = `query($id: ID!) { showtime(id: $id) { id startsAt movie { title } } }`
	vars := map[string]any{"id": show}
	get(q, vars, nil) // entities from MySQL: not from the local level yet
	// An invalidation of the sale just opened (the outbox's, delivered when it comes) may
	// drop what that read cached: read again until the local level answers, for a while.
	status, h, body := get(q, vars, nil)
	for deadline := time.Now().Add(3 * time.Second); !strings.HasPrefix(h.Get("Cache-Control"), "public") && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		status, h, body = get(q, vars, nil)
	}
	maxAge := strings.TrimPrefix(h.Get("Cache-Control"), "public, max-age=")
	if status != 200 || maxAge == h.Get("Cache-Control") || maxAge == "0" || h.Get("ETag") == "" {
		t.Fatalf("catalog GET: %d Cache-Control %q ETag %q", status, h.Get("Cache-Control"), h.Get("ETag"))
	}
	if strings.Contains(string(body), "throttleStatus") {
		t.Fatalf("a shared answer carries a client's budget: %s", body)
	}
	_, h2, body2 := get(q, vars, nil)
	if h2.Get("ETag") != h.Get("ETag") || string(body2) != string(body) {
		t.Fatal("the same catalog read gave another ETag or other bytes")
	}
	status, _, body = get(q, vars, http.Header{"If-None-Match": {h.Get("ETag")}})
	if status != http.StatusNotModified || len(body) != 0 {
		t.Fatalf("If-None-Match: %d with %d bytes, want 304 and no body", status, len(body))
	}
	for name, c := range map[string]struct {
		query  string
		header http.Header
	}{
		"SeatState":   {`query($id: ID!) { seatMap(showtimeId: $id) { version } }`, nil},
		"SignedIn":    {q, http.Header{"Authorization": {"Bearer " + a.token("alice", "customer")}}},
		"WithAnError": {`query($id: ID!) { showtime(id: $id) { id } movie(id: "x") { id } }`, nil},
	} {
		if _, h, _ := get(c.query, vars, c.header); h.Get("Cache-Control") != "private, no-store" || h.Get("ETag") != "" {
			t.Errorf("%s: Cache-Control %q ETag %q, want private, no-store", name, h.Get("Cache-Control"), h.Get("ETag"))
		}
	}
	if _, h, _ := a.request("POST", "/query", []byte(`{"query":"{ __typename }"}`), nil); h.Get("Cache-Control") != "private, no-store" {
		t.Errorf("POST: Cache-Control %q", h.Get("Cache-Control"))
	}
}
