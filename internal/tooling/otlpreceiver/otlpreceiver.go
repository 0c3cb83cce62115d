// Package otlpreceiver is an OTLP/HTTP trace receiver for the tests and the benchmarks:
// it answers POST /v1/traces (a protobuf ExportTraceServiceRequest, gzip or not) as a
// collector does and keeps the names of the spans by trace id, the names of the spans
// linked to each trace, the resource's attributes, and how many export requests and spans
// it was sent.
package otlpreceiver

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"sync"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Path is where an OTLP/HTTP exporter posts traces under its endpoint.
const Path = "/v1/traces"

// Receiver is an http.Handler; serve it (httptest.NewServer, or a listener of one's own)
// and give its URL as OTEL_EXPORTER_OTLP_ENDPOINT.
type Receiver struct {
	mu       sync.Mutex
	names    []string
	traces   map[string][]string
	linked   map[string][]string
	resource map[string]string
	requests int
	rejected int
}

// New is a receiver that has been sent nothing.
func New() *Receiver {
	return &Receiver{traces: map[string][]string{}, linked: map[string][]string{}, resource: map[string]string{}}
}

func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	msg, err := decode(req)
	if err != nil {
		r.mu.Lock()
		r.rejected++
		r.mu.Unlock()
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.requests++
	for _, rs := range msg.GetResourceSpans() {
		for _, kv := range rs.GetResource().GetAttributes() {
			r.resource[kv.GetKey()] = kv.GetValue().GetStringValue()
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				id := hex.EncodeToString(s.GetTraceId())
				r.names = append(r.names, s.GetName())
				r.traces[id] = append(r.traces[id], s.GetName())
				for _, l := range s.GetLinks() {
					lid := hex.EncodeToString(l.GetTraceId())
					r.linked[lid] = append(r.linked[lid], s.GetName())
				}
			}
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// decode reads one export request, refusing any other path or a body that is not one.
func decode(req *http.Request) (*coltracepb.ExportTraceServiceRequest, error) {
	if req.Method != http.MethodPost || req.URL.Path != Path {
		return nil, fmt.Errorf("%s %s: not an OTLP trace export", req.Method, req.URL.Path)
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			return nil, err
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	var msg coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &msg); err != nil {
		return nil, err
	}
	return &msg, nil
}

// Spans are the names of the spans of the trace of traceID (hex), in arrival order.
func (r *Receiver) Spans(traceID string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.traces[traceID]...)
}

// LinksTo are the names of the spans linked to the trace of traceID.
func (r *Receiver) LinksTo(traceID string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.linked[traceID]...)
}

// Names are the names of every span received, in arrival order.
func (r *Receiver) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.names...)
}

// Resource is the union of the attributes of the resources the spans came with.
func (r *Receiver) Resource() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]string, len(r.resource))
	for k, v := range r.resource {
		out[k] = v
	}
	return out
}

// Traces is how many traces the spans received belong to.
func (r *Receiver) Traces() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.traces)
}

// Counts are the export requests accepted, the spans they held and the requests refused.
func (r *Receiver) Counts() (requests, spans, rejected int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests, len(r.names), r.rejected
}
