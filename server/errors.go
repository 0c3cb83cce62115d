package main

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"

	"github.com/99designs/gqlgen/graphql"
	"github.com/go-sql-driver/mysql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"seatflow"
)

// presentError is the one place where errors become GraphQL errors: a *seatflow.Error
// keeps its message and gets its code in extensions.code; gqlgen's own errors (parse,
// validation, coercion) pass as they are; anything else is logged and answered as
// "internal error" with code INTERNAL, so nothing internal leaks.
func presentError(log *slog.Logger) graphql.ErrorPresenterFunc {
	return func(ctx context.Context, err error) *gqlerror.Error {
		var appErr *seatflow.Error
		if errors.As(err, &appErr) {
			gerr := graphql.DefaultErrorPresenter(ctx, err)
			gerr.Message = appErr.Message
			gerr.Extensions = map[string]any{"code": appErr.Code}
			for k, v := range appErr.Extensions {
				gerr.Extensions[k] = v
			}
			return gerr
		}
		var gerr *gqlerror.Error
		if errors.As(err, &gerr) && gerr.Err == nil {
			return gerr
		}
		if storeUnavailable(err) {
			log.WarnContext(ctx, "store unavailable", "err", err, "path", graphql.GetPath(ctx).String())
			return presentError(log)(ctx, seatflow.Errorf(seatflow.EUNAVAILABLE, "service temporarily unavailable, try again shortly"))
		}
		if errors.Is(err, context.Canceled) {
			// The client went away; nobody reads this answer and nothing is wrong.
			log.DebugContext(ctx, "request cancelled", "err", err)
		} else {
			log.ErrorContext(ctx, "internal error", "err", err, "path", graphql.GetPath(ctx).String())
		}
		return &gqlerror.Error{Message: "internal error", Path: graphql.GetPath(ctx),
			Extensions: map[string]any{"code": seatflow.EINTERNAL}}
	}
}

// recoverPanic logs a resolver panic with its stack and answers INTERNAL.
func recoverPanic(log *slog.Logger) graphql.RecoverFunc {
	return func(ctx context.Context, p any) error {
		log.ErrorContext(ctx, "panic in resolver", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		return errors.New("panic in resolver")
	}
}

// storeUnavailable reports whether err is MySQL refusing or losing connections (too many
// connections, a dropped connection, a timeout): a retry may succeed, so the client gets
// SERVICE_UNAVAILABLE rather than INTERNAL.
func storeUnavailable(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		// too many connections, user connections, lock wait timeout, deadlock: worth a retry
		return me.Number == 1040 || me.Number == 1203 || me.Number == 1205 || me.Number == 1213
	}
	var ne net.Error
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) ||
		errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne)
}
