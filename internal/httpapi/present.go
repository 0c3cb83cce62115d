package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"seatflow"
	"seatflow/internal/database"
)

// presentError is the one place where errors become GraphQL errors: a *seatflow.Error
// keeps its message and gets its code in extensions.code; gqlgen's own errors (parse,
// validation, coercion) pass with their codes, the variables' coercion errors reworded to
// stand alone (variableError), and any without a code get BAD_REQUEST; a database failure
// that reached here unclassified is classified (database.Classify); anything else is
// logged and answered as "internal error" with code INTERNAL, so nothing internal leaks.
func presentError(log *slog.Logger, schema *ast.Schema) graphql.ErrorPresenterFunc {
	return func(ctx context.Context, err error) *gqlerror.Error {
		var gerr *gqlerror.Error
		if errors.As(err, &gerr) && gerr.Err == nil {
			if v := variableError(ctx, schema, gerr); v != nil {
				gerr = v
			}
			if _, ok := gerr.Extensions["code"]; !ok {
				if gerr.Extensions == nil {
					gerr.Extensions = map[string]any{}
				}
				gerr.Extensions["code"] = seatflow.EBADREQUEST
			}
			return gerr
		}
		err = database.Classify(err)
		var appErr *seatflow.Error
		if errors.As(err, &appErr) {
			if appErr.Code == seatflow.EUNAVAILABLE {
				log.WarnContext(ctx, "store unavailable", "err", err, "path", graphql.GetPath(ctx).String())
			}
			gerr := graphql.DefaultErrorPresenter(ctx, err)
			gerr.Message = appErr.Message
			gerr.Extensions = map[string]any{"code": appErr.Code}
			for k, v := range appErr.Extensions {
				gerr.Extensions[k] = v
			}
			return gerr
		}
		if errors.Is(err, context.Canceled) {
			// The client went away; nobody reads this answer and nothing is wrong.
			log.DebugContext(ctx, "request cancelled", "err", err)
		} else {
			log.ErrorContext(ctx, "internal error", "err", err, "path", graphql.GetPath(ctx).String())
		}
		return &gqlerror.Error{Message: seatflow.ErrorMessage(err), Path: graphql.GetPath(ctx),
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

// writeError answers a request refused before GraphQL runs, in GraphQL's error format and
// the media type the client accepts (responseType), with no data entry.
func writeError(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	w.Header().Set("Content-Type", responseType(r))
	w.WriteHeader(status)
	writeRefusal(w, &graphql.Response{Errors: gqlerror.List{transportError(code, message)}})
}

// answerLimits bound what an answer may carry.
type answerLimits struct {
	// MaxErrors is how many errors an answer lists; the rest are counted in one more.
	MaxErrors int
	// MaxResponseBytes is the largest data an answer may hold (RESPONSE_TOO_LARGE past it).
	MaxResponseBytes int
	// MaxURLBytes is the longest query string a GET may have (414 past it).
	MaxURLBytes int
}

// cap applies the limits to resp: a data too large is replaced by an error, a long error
// list is cut.
func (l answerLimits) cap(resp *graphql.Response) {
	if resp == nil {
		return
	}
	if l.MaxResponseBytes > 0 && len(resp.Data) > l.MaxResponseBytes {
		resp.Data = nil
		resp.Errors = append(gqlerror.List{{Message: fmt.Sprintf("the answer is larger than %d bytes: ask for fewer items or fields", l.MaxResponseBytes),
			Extensions: map[string]any{"code": seatflow.ERESPONSETOOLARGE}}}, resp.Errors...)
	}
	if l.MaxErrors > 0 && len(resp.Errors) > l.MaxErrors {
		more := len(resp.Errors) - l.MaxErrors
		resp.Errors = append(resp.Errors[:l.MaxErrors:l.MaxErrors], &gqlerror.Error{
			Message:    fmt.Sprintf("%d more errors not shown", more),
			Extensions: map[string]any{"code": seatflow.ETOOMANYERRORS}})
	}
}

// refuse answers an operation that was refused before it ran, with no data entry. Its
// status follows GraphQL over HTTP: with application/json 200 (the legacy rule clients
// expect), with application/graphql-response+json 400; an exhausted cost budget is 429
// with Retry-After either way.
func refuse(w http.ResponseWriter, mediaType string, resp *graphql.Response) {
	status := http.StatusOK
	if mediaType == mediaGraphQLResponse {
		status = http.StatusBadRequest
	}
	for _, e := range resp.Errors {
		if e.Extensions["code"] == seatflow.ERATELIMITED {
			status = http.StatusTooManyRequests
			if ms, ok := e.Extensions["retryAfterMs"].(int64); ok {
				w.Header().Set("Retry-After", strconv.FormatInt((ms+999)/1000, 10))
			}
		}
	}
	w.WriteHeader(status)
	writeRefusal(w, resp)
}
