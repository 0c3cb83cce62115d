package live

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"seatflow/internal/seats"
	"seatflow/internal/telemetry"
)

// What a show's writes tell operators: how stale the changes they carry are
// (seatflow_live_delivery_staleness_seconds) and, when traces are recorded, a
// seatmap.deliver span linked to the spans that made the changes. Both are per flush of a
// showtime, not per watcher: a flush writes the same changes to every watcher of the
// showtime within microseconds, so one observation and one span say what thousands would,
// at a cost that does not grow with the audience (20,000 watchers of a premiere would
// otherwise be 20,000 observations and spans per tick). All of it under the hub's mu.

// maxLinks bounds the links of one delivery span: a coalesced DELTA of a busy tick may
// carry hundreds of changes; the first ones say where a slow delivery came from.
const maxLinks = 32

// pendingChanges are the changes a show took since its last write.
type pendingChanges struct {
	n      int      // changes taken
	oldest int64    // Unix ms of the oldest of them that says when it was made; 0 if none
	traces []string // traceparents of the first maxLinks traced ones
}

// note remembers a change the show took, for its next write.
func (p *pendingChanges) note(d seats.Delta) {
	p.n++
	if d.At > 0 && (p.oldest == 0 || d.At < p.oldest) {
		p.oldest = d.At
	}
	if d.Trace != "" && len(p.traces) < maxLinks && telemetry.Enabled() {
		p.traces = append(p.traces, d.Trace)
	}
}

// delivered reports a write of the show to watchers of it: the staleness of the oldest
// change it carried, and the span linked to the changes' spans.
func (p *pendingChanges) delivered(s *show, watchers int, now time.Time) {
	if p.n == 0 {
		return
	}
	if p.oldest > 0 {
		deliveryStaleness.Observe(max(now.Sub(time.UnixMilli(p.oldest)).Seconds(), 0))
	}
	if len(p.traces) > 0 && telemetry.Enabled() {
		deliverSpan(s, watchers, p, now)
	}
	*p = pendingChanges{traces: p.traces[:0]}
}

// deliverSpan records one seatmap.deliver span, the root of a trace of its own, linked to
// the span of every change the write carried (up to maxLinks).
func deliverSpan(s *show, watchers int, p *pendingChanges, now time.Time) {
	links := make([]trace.Link, 0, len(p.traces))
	var tc propagation.TraceContext
	for _, tp := range p.traces {
		sc := trace.SpanContextFromContext(tc.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp}))
		if sc.IsValid() {
			links = append(links, trace.Link{SpanContext: sc})
		}
	}
	if len(links) == 0 {
		return
	}
	start := now
	if at := time.UnixMilli(p.oldest); p.oldest > 0 && at.Before(now) {
		start = at // the span covers the wait, from the change (Redis' clock) to its write
	}
	_, span := telemetry.Tracer().Start(context.Background(), "seatmap.deliver",
		trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindProducer), trace.WithLinks(links...),
		trace.WithTimestamp(start), trace.WithAttributes(
			attribute.Int("seatflow.showtime.id", s.id),
			attribute.Int("seatflow.seatmap.version", s.stateVersion),
			attribute.Int("seatflow.seatmap.changes", p.n),
			attribute.Int("seatflow.seatmap.watchers", watchers)))
	span.End(trace.WithTimestamp(now))
}
