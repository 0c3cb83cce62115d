package live

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"seatflow"
	"seatflow/internal/seats"
	"seatflow/internal/telemetry"
	"seatflow/internal/tooling/testenv"
)

// staleness reads the staleness histogram: its observations, their sum and its series.
func staleness(t *testing.T) (count uint64, sum float64, series int) {
	t.Helper()
	ch := make(chan prometheus.Metric, 16)
	deliveryStaleness.Collect(ch)
	close(ch)
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		if len(pb.GetLabel()) != 0 {
			t.Errorf("staleness has labels %v: its series must not grow with showtimes or watchers", pb.GetLabel())
		}
		count, sum, series = count+pb.GetHistogram().GetSampleCount(), sum+pb.GetHistogram().GetSampleSum(), series+1
	}
	return count, sum, series
}

// TestDeliveryStaleness: a DELTA handed to watchers observes how long after its change it
// was, once per showtime write whatever the number of watchers, in one series however many
// showtimes are watched; a delta published without a time (an older instance's) is still
// delivered and observes nothing.
func TestDeliveryStaleness(t *testing.T) {
	f := newFixture(t, 1, 6)
	h, _ := f.startHub(t, f.rdb, Options{})
	var chs []<-chan *seatflow.SeatMapEvent
	for range 3 {
		ch, err := h.Watch(t.Context(), showID, f.hall)
		if err != nil {
			t.Fatal(err)
		}
		next(t, ch)
		chs = append(chs, ch)
	}
	count0, sum0, _ := staleness(t)
	held := time.Now()
	f.hold(t, 1)
	for _, ch := range chs {
		if ev := next(t, ch); ev.Kind != seatflow.EventDelta {
			t.Fatalf("got %s, want the hold's DELTA", ev.Kind)
		}
	}
	// The write observes once it has told every watcher, which may be just after the
	// first of them read its DELTA.
	count, sum, series := staleness(t)
	for deadline := time.Now().Add(time.Second); count == count0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
		count, sum, series = staleness(t)
	}
	took := time.Since(held).Seconds()
	if count != count0+1 {
		t.Fatalf("staleness observed %d times for one change written to 3 watchers, want once", count-count0)
	}
	// Redis' clock and ours are the same machine's here: the value is at most the wait.
	if got := sum - sum0; got < 0 || got > took+0.005 {
		t.Errorf("staleness %.4fs, want between 0 and the %.4fs from hold to delivery", got, took)
	}
	if series != 1 {
		t.Errorf("staleness has %d series, want 1", series)
	}

	// A delta in the old format (no "at") at the next version.
	_, version := f.realMap(t)
	old, _ := json.Marshal(map[string]any{"version": version + 1,
		"changes": []map[string]string{{"seatId": "3", "status": "HELD"}}})
	if err := f.rdb.Publish(context.Background(), f.red.Keys.Events(showID), old).Err(); err != nil {
		t.Fatal(err)
	}
	ev := next(t, chs[0])
	if ev.Kind != seatflow.EventDelta || ev.Version != version+1 || len(ev.Seats) != 1 || ev.Seats[0].Seat.ID != 3 {
		t.Fatalf("old-format delta: got %s v%d %+v, want DELTA v%d for seat 3", ev.Kind, ev.Version, ev.Seats, version+1)
	}
	if c, _, _ := staleness(t); c != count {
		t.Errorf("a delta without a time observed a staleness")
	}
}

// TestDeliverySpanLinksTheChange: with traces recorded, a hold made under a span reaches
// the watchers of two instances sharing Redis, and each instance's write is a
// seatmap.deliver span, the root of its own trace, linked to the hold's span; a change
// made without a span gives no delivery span.
func TestDeliverySpanLinksTheChange(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	restore := telemetry.Install(tp)
	t.Cleanup(func() { restore(); _ = tp.Shutdown(context.Background()) })

	f := newFixture(t, 1, 6)
	hubA, _ := f.startHub(t, testenv.NewRedisClient(t), Options{Tick: 20 * time.Millisecond})
	hubB, _ := f.startHub(t, testenv.NewRedisClient(t), Options{Tick: 20 * time.Millisecond})
	var chs []<-chan *seatflow.SeatMapEvent
	for _, h := range []*Hub{hubA, hubB} {
		ch, err := h.Watch(t.Context(), showID, f.hall)
		if err != nil {
			t.Fatal(err)
		}
		next(t, ch)
		chs = append(chs, ch)
	}

	f.hold(t, 5) // untraced
	for _, ch := range chs {
		next(t, ch)
	}
	ctx, span := tp.Tracer("test").Start(context.Background(), "mutation HoldSeats")
	err := f.store.Hold(ctx, seats.HoldRequest{ShowtimeID: showID, Layout: seats.NewLayout(f.hall),
		SeatIDs: []int{1}, Token: testenv.RandomName("tok"), UserID: "u", AllowGaps: true})
	span.End()
	if err != nil {
		t.Fatal(err)
	}
	hold := span.SpanContext()
	for _, ch := range chs {
		if ev := next(t, ch); ev.Kind != seatflow.EventDelta || ev.Seats[0].Seat.ID != 1 {
			t.Fatalf("got %s %+v, want the traced hold's DELTA", ev.Kind, ev.Seats)
		}
	}

	// The span ends once the write to every watcher of the instance is done: just after
	// the DELTA is in the channel.
	var delivers []sdktrace.ReadOnlySpan
	for deadline, settled := time.Now().Add(eventWait), false; ; time.Sleep(5 * time.Millisecond) {
		delivers = delivers[:0]
		for _, s := range rec.Ended() {
			if s.Name() == "seatmap.deliver" {
				delivers = append(delivers, s)
			}
		}
		if settled || time.Now().After(deadline) {
			break
		}
		if len(delivers) >= 2 {
			settled = true
			time.Sleep(50 * time.Millisecond) // a third (wrong) span would have ended by now
		}
	}
	if len(delivers) != 2 {
		t.Fatalf("%d seatmap.deliver spans, want one per instance (2), none for the untraced hold", len(delivers))
	}
	for _, s := range delivers {
		if s.Parent().IsValid() || s.SpanContext().TraceID() == hold.TraceID() {
			t.Errorf("seatmap.deliver has parent %v in trace %v: want the root of its own trace", s.Parent(), s.SpanContext().TraceID())
		}
		if s.SpanKind() != trace.SpanKindProducer {
			t.Errorf("seatmap.deliver kind %v, want producer", s.SpanKind())
		}
		links := s.Links()
		if len(links) != 1 || links[0].SpanContext.TraceID() != hold.TraceID() || links[0].SpanContext.SpanID() != hold.SpanID() {
			t.Errorf("seatmap.deliver links %+v, want the hold's span %v/%v", links, hold.TraceID(), hold.SpanID())
		}
	}
}
