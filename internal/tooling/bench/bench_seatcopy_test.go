package bench

import (
	"fmt"
	"testing"
)

// next is a next message as the server writes it for seatMapSubscription's selection;
// from < 0 leaves fromVersion out.
func next(id, kind string, version, from int, seats ...string) []byte {
	f := ""
	if from >= 0 {
		f = fmt.Sprintf(`,"fromVersion":%d`, from)
	}
	list := ""
	for i := 0; i+1 < len(seats); i += 2 {
		if list != "" {
			list += ","
		}
		list += fmt.Sprintf(`{"seat":{"id":%q},"status":%q}`, seats[i], seats[i+1])
	}
	return fmt.Appendf(nil, `{"id":%q,"type":"next","payload":{"data":{"seatMap":{"kind":%q,"version":%d%s,"seats":[%s]}}}}`,
		id, kind, version, f, list)
}

func TestScanSeatEvent(t *testing.T) {
	ev := scanSeatEvent(next("7", "DELTA", 12, 9, "U2VhdDox", "HELD", "U2VhdDoy", "AVAILABLE"))
	if ev.id != "7" || ev.typ != "next" || ev.kind != "DELTA" || ev.version != 12 || ev.from != 9 ||
		fmt.Sprint(ev.seats) != "[[U2VhdDox HELD] [U2VhdDoy AVAILABLE]]" {
		t.Errorf("event = %+v", ev)
	}
	if ev := scanSeatEvent(next("1", "SNAPSHOT", 3, -1)); ev.from != -1 || ev.version != 3 || len(ev.seats) != 0 {
		t.Errorf("no fromVersion: event = %+v, want from -1", ev)
	}
	if ev := scanSeatEvent([]byte(`{"type":"ping"}`)); ev.typ != "ping" || ev.id != "" {
		t.Errorf("ping = %+v", ev)
	}
	if ev := scanSeatEvent([]byte(`{"id":"1","type":"complete"}`)); ev.typ != "complete" || ev.id != "1" {
		t.Errorf("complete = %+v", ev)
	}
	// A message cut short must not panic.
	scanSeatEvent([]byte(`{"id":"1","type":"next","payload":{"data":{"seatMap":{"kind":"DELTA","version":4,"seats":[{"seat":{"id":"x`))
}

func TestSeatCopy(t *testing.T) {
	apply := func(c *seatCopy, kind string, version, from int, seats ...string) applied {
		return c.apply(scanSeatEvent(next("1", kind, version, from, seats...)))
	}
	t.Run("SnapshotReplacesWhateverItsVersion", func(t *testing.T) {
		c := &seatCopy{}
		apply(c, "SNAPSHOT", 50, 0, "a", "HELD", "b", "AVAILABLE")
		// A restarted store begins again at a lower version: the snapshot still wins.
		if got := apply(c, "SNAPSHOT", 2, 0, "a", "AVAILABLE"); got != eventApplied || c.version != 2 || fmt.Sprint(c.seats) != "map[a:AVAILABLE]" {
			t.Errorf("got %v, copy %+v", got, c)
		}
	})
	t.Run("DeltaBeforeSnapshotIgnored", func(t *testing.T) {
		c := &seatCopy{}
		if got := apply(c, "DELTA", 2, 1, "a", "HELD"); got != eventUnsynced || len(c.seats) != 0 {
			t.Errorf("got %v, copy %+v", got, c)
		}
	})
	t.Run("FromVersionChains", func(t *testing.T) {
		c := &seatCopy{}
		apply(c, "SNAPSHOT", 4, 0, "a", "AVAILABLE", "b", "AVAILABLE")
		// A coalesced DELTA skips versions: it applies because it starts at the map's.
		if got := apply(c, "DELTA", 9, 4, "a", "HELD", "b", "HELD"); got != eventApplied || c.version != 9 || c.seats["b"] != "HELD" {
			t.Errorf("got %v, copy %+v", got, c)
		}
		if got := apply(c, "DELTA", 12, 10, "a", "AVAILABLE"); got != eventGap || c.seats["a"] != "HELD" || c.synced {
			t.Errorf("a DELTA from 10 on a map at 9: got %v, copy %+v, want a gap, not applied", got, c)
		}
		if got := apply(c, "DELTA", 13, 12, "a", "SOLD"); got != eventUnsynced {
			t.Errorf("after a gap: got %v, want the copy to wait for a SNAPSHOT", got)
		}
		if got := apply(c, "SNAPSHOT", 13, 0, "a", "SOLD", "b", "HELD"); got != eventApplied || !c.synced {
			t.Errorf("snapshot after a gap: got %v, copy %+v", got, c)
		}
	})
	t.Run("WithoutFromVersionNextOnly", func(t *testing.T) {
		c := &seatCopy{}
		apply(c, "SNAPSHOT", 4, -1, "a", "AVAILABLE")
		if got := apply(c, "DELTA", 5, -1, "a", "HELD"); got != eventApplied || c.version != 5 {
			t.Errorf("next version: got %v, copy %+v", got, c)
		}
		if got := apply(c, "DELTA", 5, -1, "a", "AVAILABLE"); got != eventStale || c.seats["a"] != "HELD" {
			t.Errorf("same version again: got %v, copy %+v, want stale", got, c)
		}
		if got := apply(c, "DELTA", 7, -1, "a", "AVAILABLE"); got != eventGap || c.seats["a"] != "HELD" {
			t.Errorf("skipped version: got %v, copy %+v, want a gap", got, c)
		}
	})
	t.Run("StaleDeltaAfterSnapshot", func(t *testing.T) {
		c := &seatCopy{}
		apply(c, "SNAPSHOT", 8, 0, "a", "HELD")
		if got := apply(c, "DELTA", 8, 7, "a", "HELD"); got != eventStale {
			t.Errorf("got %v, want stale (already in the snapshot)", got)
		}
	})
}
