package database

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"time"

	"entgo.io/ent/dialect"
	"github.com/XSAM/otelsql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"seatflow/internal/telemetry"
)

// tracedMySQL are the pools opened on MySQL through otelsql: their Driver is otelsql's,
// so Migrate cannot tell MySQL by the driver's type.
var tracedMySQL sync.Map

// sqlOpen opens a pool on driverName: through otelsql when traces are recorded, one span
// per statement with its text (placeholders only: otelsql never records arguments), no
// spans for rows, prepares and session resets, none under a parent the sampler left out
// (telemetry.TracerProvider).
func sqlOpen(driverName, dsn string) (*sql.DB, error) {
	if !telemetry.Enabled() {
		return sql.Open(driverName, dsn)
	}
	system := semconv.DBSystemNameMySQL
	if driverName == "sqlite" {
		system = semconv.DBSystemNameSQLite
	}
	db, err := otelsql.Open(driverName, dsn, otelsql.WithTracerProvider(telemetry.TracerProvider()), otelsql.WithAttributes(system),
		otelsql.WithSpanOptions(otelsql.SpanOptions{DisableErrSkip: true, OmitConnResetSession: true,
			OmitConnPrepare: true, OmitRows: true}))
	if err == nil && driverName == "mysql" {
		tracedMySQL.Store(db, true)
	}
	return db, err
}

// txSeconds is how long the transactions of the instance take, begin to commit or
// rollback (the MySQL latency an operator watches).
var txSeconds = promauto.NewHistogramVec(prometheus.HistogramOpts{
	Namespace: "seatflow", Subsystem: "db", Name: "transaction_duration_seconds",
	Help:    "Database transactions from begin to commit or rollback, by outcome (commit, rollback, error).",
	Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
}, []string{"outcome"})

// txDriver times every transaction of the ent client and, when traces are recorded,
// makes it a `db.tx` span, the parent of the statements run in it: ent runs them with the
// caller's context, so the transaction puts its span into each.
type txDriver struct{ dialect.Driver }

func traced(d dialect.Driver) dialect.Driver { return txDriver{d} }

// Tx begins a transaction inside a new db.tx span, ended at commit or rollback.
func (d txDriver) Tx(ctx context.Context) (dialect.Tx, error) {
	return d.begin(ctx, d.Driver.Tx)
}

// BeginTx is Tx with options (ent's Client.BeginTx).
func (d txDriver) BeginTx(ctx context.Context, opts *sql.TxOptions) (dialect.Tx, error) {
	b, ok := d.Driver.(interface {
		BeginTx(context.Context, *sql.TxOptions) (dialect.Tx, error)
	})
	if !ok {
		return nil, errors.New("database: this driver begins no transaction with options")
	}
	return d.begin(ctx, func(ctx context.Context) (dialect.Tx, error) { return b.BeginTx(ctx, opts) })
}

// QueryContext runs a statement of the project's own SQL outside a transaction (ent's
// sql/execquery, e.g. the sales reports' aggregate statement).
func (d txDriver) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	q, ok := d.Driver.(interface {
		QueryContext(context.Context, string, ...any) (*sql.Rows, error)
	})
	if !ok {
		return nil, errors.New("database: this driver runs no statements of its own")
	}
	return q.QueryContext(ctx, query, args...)
}

func (d txDriver) begin(ctx context.Context, beginTx func(context.Context) (dialect.Tx, error)) (dialect.Tx, error) {
	start := time.Now()
	span := trace.SpanFromContext(context.Background()) // no-op
	if telemetry.Enabled() {
		ctx, span = telemetry.Tracer().Start(ctx, "db.tx", trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(semconv.DBSystemNameKey.String(d.Dialect())))
	}
	tx, err := beginTx(ctx)
	if err != nil {
		telemetry.End(span, err)
		txSeconds.WithLabelValues("error").Observe(time.Since(start).Seconds())
		return nil, err
	}
	return &spanTx{Tx: tx, span: span, start: start}, nil
}

type spanTx struct {
	dialect.Tx
	span  trace.Span
	start time.Time
	done  bool // a rollback after the commit (a deferred one) is not timed again
}

// end ends the transaction's span and times it.
func (t *spanTx) end(outcome string, err error) {
	if t.done {
		return
	}
	t.done = true
	if err != nil {
		outcome = "error"
	}
	t.span.SetAttributes(semconv.DBOperationName(strings.ToUpper(outcome)))
	telemetry.End(t.span, err)
	txSeconds.WithLabelValues(outcome).Observe(time.Since(t.start).Seconds())
}

func (t *spanTx) Exec(ctx context.Context, query string, args, v any) error {
	return t.Tx.Exec(trace.ContextWithSpan(ctx, t.span), query, args, v)
}

func (t *spanTx) Query(ctx context.Context, query string, args, v any) error {
	return t.Tx.Query(trace.ContextWithSpan(ctx, t.span), query, args, v)
}

// ExecContext runs a statement of the project's own SQL in the transaction (ent's
// sql/execquery, e.g. booking's addition to a customer's purchase count).
func (t *spanTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	x, ok := t.Tx.(interface {
		ExecContext(context.Context, string, ...any) (sql.Result, error)
	})
	if !ok {
		return nil, errors.New("database: this driver's transactions run no statements of their own")
	}
	return x.ExecContext(trace.ContextWithSpan(ctx, t.span), query, args...)
}

// QueryContext runs a statement of the project's own SQL in the transaction (ent's
// sql/execquery, e.g. the embedded database's addition to a purchase count).
func (t *spanTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	q, ok := t.Tx.(interface {
		QueryContext(context.Context, string, ...any) (*sql.Rows, error)
	})
	if !ok {
		return nil, errors.New("database: this driver's transactions run no statements of their own")
	}
	return q.QueryContext(trace.ContextWithSpan(ctx, t.span), query, args...)
}

func (t *spanTx) Commit() error {
	err := t.Tx.Commit()
	t.end("commit", err)
	return err
}

func (t *spanTx) Rollback() error {
	err := t.Tx.Rollback()
	t.end("rollback", err)
	return err
}
