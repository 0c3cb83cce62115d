package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"seatflow/internal/gqljson"
)

// Media types of GraphQL over HTTP responses.
const (
	mediaJSON            = "application/json"
	mediaGraphQLResponse = "application/graphql-response+json"
)

// httpTransport is GraphQL over HTTP (POST with a JSON body, GET with the request in the
// query string), as gqlgen's transport.POST and transport.GET, with one difference that
// matters on the hot path: the response's data, which the executor (or the seat-map
// renderer) already wrote as compact JSON, is copied as it is instead of being scanned and
// compacted again by encoding/json (a third of the CPU of a seat-map query).
type httpTransport struct{}

var _ graphql.Transport = httpTransport{}

// Supports takes POST with a JSON body and GET, but not websocket upgrades.
func (httpTransport) Supports(r *http.Request) bool {
	if r.Header.Get("Upgrade") != "" {
		return false
	}
	switch r.Method {
	case http.MethodGet:
		return true
	case http.MethodPost:
		mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		return err == nil && mediaType == mediaJSON
	}
	return false
}

var rawParams = sync.Pool{New: func() any { return &graphql.RawParams{} }}

// Do runs one operation.
func (httpTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	ctx := r.Context()
	contentType := responseType(r)
	w.Header().Set("Content-Type", contentType)
	params := rawParams.Get().(*graphql.RawParams)
	defer func() {
		*params = graphql.RawParams{}
		rawParams.Put(params)
	}()
	params.ReadTime.Start = graphql.Now()
	if status, msg := readParams(r, params); msg != "" {
		w.WriteHeader(status)
		writeResponse(w, exec.DispatchError(ctx, gqlerror.List{transportError(codeBadRequest, msg)}))
		return
	}
	params.Headers = r.Header
	params.ReadTime.End = graphql.Now()
	rc, errs := exec.CreateOperationContext(ctx, params)
	if errs != nil {
		if errcode.GetErrorKind(errs) == errcode.KindProtocol {
			if contentType == mediaGraphQLResponse {
				w.WriteHeader(http.StatusBadRequest)
			} else {
				w.WriteHeader(http.StatusUnprocessableEntity)
			}
		}
		writeResponse(w, exec.DispatchError(graphql.WithOperationContext(ctx, rc), errs))
		return
	}
	if r.Method == http.MethodGet && rc.Operation != nil && rc.Operation.Operation != ast.Query {
		w.WriteHeader(http.StatusNotAcceptable)
		writeResponse(w, &graphql.Response{Errors: gqlerror.List{transportError(codeMethodNotAllowed,
			"GET requests only allow query operations: send mutations with POST")}})
		return
	}
	responses, ctx := exec.DispatchOperation(ctx, rc)
	writeResponse(w, responses(ctx))
}

// readParams reads the GraphQL request of r into p; it returns what is wrong with it and
// the status to answer, or "". The messages never echo the request (nor Go's type names).
func readParams(r *http.Request, p *graphql.RawParams) (int, string) {
	if r.Method == http.MethodGet {
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			return http.StatusBadRequest, "the query string could not be decoded"
		}
		p.Query, p.OperationName = q.Get("query"), q.Get("operationName")
		if v := q.Get("variables"); v != "" && decodeJSON(strings.NewReader(v), &p.Variables) != nil {
			return http.StatusBadRequest, "the variables parameter must be a JSON object"
		}
		if v := q.Get("extensions"); v != "" && decodeJSON(strings.NewReader(v), &p.Extensions) != nil {
			return http.StatusBadRequest, "the extensions parameter must be a JSON object"
		}
		return 0, ""
	}
	body, err := io.ReadAll(r.Body)
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes", tooLarge.Limit)
	} else if err != nil {
		return http.StatusBadRequest, "could not read the request body"
	}
	if decodeJSON(bytes.NewReader(body), p) != nil {
		return http.StatusBadRequest, `the request body must be a JSON object such as {"query": "{ __typename }", "variables": {}}`
	}
	return 0, ""
}

func decodeJSON(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	return dec.Decode(v)
}

// responseType is the media type of the response: what the client's Accept asks for,
// application/json when it asks for anything or nothing.
func responseType(r *http.Request) string {
	for part := range strings.SplitSeq(r.Header.Get("Accept"), ",") {
		mediaType, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mediaType {
		case mediaGraphQLResponse:
			return mediaGraphQLResponse
		case mediaJSON, "*/*", "application/*":
			return mediaJSON
		}
	}
	return mediaJSON
}

// responseBuffers are reused between responses (a seat map is ~10 KiB); one that grew
// past maxPooledBuffer is left to the collector.
var responseBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledBuffer = 256 << 10

// writeResponse writes resp as gqlgen's graphql.Response marshals, with its data copied
// as it is: the executor wrote it as JSON already. The body goes out in one write with its
// length, so net/http does not chunk it.
func writeResponse(w http.ResponseWriter, resp *graphql.Response) {
	buf := responseBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledBuffer {
			buf.Reset()
			responseBuffers.Put(buf)
		}
	}()
	buf.Grow(len(resp.Data) + 64)
	buf.Write(gqljson.AppendResponse(buf.AvailableBuffer(), resp))
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	_, _ = w.Write(buf.Bytes())
}
