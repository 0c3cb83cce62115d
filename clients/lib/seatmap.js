// What the seat-map subscription tests share, whatever the client library: the document,
// and the checks of its SNAPSHOT and of the DELTA a hold causes.
import assert from 'node:assert/strict';

/** SEAT_MAP subscribes to a showtime's seat map; it selects the seats' ids to follow them. */
export const SEAT_MAP = `subscription SeatMap($id: ID!) {
  seatMap(showtimeId: $id) { kind showtimeId fromVersion version seats { seat { id row number } status } }
}`;

/** checkSnapshot asserts that event is a SNAPSHOT of the whole hall with seatIds free. */
export function checkSnapshot(event, showtimeId, seatIds) {
  assert.equal(event.kind, 'SNAPSHOT');
  assert.equal(event.showtimeId, showtimeId);
  assert.ok(event.seats.length >= 80, `a snapshot lists every seat of the hall, got ${event.seats.length}`);
  for (const id of seatIds) {
    const s = event.seats.find((x) => x.seat.id === id);
    assert.ok(s, `seat ${id} is in the snapshot`);
    assert.equal(s.status, 'AVAILABLE', `seat ${id} is free before the hold`);
  }
}

/** heldIn reports whether a DELTA event shows every one of seatIds HELD. */
export function heldIn(event, seatIds) {
  if (event.kind !== 'DELTA') return false;
  return seatIds.every((id) => event.seats.some((s) => s.seat.id === id && s.status === 'HELD'));
}

/**
 * followSeatMap keeps a client's seat map from a seatMap subscription, as a front end
 * must (the rule of SeatMapEvent.fromVersion in the schema): a SNAPSHOT replaces the map
 * whatever its version (it is the server's whole map; a DELTA may span several versions,
 * merged changes), a DELTA whose fromVersion is the map's version updates the seats it lists
 * (one at or below the map's version is ignored; any other means a change was missed, and
 * it subscribes again), and when the server ends the subscription (an
 * error carrying extensions.code, or complete) it subscribes again after retryMs; the
 * SNAPSHOT that comes first resets the map.
 *
 * subscribe(sink) starts one subscription, calling sink.next(event) for each event and
 * sink.end(errors) once when it ends (errors undefined on complete); it returns a function
 * that stops it. followSeatMap returns { map (seat id → status), version(), ends (the
 * errors of each end, in order), stop() }.
 */
export function followSeatMap(subscribe, { retryMs = 200 } = {}) {
  const map = new Map();
  const ends = [];
  let version = 0;
  let stopped = false;
  let stopCurrent = () => {};
  let timer;
  const start = () => {
    let over = false;
    const sink = {
      next(event) {
        if (over) return;
        if (event.kind === 'SNAPSHOT') map.clear();
        else if (event.version <= version) return;
        else if (event.fromVersion !== undefined && event.fromVersion !== version) {
          stopCurrent(); // a change was missed: subscribe again, from a SNAPSHOT
          sink.end([{ message: `DELTA from version ${event.fromVersion}, the map is at ${version}` }]);
          return;
        }
        for (const s of event.seats) map.set(s.seat.id, s.status);
        version = event.version;
      },
      end(errors) {
        if (over) return;
        over = true;
        ends.push(errors);
        if (!stopped) timer = setTimeout(start, retryMs);
      },
    };
    stopCurrent = subscribe(sink);
  };
  start();
  return {
    map,
    version: () => version,
    ends,
    stop() {
      stopped = true;
      clearTimeout(timer);
      stopCurrent();
    },
  };
}
