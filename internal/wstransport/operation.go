package wstransport

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"seatflow"
	"seatflow/graph/model"
	"seatflow/internal/live"
	"seatflow/internal/nodeid"
	"seatflow/internal/seatrender"
	"seatflow/internal/telemetry"
)

// operation is one running operation of a connection, by the id its client gave it.
type operation struct {
	c      *conn
	id     string
	cancel context.CancelFunc
	// For a seat-map subscription answered without the executor:
	plan      *seatrender.Plan
	renderKey string // showtime and selection: watchers asking the same share renderings
	prefix    []byte // the data message's bytes before the rendering

	mu      sync.Mutex
	stopped bool // the client stopped it: no complete is sent
}

// start runs the operation id with the request in payload; false when the id is in use.
// Past Config.MaxOperations in flight the operation is refused (RATE_LIMITED) on its id.
func (c *conn) start(id string, payload json.RawMessage) bool {
	c.mu.Lock()
	if _, dup := c.ops[id]; dup {
		c.mu.Unlock()
		return false
	}
	if max := c.t.cfg.MaxOperations; len(c.ops) >= max {
		c.mu.Unlock()
		c.send(c.proto.errorFrame(id, gqlerror.List{{Extensions: map[string]any{"code": seatflow.ERATELIMITED},
			Message: fmt.Sprintf("at most %d operations may run at once on one connection: wait for one to complete", max)}}))
		return true
	}
	base, cancel := context.WithCancel(c.ctx)
	op := &operation{c: c, id: id, cancel: cancel}
	c.ops[id] = op
	c.mu.Unlock()

	params := &graphql.RawParams{}
	start := graphql.Now()
	if err := json.Unmarshal(payload, params); err != nil {
		op.fail(gqlerror.List{{Message: "invalid json", Extensions: map[string]any{"code": seatflow.EBADREQUEST}}})
		return true
	}
	// No request headers: an operation's caller is the connection's (its connection_init's
	// token, or its upgrade's), and a socket open for hours keeps nothing else of the
	// upgrade request.
	params.ReadTime = graphql.TraceTiming{Start: start, End: graphql.Now()}
	traced := telemetry.Extract(base, params.Extensions)
	ctx := graphql.StartOperationTrace(traced)
	rc, errs := c.exec.CreateOperationContext(ctx, params)
	if errs != nil {
		resp := c.exec.DispatchError(graphql.WithOperationContext(ctx, rc), errs)
		if errcode.GetErrorKind(errs) == errcode.KindProtocol {
			op.fail(resp.Errors)
		} else {
			c.send(c.proto.dataFrame(id, &graphql.Response{Errors: resp.Errors}))
			op.finish()
		}
		return true
	}
	ctx = graphql.WithOperationContext(ctx, rc)
	if c.watchSeatMap(traced, op, rc) {
		return true
	}
	if prepare := c.t.cfg.Operation; prepare != nil {
		ctx = prepare(ctx)
	}
	go op.execute(ctx, rc)
	return true
}

// stop ends the operation id at the client's request.
func (c *conn) stop(id string) {
	c.mu.Lock()
	op := c.ops[id]
	c.mu.Unlock()
	if op == nil {
		return
	}
	op.mu.Lock()
	op.stopped = true
	op.mu.Unlock()
	op.cancel()
	c.unqueue(op)
	op.forget()
}

// forget takes the operation out of its connection's table (its id may be used again).
func (op *operation) forget() {
	op.c.mu.Lock()
	if op.c.ops[op.id] == op {
		delete(op.c.ops, op.id)
	}
	op.c.mu.Unlock()
}

// fail answers the operation with an error message (it did not run) and forgets it.
func (op *operation) fail(errs gqlerror.List) {
	op.c.send(op.c.proto.errorFrame(op.id, errs))
	op.forget()
	op.cancel()
}

// finish sends complete, unless the client stopped the operation, and forgets it.
func (op *operation) finish() {
	op.mu.Lock()
	stopped := op.stopped
	op.stopped = true
	op.mu.Unlock()
	if !stopped {
		op.c.send(frame(op.c.proto.complete, op.id, nil))
	}
	op.forget()
	op.cancel()
}

// execute runs the operation through gqlgen's executor, sending each response.
func (op *operation) execute(ctx context.Context, rc *graphql.OperationContext) {
	defer func() {
		if r := recover(); r != nil {
			_ = rc.Recover(ctx, r) // logs the panic
			op.c.send(op.c.proto.dataFrame(op.id, &graphql.Response{Errors: gqlerror.List{{Message: "internal error",
				Extensions: map[string]any{"code": seatflow.EINTERNAL}}}}))
		}
		op.finish()
	}()
	responses, ctx := op.c.exec.DispatchOperation(ctx, rc)
	for {
		resp := responses(ctx)
		if resp == nil {
			return
		}
		op.c.send(op.c.proto.dataFrame(op.id, resp))
	}
}

// watchSeatMap answers a subscription to one seat map without the executor and without a
// goroutine: the hub puts the events into the connection's queue (op is their Sink). It
// reports false when the operation is anything else, when the renderer does not know its
// selection, or when the watch failed: the executor then answers it (with the error).
// The watch gets ctx, which carries the connection's values and the operation's trace
// parent but not the operation's execution context: a watch that lasts for hours keeps
// nothing of its subscribe message but what it renders with.
func (c *conn) watchSeatMap(ctx context.Context, op *operation, rc *graphql.OperationContext) bool {
	if c.t.cfg.SeatMaps == nil || rc.Operation == nil || rc.Operation.Operation != ast.Subscription {
		return false
	}
	fields := graphql.CollectFields(rc, rc.Operation.SelectionSet, []string{"Subscription"})
	if len(fields) != 1 || fields[0].Name != "seatMap" {
		return false
	}
	plan := seatrender.Compile(rc, fields[0].Selections, "SeatMapEvent")
	if plan == nil {
		return false
	}
	showID, err := model.DecodeID(fields[0].ArgumentMap(rc.Variables)["showtimeId"], nodeid.Showtime)
	if err != nil {
		return false
	}
	op.plan, op.renderKey = c.t.renders.selection(strconv.Itoa(showID)+plan.Key(), plan)
	op.prefix = c.proto.seatPrefix(op.id, fields[0].Alias)
	if err := c.t.cfg.SeatMaps.WatchSeatMap(ctx, showID, op); err != nil {
		op.plan = nil
		return false
	}
	return true
}

var _ live.Sink = (*operation)(nil)

// Put queues a seat-map event for the client, rendered once per event and selection for
// every watcher of the instance.
func (op *operation) Put(ev *seatflow.SeatMapEvent) bool {
	return op.c.enqueue(outgoing{op: op, seat: op.render(ev)}, true)
}

// Due queues word that a DELTA of the watch is due: the writer takes it (w.Next) and
// renders it when it writes the connection, so it carries every change until then.
func (op *operation) Due(w *live.Watcher) bool {
	return op.c.enqueue(outgoing{op: op, due: w}, true)
}

// render is ev written with the operation's selection, shared with every watcher asking
// the same of the same event.
func (op *operation) render(ev *seatflow.SeatMapEvent) []byte {
	return op.c.t.renders.render(op.renderKey, op.plan, ev)
}

// Full reports whether the connection's queue has no room for another event.
func (op *operation) Full() bool { return op.c.full() }

// Drop forgets the operation's events still queued.
func (op *operation) Drop() { op.c.unqueue(op) }

// Close ends the stream. When the watch ended (the client stopped it, or the connection
// closed) it sends complete; when the server ended it (why: Redis lost, the instance
// shutting down) it sends an error message carrying why's code instead, which ends the
// operation in both protocols; the client subscribes again.
func (op *operation) Close(why error) {
	if why == nil {
		op.finish()
		return
	}
	op.mu.Lock()
	stopped := op.stopped
	op.stopped = true
	op.mu.Unlock()
	if !stopped {
		op.c.send(op.c.proto.errorFrame(op.id, gqlerror.List{{Message: seatflow.ErrorMessage(why),
			Extensions: map[string]any{"code": seatflow.ErrorCode(why)}}}))
	}
	op.forget()
	op.cancel()
}
