package bench

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestCentrifugoClient: the bench's JSON-protocol client connects and subscribes to a real
// Centrifugo; every publication of a paced burst reaches every subscriber, counted by the
// counters and decoded, seat by seat, by the probe.
func TestCentrifugoClient(t *testing.T) {
	bin, err := centrifugoBinary("")
	if err != nil {
		t.Skip(err)
	}
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
	hits := publishBurst(ctx, newBurstClient(), child.URL, seats, len(seats), 100)
	if s := statsOf(hits, 100); s.answered != len(seats) {
		t.Fatalf("publications: %+v, want all %d accepted", s, len(seats))
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, s := range subs {
		for int(s.pubs.Load()) < len(seats) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if got := int(s.pubs.Load()); got != len(seats) || s.isLost() {
			t.Errorf("subscriber (probe %v) counted %d publications, lost %v; want %d", s.probe, got, s.isLost(), len(seats))
		}
	}
	probe := subs[0]
	probe.mu.Lock()
	defer probe.mu.Unlock()
	for i, seat := range seats {
		if seen, ok := probe.seenAt[seat]; !ok || seen.Before(hits[i].sent) {
			t.Errorf("seat %s: seen %v (at %s), published at %s", seat, ok, seen, hits[i].sent)
		}
	}
	if _, err := centrifugoAPI(child.URL, "publish", []byte(`{"channel":"seats"}`)); err == nil {
		t.Errorf("a publication without data was accepted: the client's error check sees nothing")
	}
}
