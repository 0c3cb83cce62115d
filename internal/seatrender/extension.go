package seatrender

import (
	"bytes"
	"context"
	"io"

	"github.com/99designs/gqlgen/graphql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"seatflow"
	"seatflow/graph/model"
	"seatflow/internal/nodeid"
)

// Maps is where seat maps come from (package seats): the map with its version, read at
// one instant.
type Maps interface {
	SeatMap(ctx context.Context, showID int) (*seatflow.SeatMap, error)
}

// Versions tells the version a read of a showtime's map must not fall below (package
// live: known from the live subscription when it is healthy, else read from Redis).
type Versions interface {
	CurrentVersion(ctx context.Context, showID int) (int, error)
}

// Extension answers the root field Query.seatMap with the renderer and the memo instead of
// the executor: it asks the showtime's current version, serves the rendering of that
// version if the memo has it, and otherwise reads the map, renders it and keeps it.
// Anything it cannot answer (an unknown selection, an argument the executor must reject, a
// failed read) goes to the executor, which answers as it always does. Without a Memo every
// request renders.
type Extension struct {
	Maps     Maps
	Versions Versions
	Memo     *Memo
}

var _ interface {
	graphql.HandlerExtension
	graphql.RootFieldInterceptor
} = Extension{}

var rendersTotal = promauto.NewCounterVec(prometheus.CounterOpts{
	Namespace: "seatflow", Subsystem: "seatmap", Name: "renders_total",
	Help: "seatMap query answers by outcome: memo (a rendering of the current version reused), rendered, executor (left to gqlgen).",
}, []string{"outcome"})

// The outcomes' counters, looked up once (a lookup by label hashes it on every read).
var (
	answeredFromMemo = rendersTotal.WithLabelValues("memo")
	answeredRendered = rendersTotal.WithLabelValues("rendered")
	answeredExecutor = rendersTotal.WithLabelValues("executor")
)

// ExtensionName names the extension for gqlgen.
func (Extension) ExtensionName() string { return "SeatMapRenderer" }

// Validate accepts any schema.
func (Extension) Validate(graphql.ExecutableSchema) error { return nil }

// InterceptRootField answers Query.seatMap; every other root field goes to next.
func (e Extension) InterceptRootField(ctx context.Context, next graphql.RootResolver) graphql.Marshaler {
	// gqlgen puts the field's name in RootFieldContext.Object; the type is the field
	// context's.
	rc, fc := graphql.GetRootFieldContext(ctx), graphql.GetFieldContext(ctx)
	if rc == nil || fc == nil || fc.Object != "Query" || rc.Field.Name != "seatMap" {
		return next(ctx)
	}
	oc := graphql.GetOperationContext(ctx)
	plan := e.Memo.plan(oc, rc.Field)
	if plan == nil {
		answeredExecutor.Inc()
		return next(ctx)
	}
	showID, err := model.DecodeID(rc.Field.ArgumentMap(oc.Variables)["showtimeId"], nodeid.Showtime)
	if err != nil {
		return next(ctx)
	}
	if b, ok := e.memoised(ctx, showID, plan.Key()); ok {
		answeredFromMemo.Inc()
		return raw(b)
	}
	render := func(ctx context.Context) (int, []byte, error) {
		m, err := e.Maps.SeatMap(ctx, showID)
		if err != nil {
			return 0, nil, err
		}
		var buf bytes.Buffer
		buf.Grow(64 + 96*len(m.Seats))
		plan.WriteSeatMap(&buf, m)
		answeredRendered.Inc()
		return m.Version, buf.Bytes(), nil
	}
	var b []byte
	if e.Memo != nil {
		b, err = e.Memo.Render(ctx, showID, plan.Key(), render)
	} else {
		_, b, err = render(ctx)
	}
	if err != nil {
		answeredExecutor.Inc()
		return next(ctx)
	}
	return raw(b)
}

// memoised returns the memo's rendering of the showtime's current version, if it has one.
func (e Extension) memoised(ctx context.Context, showID int, key string) ([]byte, bool) {
	if e.Memo == nil {
		return nil, false
	}
	v, err := e.Versions.CurrentVersion(ctx, showID)
	if err != nil || v == 0 {
		return nil, false
	}
	return e.Memo.Get(showID, v, key)
}

// raw writes bytes rendered before; they are never changed once stored.
type raw []byte

func (r raw) MarshalGQL(w io.Writer) {
	if b, ok := w.(*bytes.Buffer); ok {
		// The executor's buffer of the answer holds a few bytes so far: grown once to take
		// the map, not doubled up to it (about 8 allocations and copies of a 150-seat map,
		// 3 % of the server's CPU under wrk's seat-map reads).
		b.Grow(len(r) + 16)
	}
	_, _ = w.Write(r)
}
