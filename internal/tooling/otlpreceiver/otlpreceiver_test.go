package otlpreceiver

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

func TestReceiverDecodesExports(t *testing.T) {
	r := New()
	srv := httptest.NewServer(r)
	defer srv.Close()
	trace, other := bytes.Repeat([]byte{1}, 16), bytes.Repeat([]byte{2}, 16)
	msg := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "service.name",
			Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "seatflow"}}}}},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{
			{TraceId: trace, Name: "POST /query"},
			{TraceId: other, Name: "seatmap.deliver", Links: []*tracepb.Span_Link{{TraceId: trace}}},
		}}},
	}}}
	raw, _ := proto.Marshal(msg)
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write(raw)
	zw.Close()
	post := func(path string, body []byte, gz bool) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/x-protobuf")
		if gz {
			req.Header.Set("Content-Encoding", "gzip")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := post(Path, raw, false); c != http.StatusOK {
		t.Fatalf("plain export: %d", c)
	}
	if c := post(Path, zipped.Bytes(), true); c != http.StatusOK {
		t.Fatalf("gzip export: %d", c)
	}
	if c := post("/v1/metrics", raw, false); c != http.StatusBadRequest {
		t.Errorf("another path: %d, want 400", c)
	}
	if c := post(Path, []byte("not protobuf \xff\xff"), false); c != http.StatusBadRequest {
		t.Errorf("a body that is no export: %d, want 400", c)
	}
	requests, spans, rejected := r.Counts()
	if requests != 2 || spans != 4 || rejected != 2 || r.Traces() != 2 {
		t.Errorf("counts %d requests, %d spans, %d rejected, %d traces; want 2, 4, 2, 2", requests, spans, rejected, r.Traces())
	}
	id := "01010101010101010101010101010101"
	if got := r.Spans(id); len(got) != 2 || got[0] != "POST /query" {
		t.Errorf("spans of the trace = %v", got)
	}
	if got := r.LinksTo(id); len(got) != 2 || got[0] != "seatmap.deliver" {
		t.Errorf("links to the trace = %v", got)
	}
	if r.Resource()["service.name"] != "seatflow" {
		t.Errorf("resource = %v", r.Resource())
	}
}
