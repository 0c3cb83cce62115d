package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/99designs/gqlgen/graphql"
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
		log.ErrorContext(ctx, "internal error", "err", err, "path", graphql.GetPath(ctx).String())
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
