// followSeatMap, the seat-map keeper of clients/lib/seatmap.js, against the real server
// through graphql-ws: it follows a hold, and when its subscription is ended under it (as
// the server does with an error carrying a code when Redis is lost or the instance shuts
// down), it subscribes again and its map is reset from the SNAPSHOT, whatever its version.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { SEAT_MAP, followSeatMap } from '../lib/seatmap.js';
import { SHOWTIME, bestSeats, holdSeats, showtimeFor, token, wsURL } from '../lib/server.js';

async function until(what, ok, ms = 10_000) {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) assert.fail(`${what} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('followSeatMap: follows holds, subscribes again when its subscription ends, resets from the SNAPSHOT', async () => {
  const showtimeId = await showtimeFor(SHOWTIME.keeper);
  const [first, second] = await bestSeats(showtimeId, 2);
  const ws = createClient({ url: wsURL, webSocketImpl: WebSocket, retryAttempts: 0, lazy: true });
  let subscriptions = 0;
  let endCurrent;
  const follower = followSeatMap((sink) => {
    subscriptions++;
    const stop = ws.subscribe({ query: SEAT_MAP, variables: { id: showtimeId } }, {
      next: (r) => sink.next(r.data.seatMap),
      error: (e) => sink.end(Array.isArray(e) ? e : [e]),
      complete: () => sink.end(),
    });
    // What the server's end looks like to the keeper: an error carrying a code.
    endCurrent = () => { stop(); sink.end([{ message: 'ended', extensions: { code: 'SERVICE_UNAVAILABLE' } }]); };
    return stop;
  }, { retryMs: 50 });
  try {
    await until('the SNAPSHOT', () => follower.map.size > 0);
    await holdSeats(token('keeper-buyer-1'), showtimeId, [first]);
    await until('the first hold shown', () => follower.map.get(first) === 'HELD');
    endCurrent();
    follower.map.set(second, 'SOLD'); // a wrong state the SNAPSHOT must reset
    await until('a new subscription', () => subscriptions === 2);
    await until('the map reset from the SNAPSHOT', () => follower.map.get(second) === 'AVAILABLE');
    await holdSeats(token('keeper-buyer-2'), showtimeId, [second]);
    await until('the second hold shown', () => follower.map.get(second) === 'HELD');
    assert.equal(follower.map.get(first), 'HELD');
    assert.equal(follower.ends[0][0].extensions.code, 'SERVICE_UNAVAILABLE');
  } finally {
    follower.stop();
    await ws.dispose();
  }
});
