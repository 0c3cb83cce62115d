package httpapi

import (
	"bytes"
	"context"
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
	"github.com/go-json-experiment/json/jsontext"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"seatflow"
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
type httpTransport struct {
	limits answerLimits
}

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
func (h httpTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	ctx := r.Context()
	contentType := responseType(r)
	w.Header().Set("Content-Type", contentType)
	// Answers are not to be kept, but catalog ones the response cache marks shareable.
	w.Header().Set("Cache-Control", "private, no-store")
	params := rawParams.Get().(*graphql.RawParams)
	defer func() {
		*params = graphql.RawParams{}
		rawParams.Put(params)
	}()
	params.ReadTime.Start = graphql.Now()
	if r.Method == http.MethodGet && h.limits.MaxURLBytes > 0 && len(r.URL.RawQuery) > h.limits.MaxURLBytes {
		w.WriteHeader(http.StatusRequestURITooLong)
		writeRefusal(w, &graphql.Response{Errors: gqlerror.List{transportError(seatflow.EBADREQUEST,
			fmt.Sprintf("the query string is longer than %d bytes: send large documents with POST or as persisted queries", h.limits.MaxURLBytes))}})
		return
	}
	if status, msg := readParams(r, params); msg != "" {
		w.WriteHeader(status)
		writeRefusal(w, exec.DispatchError(ctx, gqlerror.List{transportError(seatflow.EBADREQUEST, msg)}))
		return
	}
	params.Headers = r.Header
	params.ReadTime.End = graphql.Now()
	rc, errs := exec.CreateOperationContext(ctx, params)
	if errs != nil {
		resp := exec.DispatchError(graphql.WithOperationContext(ctx, rc), errs)
		h.limits.cap(resp)
		refuse(w, contentType, resp)
		return
	}
	if r.Method == http.MethodGet && rc.Operation != nil && rc.Operation.Operation != ast.Query {
		w.Header().Set("Allow", "POST")
		w.WriteHeader(http.StatusMethodNotAllowed)
		writeRefusal(w, &graphql.Response{Errors: gqlerror.List{transportError(seatflow.EMETHODNOTALLOWED,
			"GET requests only allow query operations: send mutations with POST")}})
		return
	}
	responses, ctx := exec.DispatchOperation(ctx, rc)
	resp := responses(ctx)
	if resp == nil {
		// The request's work ended before the operation ran (RequestTimeout, or the
		// client went away): gqlgen answers nothing, so the request is refused.
		msg := seatflow.ErrorMessage(seatflow.Unavailable("run the operation", context.Cause(ctx)))
		refuse(w, contentType, &graphql.Response{Errors: gqlerror.List{transportError(seatflow.EUNAVAILABLE, msg)}})
		return
	}
	h.limits.cap(resp)
	writeResponse(w, resp)
}

// readParams reads the GraphQL request of r into p; it returns what is wrong with it and
// the status to answer, or "". A request that is not a well-formed GraphQL-over-HTTP
// request (no document and no persisted query's hash, a parameter of the wrong type) is a
// 400 whatever the media type: nothing was parsed, so there is no GraphQL answer to give.
// The messages never echo the request (nor Go's type names).
func readParams(r *http.Request, p *graphql.RawParams) (int, string) {
	if r.Method == http.MethodGet {
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			return http.StatusBadRequest, "the query string could not be decoded"
		}
		p.Query, p.OperationName = q.Get("query"), q.Get("operationName")
		for _, param := range []struct {
			name string
			into *map[string]any
		}{{"variables", &p.Variables}, {"extensions", &p.Extensions}} {
			v := q.Get(param.name)
			if v == "" {
				continue
			}
			if decodeJSON(strings.NewReader(v), param.into) != nil {
				return http.StatusBadRequest, "the " + param.name + " parameter must be a JSON object"
			}
			if what := ambiguousJSON([]byte(v)); what != "" {
				return http.StatusBadRequest, "the " + param.name + " parameter " + what
			}
		}
		return checkParams(p)
	}
	body, err := io.ReadAll(r.Body)
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes", tooLarge.Limit)
	} else if err != nil {
		return http.StatusBadRequest, "could not read the request body"
	}
	if err := decodeJSON(bytes.NewReader(body), p); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			switch typeErr.Field {
			case "query", "operationName":
				return http.StatusBadRequest, "the " + typeErr.Field + " parameter must be a string"
			case "variables", "extensions":
				return http.StatusBadRequest, "the " + typeErr.Field + " parameter must be a JSON object"
			}
		}
		return http.StatusBadRequest, `the request body must be a JSON object such as {"query": "{ __typename }", "variables": {}}`
	}
	if what := ambiguousJSON(body); what != "" {
		return http.StatusBadRequest, "the request body " + what
	}
	return checkParams(p)
}

// ambiguousJSON says what lets b, which encoding/json decoded, be read as another request
// than the one it decoded ("" when nothing): a value after the first (encoding/json stops
// at the first), or a member name repeated in an object (encoding/json keeps the last).
// A proxy or a log that reads the first "query", or the second object, would check or
// record another operation than the one that runs. jsontext (the tokenizer of the
// encoding/json/v2 proposal) checks names as RFC 7493 does, which encoding/json cannot.
func ambiguousJSON(b []byte) string {
	dec := jsontext.NewDecoder(bytes.NewReader(b), jsontext.AllowInvalidUTF8(true))
	if _, err := dec.ReadValue(); errors.Is(err, jsontext.ErrDuplicateName) {
		return "repeats a member name: each may appear once in an object"
	} else if err != nil {
		return "" // encoding/json read it: nothing jsontext adds
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return "must be one JSON object with nothing after it"
	}
	return ""
}

// checkParams refuses a request with neither a document nor a persisted query's hash.
func checkParams(p *graphql.RawParams) (int, string) {
	if _, persisted := persistedHash(p.Extensions); p.Query == "" && !persisted {
		return http.StatusBadRequest, `the request has no query parameter: send the document as {"query": "{ __typename }"}`
	}
	return 0, ""
}

func decodeJSON(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	return dec.Decode(v)
}

// responseType is the media type of the response: of the two it can answer, the one the
// client's Accept prefers (its q-value; the first listed of equals; q=0 refuses),
// application/json when Accept names neither, or is missing (GraphQL over HTTP allows
// answering the default rather than 406).
func responseType(r *http.Request) string {
	best, bestQ := mediaJSON, 0.0
	for part := range strings.SplitSeq(r.Header.Get("Accept"), ",") {
		mediaType, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		var answer string
		switch mediaType {
		case mediaGraphQLResponse:
			answer = mediaGraphQLResponse
		case mediaJSON, "*/*", "application/*":
			answer = mediaJSON
		default:
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if q, err = strconv.ParseFloat(v, 64); err != nil || q < 0 || q > 1 {
				continue
			}
		}
		if q > bestQ {
			best, bestQ = answer, q
		}
	}
	return best
}

// responseBuffers are reused between responses (a seat map is ~10 KiB); one that grew
// past maxPooledBuffer is left to the collector.
var responseBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledBuffer = 256 << 10

// writeResponse writes resp as gqlgen's graphql.Response marshals, with its data copied
// as it is: the executor wrote it as JSON already. The body goes out in one write with its
// length, so net/http does not chunk it.
func writeResponse(w http.ResponseWriter, resp *graphql.Response) {
	write(w, resp, gqljson.AppendResponse)
}

// writeRefusal writes the answer of an operation that did not run (a request refused,
// a document that did not parse or validate): no data entry, as GraphQL says of errors
// raised before execution, whichever media type is answered.
func writeRefusal(w http.ResponseWriter, resp *graphql.Response) {
	write(w, resp, gqljson.AppendRefusal)
}

func write(w http.ResponseWriter, resp *graphql.Response, appendTo func([]byte, *graphql.Response) []byte) {
	buf := responseBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledBuffer {
			buf.Reset()
			responseBuffers.Put(buf)
		}
	}()
	buf.Grow(len(resp.Data) + 64)
	buf.Write(appendTo(buf.AvailableBuffer(), resp))
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	_, _ = w.Write(buf.Bytes())
}
