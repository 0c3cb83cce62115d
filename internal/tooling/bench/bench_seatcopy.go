package bench

import (
	"bytes"
	"context"
	"strconv"

	"seatflow/internal/tooling/gqlclient"
)

// seatMapSubscription is the selection the watchers that keep their own map subscribe
// with: fromVersion only when the schema has it (hasFromVersion), so the same bench
// measures a server with and without it.
func seatMapSubscription(withFrom bool) string {
	from := ""
	if withFrom {
		from = " fromVersion"
	}
	return `subscription($id: ID!) { seatMap(showtimeId: $id) { kind version` + from + ` seats { seat { id } status } } }`
}

// hasFromVersion asks the server, by introspection, whether SeatMapEvent has fromVersion.
func hasFromVersion(ctx context.Context, c *gqlclient.Client) (bool, error) {
	var out struct {
		Type struct{ Fields []struct{ Name string } } `json:"__type"`
	}
	if err := c.Do(ctx, "", `{ __type(name: "SeatMapEvent") { fields { name } } }`, nil, &out); err != nil {
		return false, err
	}
	for _, f := range out.Type.Fields {
		if f.Name == "fromVersion" {
			return true, nil
		}
	}
	return false, nil
}

// seatEvent is what a watcher reads of one message: the subscription it belongs to, its
// type, and for a next message the event of seatMapSubscription's selection.
type seatEvent struct {
	id, typ string
	kind    string
	version int
	from    int // fromVersion; -1 when the selection has none
	seats   [][2]string
}

// scanSeatEvent reads a graphql-transport-ws message by scanning its bytes (thousands of
// watchers share the cores with the server; a browser would decode on its own): the id
// and type, and for a next message the kind, version, fromVersion and seats
// (`seats { seat { id } status }`, in that order).
func scanSeatEvent(msg []byte) seatEvent {
	ev := seatEvent{id: stringAfter(msg, `"id":"`), typ: stringAfter(msg, `"type":"`), from: -1}
	if ev.typ != gqlclient.TypeNext {
		return ev
	}
	ev.kind = stringAfter(msg, `"kind":"`)
	ev.version = intAfter(msg, `"version":`)
	if bytes.Contains(msg, []byte(`"fromVersion":`)) {
		ev.from = intAfter(msg, `"fromVersion":`)
	}
	const idKey, statusKey = `{"seat":{"id":"`, `"},"status":"`
	for {
		i := bytes.Index(msg, []byte(idKey))
		if i < 0 {
			return ev
		}
		msg = msg[i+len(idKey):]
		end := bytes.IndexByte(msg, '"')
		if end < 0 || !bytes.HasPrefix(msg[end:], []byte(statusKey)) {
			return ev
		}
		id := string(msg[:end])
		msg = msg[end+len(statusKey):]
		if end = bytes.IndexByte(msg, '"'); end < 0 {
			return ev
		}
		ev.seats = append(ev.seats, [2]string{id, string(msg[:end])})
	}
}

// stringAfter is the JSON string that follows the first key in msg ("" when none).
func stringAfter(msg []byte, key string) string {
	i := bytes.Index(msg, []byte(key))
	if i < 0 {
		return ""
	}
	rest := msg[i+len(key):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return ""
	}
	return string(rest[:end])
}

// intAfter is the integer that follows the first key in msg (0 when none).
func intAfter(msg []byte, key string) int {
	i := bytes.Index(msg, []byte(key))
	if i < 0 {
		return 0
	}
	rest := msg[i+len(key):]
	end := bytes.IndexAny(rest, ",}")
	if end < 0 {
		return 0
	}
	n, _ := strconv.Atoi(string(bytes.TrimSpace(rest[:end])))
	return n
}

// seatCopy is a watcher's own copy of a seat map, kept by the rule every client the
// project ships follows: a SNAPSHOT replaces the whole map, whatever its version; a DELTA
// that carries fromVersion applies to the map at exactly that version; one without it
// (a server before fromVersion) must be the next version. A DELTA no newer than the map
// is already in it.
type seatCopy struct {
	seats   map[string]string // seat id → status
	version int
	synced  bool // a SNAPSHOT has arrived, and no gap since
}

// applied is what seatCopy.apply did with an event.
type applied int

const (
	eventApplied  applied = iota
	eventStale            // a DELTA no newer than the map: already in it, ignored
	eventGap              // a DELTA that does not follow the map: not applied, the copy waits for a SNAPSHOT
	eventUnsynced         // a DELTA while the copy waits for a SNAPSHOT: ignored
)

// apply takes one next message's event into the copy by the rule above.
func (c *seatCopy) apply(ev seatEvent) applied {
	if ev.kind == "SNAPSHOT" {
		c.seats = make(map[string]string, len(ev.seats))
		c.put(ev)
		c.synced = true
		return eventApplied
	}
	switch follows := ev.version == c.version+1; {
	case !c.synced:
		return eventUnsynced
	case ev.version <= c.version:
		return eventStale
	case ev.from >= 0 && ev.from != c.version, ev.from < 0 && !follows:
		c.synced = false
		return eventGap
	}
	c.put(ev)
	return eventApplied
}

func (c *seatCopy) put(ev seatEvent) {
	for _, s := range ev.seats {
		c.seats[s[0]] = s[1]
	}
	c.version = ev.version
}

// fromVersionRule says, for a report, which DELTA rule the watchers followed.
func fromVersionRule(withFrom bool) string {
	if withFrom {
		return "the schema has it and the watchers select it"
	}
	return "the schema has no `fromVersion`: a DELTA must then carry the next version"
}
