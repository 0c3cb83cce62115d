package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"seatflow"
	"seatflow/internal/auth"
)

// guardHTTP applies what must hold before a request reaches GraphQL: the body size limit,
// a write deadline and a deadline of their work (RequestTimeout) for plain requests
// (websockets live long and keep their own keep-alives),
// and refusal of a bearer token that is present but invalid.
func (a *API) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "" {
			_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(a.WriteTimeout))
			if a.RequestTimeout > 0 {
				ctx, cancel := context.WithTimeout(r.Context(), a.RequestTimeout)
				defer cancel()
				r = r.WithContext(ctx)
			}
			if r.ContentLength > a.MaxBodyBytes {
				writeError(w, r, http.StatusRequestEntityTooLarge, seatflow.EBADREQUEST,
					fmt.Sprintf("request body is larger than %d bytes", a.MaxBodyBytes))
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, a.MaxBodyBytes)
		}
		if err := auth.TokenError(r.Context()); err != nil {
			writeError(w, r, http.StatusUnauthorized, seatflow.ErrorCode(err), seatflow.ErrorMessage(err))
			return
		}
		next.ServeHTTP(w, r)
	})
}
