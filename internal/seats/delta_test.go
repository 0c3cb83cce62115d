package seats_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"seatflow/internal/seats"
)

// TestPublishedDeltaCarriesTimeAndTrace: every script that changes seats publishes when
// the change was made (Redis' clock) and, when the change was made under a span, that
// span's traceparent; without one the delta has no trace. The gap rule still reads its
// rows with the trace context last.
func TestPublishedDeltaCarriesTimeAndTrace(t *testing.T) {
	hall := testHall(1, 6)
	s := newStore(t, hall)
	ps := s.RDB.Subscribe(context.Background(), s.Keys.Events(show))
	defer ps.Close()
	if _, err := ps.Receive(context.Background()); err != nil {
		t.Fatal(err)
	}
	next := func(what string) seats.Delta {
		t.Helper()
		select {
		case m := <-ps.Channel():
			var d seats.Delta
			if err := json.Unmarshal([]byte(m.Payload), &d); err != nil {
				t.Fatalf("%s: %v in %s", what, err, m.Payload)
			}
			return d
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no delta published", what)
		}
		return seats.Delta{}
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		SpanID:  trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8}, TraceFlags: trace.FlagsSampled})
	traced := trace.ContextWithSpanContext(context.Background(), sc)
	const want = "00-0102030405060708090a0b0c0d0e0f10-0102030405060708-01"
	check := func(what string, d seats.Delta, wantTrace string) {
		t.Helper()
		if age := time.Since(time.UnixMilli(d.At)); d.At == 0 || age < -time.Second || age > 5*time.Second {
			t.Errorf("%s: at = %d (%v ago), want the time of the change", what, d.At, age)
		}
		if d.Trace != wantTrace {
			t.Errorf("%s: trace = %q, want %q", what, d.Trace, wantTrace)
		}
	}

	// The gap rule with the trace last: holding 104 would strand 103.
	if err := s.Hold(traced, seats.HoldRequest{ShowtimeID: show, Layout: seats.NewLayout(hall),
		SeatIDs: []int{101, 102}, Token: "t1", UserID: "u1"}); err != nil {
		t.Fatal(err)
	}
	check("hold", next("hold"), want)
	err := s.Hold(traced, seats.HoldRequest{ShowtimeID: show, Layout: seats.NewLayout(hall),
		SeatIDs: []int{104}, Token: "t2", UserID: "u2"})
	wantCode(t, err, "SEAT_GAP")

	if _, err := s.Confirm(traced, show, "t1", []int{101}); err != nil {
		t.Fatal(err)
	}
	check("confirm", next("confirm"), want)
	if _, err := s.Release(context.Background(), show, "t1", "u1", []int{102}); err != nil {
		t.Fatal(err)
	}
	check("untraced release", next("release"), "")
	if _, _, err := s.Rehold(traced, show, "t3", "u3", time.Now(), []int{102}); err != nil {
		t.Fatal(err)
	}
	check("rehold", next("rehold"), want)
}
