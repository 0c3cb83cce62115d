package httpapi

import (
	"encoding/json"
	"testing"

	"github.com/vektah/gqlparser/v2"

	"seatflow/graph"
)

func TestQueryCost(t *testing.T) {
	schema := graph.NewExecutableSchema(graph.Config{Resolvers: &graph.Resolver{}}).Schema()
	cases := []struct {
		name, query string
		vars        map[string]any
		want        int
		// wantLookups is the least the operation costs, a point per object looked up by id.
		wantLookups int
	}{
		{"TypenameIsFree", `{ __typename }`, nil, 0, 0},
		{"AnObject", `{ movie(id: "1") { id title __typename } }`, nil, 1, 1},
		{"ConnectionSizedByFirst", `{ movies(first: 5) { totalCount edges { node { id } } } }`, nil, 1 + 1 + 5*2, 0},
		{"FirstFromAVariable", `query($n: Int) { movies(first: $n) { edges { node { id } } } }`, map[string]any{"n": json.Number("50")}, 1 + 1 + 50*2, 0},
		{"ConnectionDefaultPage", `{ movies { edges { node { id } } } }`, nil, 1 + 1 + 20*2, 0},
		{"HallSeats", `{ showtime(id: "1") { hall { seats { id } } } }`, nil, 1 + 1 + 1 + 300, 1},
		{"CountArgument", `{ bestSeats(showtimeId: "1", count: 4) { id } }`, nil, 1 + 4, 0},
		{"NestedListsMultiply", `{ movie(id: "1") { showtimes { movie { showtimes { id } } } } }`, nil, 1 + 1 + 50*(1+1+1+50), 1},
		{"FragmentsCounted", `fragment F on Movie { showtimes { id } } { movie(id: "1") { ...F } a: movie(id: "2") { ...F } }`, nil, 2 * (1 + 1 + 50), 2},
		{"ScalarListCostsOne", `{ movie(id: "1") { genres } }`, nil, 1 + 1, 1},
		{"IntrospectionFlat", `{ __schema { types { name fields { name } } } }`, nil, schemaCost, 0},
		{"HugeFirstSaturates", `{ movies(first: 2147483647) { edges { node { showtimes { id } } } } }`, nil, 1<<31 - 1, 0},
		{"NodesSizedByTheirIds", `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, map[string]any{"ids": []any{"a", "b", "c"}}, 1 + 3, 3},
		{"NodesOfLiteralIds", `{ nodes(ids: ["a", "b"]) { id ... on Movie { showtimes { id } } } }`, nil, 1 + 2*(1+1+50), 2},
		{"SigningChargedWhateverTheAnswer", `{ a: ticketWalletLink(ticketId: "1") b: ticketWalletLink(ticketId: "2") }`, nil, 2 * 50, 2 * 50},
		{"EachLookupByIDCounts", `{ a: node(id: "1") { id } b: movie(id: "2") { id } c: showtime(id: "3") { id } }`, nil, 3, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc, err := gqlparser.LoadQuery(schema, c.query)
			if err != nil {
				t.Fatal(err)
			}
			if got, lookups := queryCost(schema, doc.Operations[0], c.vars); got != c.want || lookups != c.wantLookups {
				t.Fatalf("cost %d with %d lookups, want %d with %d", got, lookups, c.want, c.wantLookups)
			}
		})
	}
}

func TestObjectsIn(t *testing.T) {
	for data, want := range map[string]int{
		`{}`:                             0,
		`{"movie":{"id":"1"}}`:           1,
		`{"a":[{"x":1},{"y":2}],"b":{}}`: 3,
	} {
		if got := objectsIn([]byte(data)); got != want {
			t.Errorf("objectsIn(%s) = %d, want %d", data, got, want)
		}
	}
}
