package database

import (
	"context"
	"database/sql"
	"sync"

	"entgo.io/ent/dialect"
	"github.com/XSAM/otelsql"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"seatflow/internal/telemetry"
)

// tracedMySQL are the pools opened on MySQL through otelsql: their Driver is otelsql's,
// so Migrate cannot tell MySQL by the driver's type.
var tracedMySQL sync.Map

// sqlOpen opens a pool on driverName: through otelsql when traces are recorded, one span
// per statement with its text (placeholders only: otelsql never records arguments), no
// spans for rows, prepares and session resets.
func sqlOpen(driverName, dsn string) (*sql.DB, error) {
	if !telemetry.Enabled() {
		return sql.Open(driverName, dsn)
	}
	system := semconv.DBSystemNameMySQL
	if driverName == "sqlite" {
		system = semconv.DBSystemNameSQLite
	}
	db, err := otelsql.Open(driverName, dsn, otelsql.WithAttributes(system),
		otelsql.WithSpanOptions(otelsql.SpanOptions{DisableErrSkip: true, OmitConnResetSession: true,
			OmitConnPrepare: true, OmitRows: true}))
	if err == nil && driverName == "mysql" {
		tracedMySQL.Store(db, true)
	}
	return db, err
}

// txDriver makes every transaction of the ent client a `db.tx` span, the parent of the
// statements run in it: ent runs them with the caller's context, so the transaction
// puts its span into each.
type txDriver struct{ dialect.Driver }

func traced(d dialect.Driver) dialect.Driver {
	if !telemetry.Enabled() {
		return d
	}
	return txDriver{d}
}

// Tx begins a transaction inside a new db.tx span, ended at commit or rollback.
func (d txDriver) Tx(ctx context.Context) (dialect.Tx, error) {
	ctx, span := telemetry.Tracer().Start(ctx, "db.tx", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(semconv.DBSystemNameKey.String(d.Dialect())))
	tx, err := d.Driver.Tx(ctx)
	if err != nil {
		telemetry.End(span, err)
		return nil, err
	}
	return &spanTx{Tx: tx, span: span}, nil
}

type spanTx struct {
	dialect.Tx
	span trace.Span
}

func (t *spanTx) Exec(ctx context.Context, query string, args, v any) error {
	return t.Tx.Exec(trace.ContextWithSpan(ctx, t.span), query, args, v)
}

func (t *spanTx) Query(ctx context.Context, query string, args, v any) error {
	return t.Tx.Query(trace.ContextWithSpan(ctx, t.span), query, args, v)
}

func (t *spanTx) Commit() error {
	err := t.Tx.Commit()
	t.span.SetAttributes(semconv.DBOperationName("COMMIT"))
	telemetry.End(t.span, err)
	return err
}

func (t *spanTx) Rollback() error {
	err := t.Tx.Rollback()
	t.span.SetAttributes(semconv.DBOperationName("ROLLBACK"))
	telemetry.End(t.span, err)
	return err
}
