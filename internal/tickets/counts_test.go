package tickets_test

import (
	"context"
	"testing"
	"time"

	"seatflow"
)

// TestWatchCounts: a watcher of a showtime's door gets its count at once, then a new one
// after an admission at another instance (announced through Redis), and its channel is
// closed when its context ends.
func TestWatchCounts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, tks := e.paid("alice", e.seats[0], e.seats[1])
	e.openDoor()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	counts, err := e.svc.WatchCounts(ctx, e.show.ID)
	if err != nil {
		t.Fatal(err)
	}
	next := func() seatflow.CheckInCount {
		t.Helper()
		select {
		case c, ok := <-counts:
			if !ok {
				t.Fatal("the watch ended")
			}
			return *c
		// 12 s: an admission announced before the feed's subscription is live (the feed
		// subscribes after WatchCounts returns) reaches the watchers with the refresh that
		// comes every 5 s (countRefresh, counts.go) anyway; 5 s here raced that refresh.
		case <-time.After(12 * time.Second):
			t.Fatal("no count within 12 s")
		}
		return seatflow.CheckInCount{}
	}
	if c := next(); c != (seatflow.CheckInCount{ShowtimeID: e.show.ID, Sold: 2}) {
		t.Fatalf("first count = %+v", c)
	}
	other := e.instance(e.keys)
	if r := e.checkIn(other, "door", e.code(tks[0]), ""); r.Status != seatflow.CheckInAdmitted {
		t.Fatal(r.Status)
	}
	if c := next(); c != (seatflow.CheckInCount{ShowtimeID: e.show.ID, CheckedIn: 1, Sold: 2}) {
		t.Fatalf("count after an admission at another instance = %+v", c)
	}
	cancel()
	for range counts { // drained until closed: the feed stopped
	}
}
