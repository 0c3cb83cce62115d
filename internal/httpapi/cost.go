package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"seatflow"
	"seatflow/internal/auth"
	"seatflow/internal/respcache"
	"seatflow/internal/throttle"
)

// The cost model, as Shopify's and GitHub's APIs count it: an object costs 1, a scalar
// or enum nothing (__typename included), a list its size times what one element costs.
// A list's size is its size argument (first, last, count) when it has one, else the bound
// below; a connection's first (on a field that is not a list) sizes its edges (entries of
// 0 below). Introspection costs a flat amount: the schema it describes is finite. The
// bounds are estimates of the largest real list: a hall of 300 seats, a day's showtimes.
var listSizes = map[string]int{
	"Query.movies":             20, // first's default
	"Query.reconcileRuns":      20,
	"Query.showtimes":          50, // a day's showtimes
	"Query.cinemas":            20, // a chain's cinemas
	"Cinema.halls":             20,
	"Cinema.showtimes":         50, // a day's showtimes of one cinema
	"Query.myOrders":           50,
	"Movie.showtimes":          50,
	"Hall.seats":               300, // a large hall (halls hold at most 2,000)
	"SeatMap.seats":            300,
	"SeatMapEvent.seats":       300,
	"Order.seats":              seatflow.MaxSeatsPerOrder,
	"Order.lines":              seatflow.MaxSeatsPerOrder,
	"Showtime.prices":          len(seatflow.SeatKinds) * len(seatflow.TicketTypes), // one per (kind, type) at most
	"SalesReport.byTicketType": len(seatflow.TicketTypes),
	"Query.salesReport":        100, // a cinema's showtimes of a week or two
	"MovieConnection.edges":    0,   // sized by movies' first
	"Order.tickets":            seatflow.MaxSeatsPerOrder,
	"Query.revokedTickets":     300, // a large hall's tickets
	"Query.ticketKeys":         5,   // the signing key and those rotated out in a showtime's life
	"Mutation.uploadCheckIns":  seatflow.MaxUploadScans,
}

// signingCosts are the flat costs of the scalar fields that sign with an RSA key (about 2 ms
// of CPU each, internal/googlewallet): charged whatever the answer holds, as lookups are,
// so a hundred aliases of one cannot make a client's request cheap and the server busy.
var signingCosts = map[string]int{
	"Query.ticketWalletLink": 50,
}

// defaultListSize is the size of a list the model knows nothing about.
const defaultListSize = 20

// Flat costs of introspection.
const (
	schemaCost = 500
	typeCost   = 10
)

// queryCost is the requested cost of an operation with its variables, and the least it
// costs whatever it finds: a point per object looked up by id (node, movie, showtime: one;
// nodes: one per id), since a missing id is as much work as a found one, and the cost of
// each field that signs (signingCosts).
func queryCost(schema *ast.Schema, op *ast.OperationDefinition, vars map[string]any) (cost, lookups int) {
	w := costWalk{schema: schema, vars: vars, visiting: map[string]bool{}, lookups: new(int)}
	cost = w.set(op.SelectionSet, defaultListSize)
	return cost, *w.lookups
}

type costWalk struct {
	schema   *ast.Schema
	vars     map[string]any
	visiting map[string]bool // fragments being walked (validation refuses cycles; this is a guard)
	lookups  *int            // objects looked up by id
}

// set is the cost of a selection set; page sizes its connection lists.
func (w costWalk) set(set ast.SelectionSet, page int) int {
	total := 0
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			total = saturate(total, w.field(s, page))
		case *ast.InlineFragment:
			total = saturate(total, w.set(s.SelectionSet, page))
		case *ast.FragmentSpread:
			if s.Definition == nil || w.visiting[s.Name] {
				continue
			}
			w.visiting[s.Name] = true
			total = saturate(total, w.set(s.Definition.SelectionSet, page))
			delete(w.visiting, s.Name)
		}
	}
	return total
}

func (w costWalk) field(f *ast.Field, page int) int {
	switch f.Name {
	case "__typename":
		return 0
	case "__schema":
		return schemaCost
	case "__type":
		return typeCost
	}
	if f.Definition == nil || f.ObjectDefinition == nil {
		return 1
	}
	if c := signingCosts[f.ObjectDefinition.Name+"."+f.Name]; c > 0 {
		*w.lookups = saturate(*w.lookups, c)
		return c
	}
	size, known := listSizes[f.ObjectDefinition.Name+"."+f.Name]
	switch {
	case !known:
		size = defaultListSize
	case size == 0:
		size = page
	}
	args := f.ArgumentMap(w.vars)
	for _, name := range []string{"first", "last", "count"} {
		if n := intArg(args[name]); n > 0 {
			size = n
		}
	}
	// Lookups by id are root fields (node, nodes, movie, ...): no list multiplies them.
	if ids, ok := args["ids"].([]any); ok {
		size = len(ids)
		*w.lookups = saturate(*w.lookups, len(ids))
	} else if _, ok := args["id"]; ok {
		*w.lookups = saturate(*w.lookups, 1)
	}
	one := 0
	if def := w.schema.Types[f.Definition.Type.Name()]; def != nil && (def.Kind == ast.Object || def.Kind == ast.Interface || def.Kind == ast.Union) {
		one = saturate(1, w.set(f.SelectionSet, size))
	}
	if f.Definition.Type.Elem == nil {
		return one
	}
	return saturate(1, mul(size, one))
}

// intArg reads an Int argument however it arrived (literal, JSON variable); 0 if none.
func intArg(v any) int {
	switch n := v.(type) {
	case int64:
		return int(min(n, math.MaxInt32))
	case int:
		return min(n, math.MaxInt32)
	case json.Number:
		i, err := n.Int64()
		if err == nil {
			return int(min(i, math.MaxInt32))
		}
	}
	return 0
}

func saturate(a, b int) int {
	if a > math.MaxInt32-b {
		return math.MaxInt32
	}
	return a + b
}

func mul(a, b int) int {
	if b != 0 && a > math.MaxInt32/b {
		return math.MaxInt32
	}
	return a * b
}

// costLimit prices every operation before it runs: it refuses one over the limit
// (COMPLEXITY_LIMIT_EXCEEDED), charges the client's budget (RATE_LIMITED, HTTP 429 with
// Retry-After, when it is empty) and, for a guest session, its address' crowd budget too
// (the backstop behind every session of one address), and reports the cost in
// extensions.cost: what was asked (requestedQueryCost), what the answer really held
// (actualQueryCost: one point per object returned, and at least a point per id looked up)
// and the budget (throttleStatus: never more than the budget, nor than the address'
// backstop leaves the session). The difference is given back.
type costLimit struct {
	Limit  int
	Budget *throttle.Budget
	// Crowd is the per-address budget of guest sessions; nil or off: none.
	Crowd  *throttle.Budget
	schema *ast.Schema
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
	graphql.ResponseInterceptor
} = (*costLimit)(nil)

// opCost is what costLimit keeps about one operation between pricing and answering it.
type opCost struct {
	requested int
	least     int // what is charged whatever the answer holds (lookups by id)
	status    throttle.Status
	crowd     *throttle.Status // the address' backstop, for a guest session
	charged   bool
}

// view is the budget as the client sees it: its own, and no more than the backstop of
// its address leaves it.
func (o *opCost) view() throttle.Status {
	st := o.status
	if o.crowd != nil {
		st = st.Available(min(st.CurrentlyAvailable, o.crowd.CurrentlyAvailable))
		st.RetryAfter = max(st.RetryAfter, o.crowd.RetryAfter)
	}
	return st
}

const costStats = "cost"

// ExtensionName names the extension for gqlgen.
func (*costLimit) ExtensionName() string { return "CostLimit" }

// Validate keeps the schema the costs are read from.
func (c *costLimit) Validate(es graphql.ExecutableSchema) error {
	c.schema = es.Schema()
	return nil
}

// MutateOperationContext prices the operation and charges the client.
func (c *costLimit) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	if oc.Operation == nil {
		return nil
	}
	cost, lookups := queryCost(c.schema, oc.Operation, oc.Variables)
	cost = max(cost, 1) // a request is never free
	if cost > c.Limit {
		return &gqlerror.Error{Message: fmt.Sprintf("the query costs %d points; the limit is %d: ask for fewer items (first, count) or fewer fields",
			cost, c.Limit), Extensions: map[string]any{"code": seatflow.ECOMPLEXITYLIMIT, "cost": map[string]any{"requestedQueryCost": cost}}}
	}
	st := stateOf(ctx)
	if st == nil {
		return nil
	}
	ok, status, err := c.Budget.Spend(ctx, st.client, cost)
	spent := &opCost{requested: cost, least: lookups, status: status}
	whose := "query cost budget exhausted"
	if ok && err == nil && st.crowd != "" && c.Crowd.On() {
		var crowd throttle.Status
		ok, crowd, err = c.Crowd.Spend(ctx, st.crowd, cost)
		spent.crowd = &crowd
		if !ok || err != nil { // the session's points go back: the query does not run
			spent.status = status.Available(status.CurrentlyAvailable + c.Budget.Refund(st.client, cost))
			whose = "query cost budget of this address exhausted (every guest session behind it shares it)"
		}
	}
	spent.charged = ok && err == nil
	oc.Stats.SetExtension(costStats, spent)
	if err != nil {
		return &gqlerror.Error{Message: seatflow.ErrorMessage(err), Extensions: map[string]any{"code": seatflow.ErrorCode(err)}}
	}
	if !ok {
		status := spent.view()
		return &gqlerror.Error{Message: fmt.Sprintf("%s: this query costs %d points, %d are available, %d come back per second; try again in %s",
			whose, cost, status.CurrentlyAvailable, int(status.RestoreRate), status.RetryAfter.Round(100_000_000)),
			Extensions: map[string]any{"code": seatflow.ERATELIMITED, "retryAfterMs": status.RetryAfter.Milliseconds(),
				"cost": costExtension(cost, 0, status)}}
	}
	return nil
}

// InterceptResponse reports the cost in the response and gives back what was not used.
// A subscription is charged when it starts; its events carry no cost.
func (c *costLimit) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	if !graphql.HasOperationContext(ctx) {
		return resp // a request refused before it was parsed
	}
	oc := graphql.GetOperationContext(ctx)
	st := stateOf(ctx)
	spent, _ := oc.Stats.GetExtension(costStats).(*opCost)
	if resp == nil || st == nil || spent == nil || !spent.charged || oc.Operation.Operation == ast.Subscription {
		return resp
	}
	actual := min(max(objectsIn(resp.Data), spent.least, 1), spent.requested)
	// Only what a budget kept is reported back: a point given back and dropped is not
	// the client's.
	spent.status = spent.status.Available(spent.status.CurrentlyAvailable + c.Budget.Refund(st.client, spent.requested-actual))
	if spent.crowd != nil {
		crowd := spent.crowd.Available(spent.crowd.CurrentlyAvailable + c.Crowd.Refund(st.crowd, spent.requested-actual))
		spent.crowd = &crowd
	}
	if resp.Extensions == nil {
		resp.Extensions = map[string]any{}
	}
	cost := costExtension(spent.requested, actual, spent.view())
	if respcache.Shared(ctx) { // the same bytes go to every client: no client's budget in them
		cost.status = nil
	}
	resp.Extensions["cost"] = cost
	return resp
}

// costReport is extensions.cost. It writes its own JSON: it is in every answer.
type costReport struct {
	requested, actual int
	status            *throttle.Status // nil in an answer shared by every client
}

func costExtension(requested, actual int, st throttle.Status) *costReport {
	return &costReport{requested: requested, actual: actual, status: &st}
}

// MarshalJSON writes {"requestedQueryCost":…,"actualQueryCost":…,"throttleStatus":{…}}.
func (c *costReport) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 160)
	b = append(b, `{"requestedQueryCost":`...)
	b = strconv.AppendInt(b, int64(c.requested), 10)
	b = append(b, `,"actualQueryCost":`...)
	b = strconv.AppendInt(b, int64(c.actual), 10)
	if st := c.status; st != nil {
		b = append(b, `,"throttleStatus":{"maximumAvailable":`...)
		b = strconv.AppendInt(b, int64(st.MaximumAvailable), 10)
		b = append(b, `,"currentlyAvailable":`...)
		b = strconv.AppendInt(b, int64(st.CurrentlyAvailable), 10)
		b = append(b, `,"restoreRate":`...)
		b = strconv.AppendFloat(b, st.RestoreRate, 'f', -1, 64)
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// objectsIn counts the objects of a JSON answer by its opening braces, the data object
// itself left out (a brace inside a string counts too: a title with one costs a point).
func objectsIn(data []byte) int {
	return max(bytes.Count(data, openBrace)-1, 0)
}

var openBrace = []byte{'{'}

type stateKey struct{}

// requestState is what the extensions of one HTTP request (or of one websocket, once its
// connection_init named the caller) share: the client its cost is charged to, the crowd
// budget of its address for a guest session, the address, and a persisted query to keep
// once it passed every check.
type requestState struct {
	client   string
	crowd    string
	addr     string
	register string
}

// withState gives a request the state its extensions share, for the client the request
// comes from, and its context the client's address (auth.ClientAddr).
func withState(r *http.Request, addr func(*http.Request) string) *http.Request {
	ctx := auth.WithClientAddr(r.Context(), addr(r))
	return r.WithContext(withClient(ctx))
}

// withClient gives ctx the state of the caller its identity names (auth.ClientAddr's
// address): the signed-in user; a guest session, with its address' crowd budget; else
// the address.
func withClient(ctx context.Context) context.Context {
	addr := auth.ClientAddr(ctx)
	st := &requestState{client: "addr:" + addr, addr: addr}
	if u, err := auth.RequireUser(ctx); err == nil {
		st.client = "user:" + strconv.Quote(u.ID)
	} else if g := auth.GuestOf(ctx); g != nil {
		st.client, st.crowd = "guest:"+strconv.Quote(g.ID), "crowd:"+addr
	}
	return context.WithValue(ctx, stateKey{}, st)
}

func stateOf(ctx context.Context) *requestState {
	st, _ := ctx.Value(stateKey{}).(*requestState)
	return st
}
