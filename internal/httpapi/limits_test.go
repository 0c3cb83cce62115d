package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"seatflow"
)

// repeat is n copies of s, space separated.
func repeat(s string, n int) string { return strings.TrimSpace(strings.Repeat(s+" ", n)) }

// aliases is n aliased __typename selections.
func aliases(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "a%d: __typename ", i)
	}
	return b.String()
}

// TestDocumentLimits: each limit a document meets before it runs lets a document at the
// limit through and refuses one over it with its code (testOptions: 30 fields, 5 aliases,
// depth 4, cost 1000).
func TestDocumentLimits(t *testing.T) {
	a := newAPI(t, nil)
	vars := map[string]any{"s": a.showtimeID(), "m": a.movieID()}
	// A showtime's hall's seats cost 1 + 1 + 300 (SeatMap and Hall lists are priced at 300).
	seats303 := `showtime(id: $s) { hall { seats { id } } }`
	cases := []struct {
		name, query, want string
	}{
		{"FieldsAtTheLimit", "{ " + repeat("__typename", 30) + " }", ""},
		{"FieldsOverTheLimit", "{ " + repeat("__typename", 31) + " }", seatflow.EFIELDLIMIT},
		{"FieldsInFragmentsCounted", "{ " + repeat("__typename", 29) + " ... on Query { __typename __typename } }", seatflow.EFIELDLIMIT},
		{"AliasesAtTheLimit", "{ " + aliases(5) + " }", ""},
		{"AliasesOverTheLimit", "{ " + aliases(6) + " }", seatflow.EALIASLIMIT},
		{"AliasOfItsOwnNameNotCounted", "{ " + aliases(5) + " __typename: __typename }", ""},
		// Depth counts the levels of selection sets: showtime, movie, showtimes, movie.
		{"DepthAtTheLimit", `query($s: ID!) { showtime(id: $s) { movie { showtimes { movie { id } } } } }`, ""},
		{"DepthOverTheLimit", `query($s: ID!) { showtime(id: $s) { movie { showtimes { movie { showtimes { id } } } } } }`, "DEPTH_LIMIT_EXCEEDED"},
		{"DepthThroughFragments", `query($s: ID!) { showtime(id: $s) { ...M } } fragment M on Showtime { movie { showtimes { movie { showtimes { id } } } } }`, "DEPTH_LIMIT_EXCEEDED"},
		{"IntrospectionDepthNotCounted", `{ __schema { types { fields { type { ofType { ofType { name } } } } } } }`, ""},
		{"CostAtTheLimit", `query($s: ID!, $m: ID!) { a: ` + seats303 + ` b: ` + seats303 + ` c: ` + seats303 +
			` movies(first: 44) { edges { node { id } } } movie(id: $m) { id } }`, ""},
		{"CostOverTheLimit", `query($s: ID!, $m: ID!) { a: ` + seats303 + ` b: ` + seats303 + ` c: ` + seats303 +
			` movies(first: 44) { edges { node { id } } } movie(id: $m) { id } d: movie(id: $m) { id } }`, "COMPLEXITY_LIMIT_EXCEEDED"},
		{"OneMutation", `mutation($m: ID!) { setMovieStatus(id: $m, status: LISTED) { id } __typename }`, seatflow.EUNAUTHENTICATED},
		{"TwoMutations", `mutation($m: ID!) { a: setMovieStatus(id: $m, status: LISTED) { id } b: setMovieStatus(id: $m, status: DELISTED) { id } }`, seatflow.EMULTIPLEMUTATIONS},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			used := map[string]any{}
			for k, v := range vars {
				if strings.Contains(c.query, "$"+k) {
					used[k] = v
				}
			}
			wantAnswer(t, a.query(t, c.query, used, nil), http.StatusOK, c.want)
		})
	}
}

// TestTokenLimit: the parser reads at most MaxTokens tokens of a document; one more is a
// parse error, answered 200 with application/json and 400 with GraphQL's own media type.
func TestTokenLimit(t *testing.T) {
	a := newAPI(t, func(o *Options) { o.MaxTokens, o.MaxFields = 50, 1000 })
	// "{", 48 names, "}": 50 tokens.
	atLimit, over := "{ "+repeat("__typename", 48)+" }", "{ "+repeat("__typename", 49)+" }"
	graphqlResponse := http.Header{"Accept": {mediaGraphQLResponse}}
	cases := []struct {
		name, query string
		header      http.Header
		status      int
		want        string
	}{
		{"AtTheLimit", atLimit, nil, http.StatusOK, ""},
		{"OverTheLimit", over, nil, http.StatusOK, "GRAPHQL_PARSE_FAILED"},
		{"OverTheLimitGraphQLResponse", over, graphqlResponse, http.StatusBadRequest, "GRAPHQL_PARSE_FAILED"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantAnswer(t, a.query(t, c.query, nil, c.header), c.status, c.want)
		})
	}
}

// TestAnswerLimits: an answer's data past MaxResponseBytes is replaced by
// RESPONSE_TOO_LARGE; errors past MaxErrors are counted in one TOO_MANY_ERRORS; a GET's
// query string past MaxURLBytes is 414.
func TestAnswerLimits(t *testing.T) {
	a := newAPI(t, func(o *Options) { o.MaxResponseBytes, o.MaxErrors, o.MaxURLBytes = 64, 3, 64 })
	// {"NAME":"Query"} is 64 bytes with a name of 52 characters.
	name52 := strings.Repeat("n", 52)
	badIDs := func(n int) string { // n fields, each refused with BAD_USER_INPUT (a malformed id)
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "m%d: movie(id: \"x\") { id } ", i)
		}
		return "{ " + b.String() + "}"
	}
	t.Run("DataAtTheLimit", func(t *testing.T) {
		got := a.query(t, "{ "+name52+": __typename }", nil, nil)
		wantAnswer(t, got, http.StatusOK, "")
		if got.Data[name52] != "Query" {
			t.Errorf("data = %v, want the typename", got.Data)
		}
	})
	t.Run("DataOverTheLimit", func(t *testing.T) {
		got := a.query(t, "{ "+name52+"x: __typename }", nil, nil) // 65 bytes
		wantAnswer(t, got, http.StatusOK, seatflow.ERESPONSETOOLARGE)
		if got.Data != nil {
			t.Errorf("data = %v, want none", got.Data)
		}
	})
	t.Run("ErrorsAtTheLimit", func(t *testing.T) {
		got := a.query(t, badIDs(3), nil, nil)
		if codes := fmt.Sprint(got.codes()); codes != "[BAD_USER_INPUT BAD_USER_INPUT BAD_USER_INPUT]" {
			t.Errorf("codes = %s, want three BAD_USER_INPUT", codes)
		}
	})
	t.Run("ErrorsOverTheLimit", func(t *testing.T) {
		got := a.query(t, badIDs(5), nil, nil)
		if codes := fmt.Sprint(got.codes()); codes != "[BAD_USER_INPUT BAD_USER_INPUT BAD_USER_INPUT TOO_MANY_ERRORS]" {
			t.Errorf("codes = %s, want three BAD_USER_INPUT then TOO_MANY_ERRORS", codes)
		}
		if n := len(got.Errors); n == 4 && got.Errors[3].Message != "2 more errors not shown" {
			t.Errorf("last error = %q, want \"2 more errors not shown\"", got.Errors[3].Message)
		}
	})
	get := func(t *testing.T, rawQuery string) *answer {
		req, err := http.NewRequest(http.MethodGet, a.srv.URL+"/query?"+rawQuery, nil)
		if err != nil {
			t.Fatal(err)
		}
		return a.do(t, req)
	}
	base := "query=%7B__typename%7D&pad=" // 27 bytes
	t.Run("URLAtTheLimit", func(t *testing.T) {
		wantAnswer(t, get(t, base+strings.Repeat("x", 64-len(base))), http.StatusOK, "")
	})
	t.Run("URLOverTheLimit", func(t *testing.T) {
		wantAnswer(t, get(t, base+strings.Repeat("x", 65-len(base))), http.StatusRequestURITooLong, seatflow.EBADREQUEST)
	})
}

// TestCostBudget: a client may spend its whole budget at once; a query costing more is
// 429 RATE_LIMITED with Retry-After and extensions.retryAfterMs. An answer reports its
// cost in extensions.cost.
func TestCostBudget(t *testing.T) {
	a := newAPI(t, nil)
	a.Budget.Capacity, a.Budget.Restore = 303, 1
	vars := map[string]any{"s": a.showtimeID(), "m": a.movieID()}
	seats := `query($s: ID!) { showtime(id: $s) { hall { seats { id } } } }` // costs 303
	bearer := func(user string) http.Header {
		token, err := a.Auth.Issue(user, "customer", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return http.Header{"Authorization": {"Bearer " + token}}
	}

	t.Run("AtTheBudget", func(t *testing.T) {
		got := a.query(t, seats, map[string]any{"s": vars["s"]}, bearer("at-budget"))
		wantAnswer(t, got, http.StatusOK, "")
		cost, _ := got.Extensions["cost"].(map[string]any)
		status, _ := cost["throttleStatus"].(map[string]any)
		// actual: the showtime, its hall and 3 seats.
		if cost["requestedQueryCost"] != 303.0 || cost["actualQueryCost"] != 5.0 || status["maximumAvailable"] != 303.0 {
			t.Errorf("extensions.cost = %v, want requested 303, actual 5, maximum 303", cost)
		}
	})
	t.Run("OverTheBudget", func(t *testing.T) {
		got := a.query(t, `query($s: ID!, $m: ID!) { showtime(id: $s) { hall { seats { id } } } movie(id: $m) { id } }`, vars,
			bearer("over-budget"))
		wantAnswer(t, got, http.StatusTooManyRequests, seatflow.ERATELIMITED)
		if s, err := strconv.Atoi(got.header.Get("Retry-After")); err != nil || s < 1 {
			t.Errorf("Retry-After = %q, want whole seconds ≥ 1", got.header.Get("Retry-After"))
		}
		if len(got.Errors) == 1 && got.Errors[0].Extensions["retryAfterMs"] == nil {
			t.Errorf("extensions = %v, want retryAfterMs", got.Errors[0].Extensions)
		}
		if got.Data != nil {
			t.Errorf("data = %v, want none: the query did not run", got.Data)
		}
	})
	t.Run("ClientsHaveBudgetsOfTheirOwn", func(t *testing.T) {
		wantAnswer(t, a.query(t, seats, map[string]any{"s": vars["s"]}, bearer("another")), http.StatusOK, "")
	})
}

// TestInflightCost: heavy operations (heavyCost points or more) share MaxInflightCost
// points of execution; one that cannot start in time is SERVICE_UNAVAILABLE, cheaper
// ones, subscriptions and uncharged operations never wait.
func TestInflightCost(t *testing.T) {
	const maxPoints = 2 * heavyCost
	cases := []struct {
		name      string
		requested int
		charged   bool
		op        ast.Operation
		busy      int64 // points already executing
		wantRun   bool
	}{
		{"HeavyWithRoom", heavyCost, true, ast.Query, heavyCost, true},
		{"HeavyWithoutRoom", heavyCost, true, ast.Query, heavyCost + 1, false},
		{"CheapNeverWaits", heavyCost - 1, true, ast.Query, maxPoints, true},
		{"LargerThanTheBoundRunsAlone", 10 * maxPoints, true, ast.Query, 0, true},
		{"LargerThanTheBoundWaitsForAll", 10 * maxPoints, true, ast.Query, 1, false},
		{"SubscriptionNeverWaits", heavyCost, true, ast.Subscription, maxPoints, true},
		{"UnchargedNeverWaits", heavyCost, false, ast.Query, maxPoints, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ext := newInflightCost(maxPoints)
			if c.busy > 0 && !ext.sem.TryAcquire(c.busy) {
				t.Fatal("could not take the busy points")
			}
			oc := &graphql.OperationContext{Operation: &ast.OperationDefinition{Operation: c.op}}
			oc.Stats.SetExtension(costStats, &opCost{requested: c.requested, charged: c.charged})
			// The request's own deadline ends the wait early (heavyWait is the longest).
			ctx, cancel := context.WithTimeout(graphql.WithOperationContext(context.Background(), oc), 200*time.Millisecond)
			defer cancel()
			ran := false
			resp := ext.InterceptResponse(ctx, func(context.Context) *graphql.Response {
				ran = true
				return &graphql.Response{}
			})
			if ran != c.wantRun {
				t.Fatalf("ran = %v, want %v (answer %+v)", ran, c.wantRun, resp)
			}
			if !c.wantRun && (len(resp.Errors) != 1 || resp.Errors[0].Extensions["code"] != seatflow.EUNAVAILABLE) {
				t.Errorf("answer = %+v, want SERVICE_UNAVAILABLE", resp)
			}
			// What ran gave its points back: the whole bound is free again.
			ext.sem.Release(c.busy)
			if !ext.sem.TryAcquire(maxPoints) {
				t.Errorf("points still taken after the operation ended")
			}
		})
	}
	t.Run("NoBound", func(t *testing.T) {
		ran := false
		newInflightCost(0).InterceptResponse(context.Background(), func(context.Context) *graphql.Response {
			ran = true
			return nil
		})
		if !ran {
			t.Error("with MaxInflightCost 0 an operation must run")
		}
	})
}
