package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCentrifugoClient: the bench's JSON-protocol client connects and subscribes to a real
// Centrifugo; every publication of a paced burst, per change and merged per tick, reaches
// every subscriber, counted by the counters and decoded, seat by seat, by the probe.
func TestCentrifugoClient(t *testing.T) {
	bin, err := centrifugoBinary("")
	if err != nil {
		t.Skip(err)
	}
	for _, tick := range []time.Duration{0, peerTick} {
		t.Run(peerLabel(tick), func(t *testing.T) { testCentrifugoClient(t, bin, tick) })
	}
}

func testCentrifugoClient(t *testing.T, bin string, tick time.Duration) {
	ctx := context.Background()
	child, cleanup, err := startCentrifugo(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	defer child.Stop()
	var subs []*centrifugoSubscriber
	var clients rawClients
	defer clients.Close()
	for i := range 3 {
		s, err := dialCentrifugo(ctx, &clients, child.URL, i == 0)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		subs = append(subs, s)
	}
	seats := make([]string, 20)
	for i := range seats {
		seats[i] = fmt.Sprintf("U2VhdDo%d", i)
	}
	const rate = 100
	pubs := mergeSchedule(len(seats), rate, tick)
	start, hits := publishSchedule(ctx, newBurstClient(), child.URL, seats, pubs)
	if s := statsOf(hits, rate); s.answered != len(pubs) {
		t.Fatalf("publications: %+v, want all %d accepted", s, len(pubs))
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, s := range subs {
		for int(s.pubs.Load()) < len(pubs) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if got := int(s.pubs.Load()); got != len(pubs) || s.isLost() {
			t.Errorf("subscriber (probe %v) counted %d publications, lost %v; want %d", s.probe, got, s.isLost(), len(pubs))
		}
		if f := int(s.frames.Load()); f < 1 || f > len(pubs) {
			t.Errorf("subscriber (probe %v) counted %d frames for %d publications", s.probe, f, len(pubs))
		}
	}
	probe := subs[0]
	probe.mu.Lock()
	defer probe.mu.Unlock()
	fromDue, _, pairs, unseen := seenDelays(start, rate, seats, pubs, hits, probe.seenAt)
	if pairs != len(seats) || unseen != 0 || len(fromDue) != len(seats) {
		t.Errorf("probe: %d pairs, %d unseen, %d delays; want every one of %d seen", pairs, unseen, len(fromDue), len(seats))
	}
	for i, d := range fromDue {
		if d <= 0 {
			t.Errorf("seat %d seen %s after it was due: before it was published", i, d)
		}
	}
	if _, err := centrifugoAPI(child.URL, "publish", []byte(`{"channel":"seats"}`)); err == nil {
		t.Errorf("a publication without data was accepted: the client's error check sees nothing")
	}
}

// TestMergeSchedule: the merged publisher publishes as the hub writes. A change that finds
// the channel quiet goes out when due; the others wait at most a tick, for the end of the
// tick after the last publication; each publication carries every change due since the
// one before, in order, each change once; publications are a tick apart at least. A tick
// of 0 publishes each change alone when it is due.
func TestMergeSchedule(t *testing.T) {
	pubs := mergeSchedule(500, 200, 100*time.Millisecond)
	if len(pubs) != 26 {
		t.Fatalf("500 changes at 200/s merged per 100 ms: %d publications, want 26", len(pubs))
	}
	if !slices.Equal(pubs[0].changes, []int{0}) || pubs[0].at != 0 {
		t.Errorf("first publication: %+v, want the first change alone, at once", pubs[0])
	}
	for k := 1; k < 25; k++ {
		if want := 20*(k-1) + 1; pubs[k].at != time.Duration(k)*100*time.Millisecond || len(pubs[k].changes) != 20 || pubs[k].changes[0] != want {
			t.Errorf("publication %d: at %s, changes %v; want at %d ms, 20 changes from %d", k, pubs[k].at, pubs[k].changes, 100*k, want)
		}
	}
	if last := pubs[25]; last.changes[0] != 481 || len(last.changes) != 19 {
		t.Errorf("last publication: %v, want changes 481 to 499", last.changes)
	}

	for _, c := range []struct {
		changes, rate int
		tick          time.Duration
	}{{500, 200, 100 * time.Millisecond}, {100, 15, 100 * time.Millisecond}, {50, 3, 100 * time.Millisecond},
		{200, 1000, 30 * time.Millisecond}, {100, 200, 0}} {
		t.Run(fmt.Sprintf("%d at %d per s, tick %s", c.changes, c.rate, c.tick), func(t *testing.T) {
			pubs := mergeSchedule(c.changes, c.rate, c.tick)
			next := 0
			for k, p := range pubs {
				first := changeDue(p.changes[0], c.rate)
				if k > 0 {
					prev := pubs[k-1].at
					if p.at-prev < c.tick {
						t.Errorf("publication %d at %s, %s after the one before: less than a tick", k, p.at, p.at-prev)
					}
					if p.at != first && p.at != prev+c.tick {
						t.Errorf("publication %d at %s: neither when its first change was due (%s) nor a tick after the one before", k, p.at, first)
					}
					if first <= prev {
						t.Errorf("publication %d carries change %d, due at %s, before the publication of %s", k, p.changes[0], first, prev)
					}
				}
				for _, i := range p.changes {
					if i != next {
						t.Fatalf("publication %d carries change %d, want %d next", k, i, next)
					}
					next++
					if due := changeDue(i, c.rate); p.at < due || (c.tick > 0 && p.at-due >= c.tick) || (c.tick == 0 && p.at != due) {
						t.Errorf("change %d due at %s published at %s", i, due, p.at)
					}
				}
			}
			if next != c.changes {
				t.Errorf("%d changes published, want %d", next, c.changes)
			}
			if c.tick == 0 && len(pubs) != c.changes {
				t.Errorf("tick 0: %d publications, want one per change (%d)", len(pubs), c.changes)
			}
		})
	}
}

// TestSeenDelays: a probe's publish → seen runs from when each change was due (the wait for
// the publisher's tick counted) to the first publication carrying its seat; changes of a
// failed publication are left out, changes never seen are counted.
func TestSeenDelays(t *testing.T) {
	order := []string{"a", "b", "c", "d", "e"}
	const rate = 100 // a change every 10 ms
	pubs := mergeSchedule(len(order), rate, 25*time.Millisecond)
	// a alone at 0; b, c (due 10, 20) at 25; d (due 30) at 50 with e (due 40).
	want := []peerPub{{0, []int{0}}, {25 * time.Millisecond, []int{1, 2}}, {50 * time.Millisecond, []int{3, 4}}}
	if fmt.Sprint(pubs) != fmt.Sprint(want) {
		t.Fatalf("schedule %v, want %v", pubs, want)
	}
	start := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	hits := []burstHit{{sent: at(0), answered: at(2)}, {sent: at(25), answered: at(40)}, {sent: at(50), answered: at(51), err: "HTTP 500"}}
	seenAt := map[string]time.Time{"a": at(3), "b": at(30), "d": at(60)} // c never seen; d's publication failed
	fromDue, fromAnswer, pairs, unseen := seenDelays(start, rate, order, pubs, hits, seenAt)
	if pairs != 3 || unseen != 1 {
		t.Errorf("pairs %d, unseen %d; want 3 (the failed publication's left out), 1", pairs, unseen)
	}
	ms := func(v ...int) latencies {
		var l latencies
		for _, x := range v {
			l = append(l, time.Duration(x)*time.Millisecond)
		}
		return l
	}
	if !slices.Equal(fromDue, ms(3, 20)) {
		t.Errorf("from due: %v, want [3ms 20ms] (b due at 10, seen at 30)", fromDue)
	}
	if !slices.Equal(fromAnswer, ms(1, -10)) {
		t.Errorf("from the answer: %v, want [1ms -10ms]", fromAnswer)
	}
}

// TestChangesAccepted: the changes of a merged schedule are accepted with their
// publications, and their rate is counted as the holds' (the changes after the first, over
// the time from the first answer to the last): the rate of the schedule.
func TestChangesAccepted(t *testing.T) {
	pubs := mergeSchedule(500, 200, peerTick)
	start := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	hits := make([]burstHit, len(pubs))
	for k, p := range pubs {
		hits[k] = burstHit{sent: start.Add(p.at), answered: start.Add(p.at + time.Millisecond)}
	}
	s := statsOf(changeHits(pubs, hits), 200)
	if s.answered != 500 || s.failed != 0 {
		t.Fatalf("changes accepted %d, failed %d; want 500, 0", s.answered, s.failed)
	}
	if got := s.perSecond(); got < 199 || got > 200 {
		t.Errorf("changes accepted per second: %.1f, want 499 over 2.5 s", got)
	}
	if got := statsOf(hits, publicationRate(200, peerTick)); got.answered != 26 || got.rate != 10 {
		t.Errorf("publications: %d accepted of %d/s asked, want 26 of 10/s", got.answered, got.rate)
	}
	hits[3].err = "EOF"
	if s := statsOf(changeHits(pubs, hits), 200); s.answered != 480 || s.failed != 20 {
		t.Errorf("a failed publication of 20 changes: %d accepted, %d failed; want 480, 20", s.answered, s.failed)
	}
}

// TestCentrifugoDecode: a probe reads every publication of a frame, notes each seat's first
// arrival, and counts the frame once; a frame with only a ping counts nothing.
func TestCentrifugoDecode(t *testing.T) {
	s := &centrifugoSubscriber{probe: true, seenAt: map[string]time.Time{}}
	t0, t1 := time.Unix(100, 0), time.Unix(101, 0)
	frame := `{"push":{"channel":"seats","pub":{"data":{"seats":[{"id":"a","status":"HELD"},{"id":"b","status":"HELD"}]},"offset":1}}}` + "\n" +
		`{}` + "\n" + `{"push":{"channel":"seats","pub":{"data":{"seats":[{"id":"c","status":"HELD"}]}}}}`
	if !s.decode([]byte(frame), t0) {
		t.Errorf("the ping in the frame was not reported")
	}
	if s.decode([]byte(`{"push":{"channel":"seats","pub":{"data":{"seats":[{"id":"a","status":"HELD"}]}}}}`), t1) {
		t.Errorf("a ping reported in a frame without one")
	}
	s.decode([]byte(`{}`), t1)
	if p, f := s.pubs.Load(), s.frames.Load(); p != 3 || f != 2 {
		t.Errorf("publications %d, frames %d; want 3, 2", p, f)
	}
	for seat, want := range map[string]time.Time{"a": t0, "b": t0, "c": t0} {
		if got := s.seenAt[seat]; !got.Equal(want) {
			t.Errorf("seat %s first seen at %v, want %v", seat, got, want)
		}
	}

	c := &centrifugoSubscriber{}
	c.count(nil, []byte(`{"push":{"channel":"seats","pub":{}}}`+"\n"+`{"push":{"channel":"seats","pub":{}}}`))
	if p, f := c.pubs.Load(), c.frames.Load(); p != 2 || f != 1 {
		t.Errorf("counter: publications %d, frames %d; want 2, 1", p, f)
	}
}

// TestSideBySide: SeatFlow's default-tick row is judged against Centrifugo's merged row of
// its N only, and the text says the rate was held within 3 % only when it was on both
// sides; otherwise it gives the rates.
func TestSideBySide(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	rated := func(perSecond float64) burstStats { // 500 answered after the first, at perSecond
		return burstStats{rate: 200, asked: 501, answered: 501, firstAnswer: t0, last: t0.Add(time.Duration(500 / perSecond * float64(time.Second)))}
	}
	seatflow := []*onsaleRun{{n: 3040, burst: rated(200), clickSeen: latencies{100 * time.Millisecond}, frames: []int{24}},
		{n: 3040, tick: "0", burst: rated(200), clickSeen: latencies{time.Second}}}
	merged := &peerRun{n: 3040, tick: peerTick, changes: rated(197), seen: latencies{250 * time.Millisecond}, frames: []int{26}}
	stress := &peerRun{n: 3040, tick: 0, changes: rated(40), seen: latencies{9 * time.Second}}

	var out strings.Builder
	writeSideBySide(&out, seatflow, []*peerRun{stress, merged}, 200)
	text := out.String()
	if !strings.Contains(text, "within 3 % in every row") || strings.Count(text, "\n| 3040 |") != 1 {
		t.Errorf("one row (merged against tick default), rates within 3 %%:\n%s", text)
	}
	if !strings.Contains(text, "| 100.00 ms | 250.00 ms | 0.40 |") || !strings.Contains(text, "| 200/s / 197/s | 1.02 |") || strings.Contains(text, "MISS") {
		t.Errorf("want ratios 0.40 and 1.02, both PASS:\n%s", text)
	}

	merged.changes, merged.seen = rated(150), latencies{150 * time.Millisecond}
	out.Reset()
	writeSideBySide(&out, seatflow, []*peerRun{merged}, 200)
	text = out.String()
	if strings.Contains(text, "within 3 % in every row") || !strings.Contains(text, "N = 3040: SeatFlow 200/s, Centrifugo 150/s") {
		t.Errorf("Centrifugo at 150/s of 200/s: the text must give the rates:\n%s", text)
	}
	if !strings.Contains(text, "| 0.67 | ≤ 0.50, every seat seen, no subscription ended | **MISS** |") {
		t.Errorf("ratio 0.67 must miss:\n%s", text)
	}
}
