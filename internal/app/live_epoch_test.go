package app

import (
	"fmt"
	"testing"

	"seatflow/internal/tooling/testenv"
)

// liveMap is a watcher's seat map, kept by the schema's client rule.
type liveMap struct {
	seats   map[string]string
	version int
	events  []seatEvent
}

// apply takes one event by the rule of SeatMapEvent.fromVersion: a SNAPSHOT replaces the
// map, a DELTA from the map's version moves it on, one at or below it is ignored.
func (m *liveMap) apply(t *testing.T, ev seatEvent) {
	t.Helper()
	m.events = append(m.events, ev)
	switch {
	case ev.Kind == "SNAPSHOT":
		m.seats = map[string]string{}
	case ev.Version <= m.version:
		return
	case ev.FromVersion != m.version:
		t.Fatalf("DELTA v%d→v%d on a map at v%d: the server sends a SNAPSHOT when a change was missed", ev.FromVersion, ev.Version, m.version)
	}
	for _, s := range ev.Seats {
		m.seats[s.Seat.ID] = s.Status
	}
	m.version = ev.Version
}

// TestLiveVersionsNeverGoBack: Redis comes back empty (every key of the deployment gone)
// while watchers stay connected; the next hold rebuilds the seat hash from MySQL, and its
// versions continue above every version issued before, so every watcher, on either
// instance and protocol, shows the rebuilt map and the hold.
func TestLiveVersionsNeverGoBack(t *testing.T) {
	a := newTestApp(t)
	b := a.sibling()
	show, seats := a.onSaleShowtime()
	clients := []*wsClient{dialWS(t, a, "graphql-transport-ws", ""), dialWS(t, a, "graphql-ws", ""), dialWS(t, b, "graphql-transport-ws", "")}
	maps := make([]*liveMap, len(clients))
	for i, c := range clients {
		c.subscribe(show)
		maps[i] = &liveMap{}
		if maps[i].apply(t, c.event()); maps[i].events[0].Kind != "SNAPSHOT" {
			t.Fatalf("watcher %d: first event %s, want SNAPSHOT", i, maps[i].events[0].Kind)
		}
	}
	// follow reads each watcher's events until its map is the real one.
	follow := func(what string) int {
		t.Helper()
		want, version := a.liveMapNow(show)
		for i, c := range clients {
			for maps[i].version < version {
				maps[i].apply(t, c.event())
			}
			if maps[i].version != version || fmt.Sprint(maps[i].seats) != fmt.Sprint(want) {
				t.Errorf("%s: watcher %d at v%d:\n got %v\nwant v%d %v", what, i, maps[i].version, maps[i].seats, version, want)
			}
		}
		return version
	}
	a.hold(a.token("alice", "customer"), show, seats[0:1], "k1")
	old := follow("after the first hold")

	// Redis comes back empty: the seat hash, its version and every other key are gone.
	testenv.DeletePrefix(a.Redis, a.Keys.Prefix)
	if n, err := a.Redis.Exists(t.Context(), a.Keys.Seats(idOf(t, show)), a.Keys.Version(idOf(t, show))).Result(); err != nil || n != 0 {
		t.Fatalf("after the flush: %d of the showtime's keys left (%v)", n, err)
	}
	for i := range maps {
		maps[i].events = nil
	}
	a.hold(a.token("bob", "customer"), show, seats[1:2], "k2") // rebuilds the hash (alice's hold from MySQL), then holds
	version := follow("after Redis came back empty and a hold")
	if version <= old {
		t.Errorf("version after the rebuild: %d, want above %d", version, old)
	}
	for i, m := range maps {
		if m.seats[seats[0]] != "HELD" || m.seats[seats[1]] != "HELD" {
			t.Errorf("watcher %d: seat 0 %s, seat 1 %s; want both HELD", i, m.seats[seats[0]], m.seats[seats[1]])
		}
		for _, ev := range m.events {
			if ev.Version <= old {
				t.Errorf("watcher %d: %s v%d after the rebuild, want versions above %d", i, ev.Kind, ev.Version, old)
			}
		}
	}
	// And it stays live: the next change is the next DELTA.
	a.hold(a.token("carol", "customer"), show, seats[2:3], "k3")
	follow("after one more hold")
}

// liveMapNow is the seatMap query's answer: seat id → status, and the version.
func (a *testApp) liveMapNow(show string) (map[string]string, int) {
	a.t.Helper()
	var out struct {
		SeatMap struct {
			Version int
			Seats   []struct {
				Seat   struct{ ID string }
				Status string
			}
		}
	}
	a.must("", `query($id: ID!) { seatMap(showtimeId: $id) { version seats { seat { id } status } } }`, map[string]any{"id": show}, &out)
	m := map[string]string{}
	for _, s := range out.SeatMap.Seats {
		m[s.Seat.ID] = s.Status
	}
	return m, out.SeatMap.Version
}
