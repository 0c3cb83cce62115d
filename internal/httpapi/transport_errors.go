package httpapi

import (
	"fmt"
	"mime"
	"net/http"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"seatflow"
)

// transportError is an error about the HTTP request itself, with its code.
func transportError(code, message string) *gqlerror.Error {
	return &gqlerror.Error{Message: message, Extensions: map[string]any{"code": code}}
}

// refusedRequests answers, in GraphQL's error format and with a code, every request no
// other transport takes (without it gqlgen answers a bare "transport not supported"):
// a POST that is not JSON, another method, an upgrade that is not a GraphQL websocket.
// It must be the last transport added.
type refusedRequests struct{}

var _ graphql.Transport = refusedRequests{}

// Supports takes every request.
func (refusedRequests) Supports(*http.Request) bool { return true }

// Do answers what is wrong with the request.
func (refusedRequests) Do(w http.ResponseWriter, r *http.Request, _ graphql.GraphExecutor) {
	w.Header().Set("Content-Type", responseType(r))
	var status int
	var err *gqlerror.Error
	switch {
	case r.Header.Get("Upgrade") != "":
		status, err = http.StatusBadRequest, transportError(seatflow.EBADREQUEST,
			"only websocket upgrades with the graphql-transport-ws or graphql-ws subprotocol are served here")
	case r.Method == http.MethodPost:
		got, _, perr := mime.ParseMediaType(r.Header.Get("Content-Type"))
		switch {
		case r.Header.Get("Content-Type") == "":
			got = "none"
		case perr != nil:
			got = "an invalid media type" // not echoed: it could be anything
		}
		status, err = http.StatusUnsupportedMediaType, transportError(seatflow.EUNSUPPORTEDMEDIATYPE,
			fmt.Sprintf("POST requests must have Content-Type: application/json (got %s)", got))
	default:
		w.Header().Set("Allow", "GET, POST, OPTIONS")
		status, err = http.StatusMethodNotAllowed, transportError(seatflow.EMETHODNOTALLOWED,
			fmt.Sprintf("method %s is not allowed: use POST (or GET for queries)", r.Method))
	}
	w.WriteHeader(status)
	writeRefusal(w, &graphql.Response{Errors: gqlerror.List{err}})
}
