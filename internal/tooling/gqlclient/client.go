// Package gqlclient is the GraphQL client of SeatFlow's tools (the fault suite, the
// benchmarks, the load test): requests posted over HTTP with a bearer token and variables,
// answers decoded with their errors' extensions.code, and subscriptions over
// graphql-transport-ws. It is test and measurement code: the server never imports it, and
// it imports no package of the product, so it sees the API only as a client does.
package gqlclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Request is one GraphQL operation as a client posts it (or sends it in a subscribe
// message).
type Request struct {
	OperationName string         `json:"operationName,omitempty"`
	Query         string         `json:"query"`
	Variables     map[string]any `json:"variables"`
}

// Body encodes r as a request body. A timed loop encodes its bodies once, before it
// starts, so it measures the server and not the encoding.
func (r Request) Body() []byte {
	b, _ := json.Marshal(r) // a Request of strings and JSON values always encodes
	return b
}

// Body encodes a request of query and vars without an operation name.
func Body(query string, vars map[string]any) []byte {
	return Request{Query: query, Variables: vars}.Body()
}

// Client posts GraphQL requests to one server's /query.
type Client struct {
	base     string
	endpoint string
	http     *http.Client
}

// New returns a client of the server at base (e.g. http://127.0.0.1:8080) that sends
// through hc; http.DefaultClient when hc is nil. The caller chooses the pool and timeouts:
// a benchmark wants many idle connections, a fault scenario a deadline.
func New(base string, hc *http.Client) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: base, endpoint: base + "/query", http: hc}
}

// ReadError is a failure while reading an answer whose status line had arrived: the
// request reached the server, the answer was cut off. Its text is the cause's.
type ReadError struct{ Err error }

func (e *ReadError) Error() string { return e.Err.Error() }
func (e *ReadError) Unwrap() error { return e.Err }

// Post sends body with the bearer token (none when empty) and reads the whole answer into
// buf, reset first, and returns the HTTP status. A timed loop reuses its buffer, as load
// tools do, so a large answer costs the cores the client shares with the server one copy,
// not a growing allocation per read. A failure before the answer is the transport's error
// (a net.Error whose Timeout is true when the client's deadline passed); one while reading
// it is a *ReadError.
func (c *Client) Post(ctx context.Context, token string, body []byte, buf *bytes.Buffer) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	buf.Reset()
	if resp.ContentLength > 0 {
		buf.Grow(int(resp.ContentLength))
	}
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return resp.StatusCode, &ReadError{Err: err}
	}
	return resp.StatusCode, nil
}

// Send posts body and decodes the answer. An answer that is not JSON is an error wrapping
// ErrNotJSON; GraphQL errors are in the Response, not in the error.
func (c *Client) Send(ctx context.Context, token string, body []byte) (*Response, error) {
	var buf bytes.Buffer
	status, err := c.Post(ctx, token, body, &buf)
	if err != nil {
		return nil, err
	}
	r, err := Decode(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("HTTP %d: %w", status, err)
	}
	return r, nil
}

// Do runs an operation that must succeed and decodes its data into dst (when not nil). A
// GraphQL error is returned as the answer's first *Error, with the query named.
func (c *Client) Do(ctx context.Context, token, query string, vars map[string]any, dst any) error {
	r, err := c.Send(ctx, token, Body(query, vars))
	if err != nil {
		return err
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("%w (query %.80s)", err, strings.Join(strings.Fields(query), " "))
	}
	if dst != nil {
		return json.Unmarshal(r.Data, dst)
	}
	return nil
}

// Get fetches path of the server (e.g. /healthz) and reads the whole answer, which must
// be 200.
func (c *Client) Get(ctx context.Context, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return nil
}
