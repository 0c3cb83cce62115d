// What the seat-map subscription tests share, whatever the client library: the document,
// and the checks of its SNAPSHOT and of the DELTA a hold causes.
import assert from 'node:assert/strict';

/** SEAT_MAP subscribes to a showtime's seat map; it selects the seats' ids to follow them. */
export const SEAT_MAP = `subscription SeatMap($id: ID!) {
  seatMap(showtimeId: $id) { kind showtimeId version seats { seat { id row number } status } }
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
