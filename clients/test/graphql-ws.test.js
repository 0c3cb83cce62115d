// graphql-ws (the graphql-transport-ws protocol) against the real server: the seat map's
// SNAPSHOT, the DELTA of a hold made over HTTP, the bearer token of connection_init (a
// user's, a guest session's), and 4403 for a bad token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { SEAT_MAP, checkSnapshot, heldIn } from '../lib/seatmap.js';
import { SHOWTIME, bestSeats, gql, guestSession, holdSeats, showtimeFor, token, withTimeout, wsURL } from '../lib/server.js';

function client(connectionParams, on) {
  // No retries: a refused connection must show as it is, not be tried again.
  return createClient({ url: wsURL, webSocketImpl: WebSocket, connectionParams, retryAttempts: 0, lazy: true, on });
}

test('seatMap subscription: SNAPSHOT, then the DELTA of a hold made over HTTP', async () => {
  const showtimeId = await showtimeFor(SHOWTIME.graphqlWs);
  const seatIds = await bestSeats(showtimeId, 2);
  const bearer = token('ws-watcher');
  const ws = client({ Authorization: `Bearer ${bearer}` });
  const events = ws.iterate({ query: SEAT_MAP, variables: { id: showtimeId } });
  try {
    const first = await withTimeout(events.next(), 10_000, 'the SNAPSHOT');
    assert.equal(first.value.errors, undefined);
    const snapshot = first.value.data.seatMap;
    checkSnapshot(snapshot, showtimeId, seatIds);

    await holdSeats(token('ws-buyer'), showtimeId, seatIds);
    for (;;) {
      const { value, done } = await withTimeout(events.next(), 10_000, 'the DELTA of the hold');
      assert.equal(done, false, 'the subscription ended before the DELTA');
      const event = value.data.seatMap;
      assert.ok(event.version > snapshot.version, `version ${event.version} follows the snapshot's ${snapshot.version}`);
      if (heldIn(event, seatIds)) break;
    }
  } finally {
    await events.return();
    await ws.dispose();
  }
});

test('connection_init with a bearer token: operations run as that user', async () => {
  const showtimeId = await showtimeFor(SHOWTIME.graphqlWs);
  const seatIds = await bestSeats(showtimeId, 1);
  const bearer = token('ws-owner');
  const order = await holdSeats(bearer, showtimeId, seatIds);
  const ws = client({ Authorization: `Bearer ${bearer}` });
  try {
    const result = await withTimeout(ws.iterate({ query: '{ myOrders { id status } }' }).next(), 10_000, 'myOrders');
    assert.equal(result.value.errors, undefined);
    assert.deepEqual(result.value.data.myOrders, [{ id: order.id, status: 'PENDING_PAYMENT' }]);
  } finally {
    await ws.dispose();
  }
});

test('a guest session watches the seat map with its own token, and holds no seats', async () => {
  const showtimeId = await showtimeFor(SHOWTIME.graphqlWs);
  const seatIds = await bestSeats(showtimeId, 1);
  const guest = await guestSession();
  const ws = client({ Authorization: `Bearer ${guest}` });
  const events = ws.iterate({ query: SEAT_MAP, variables: { id: showtimeId } });
  try {
    const first = await withTimeout(events.next(), 10_000, 'the SNAPSHOT');
    assert.equal(first.value.errors, undefined);
    checkSnapshot(first.value.data.seatMap, showtimeId, seatIds);
    const held = await withTimeout(ws.iterate({
      query: 'mutation($in: HoldSeatsInput!) { holdSeats(input: $in) { id } }',
      variables: { in: { showtimeId, seatIds, idempotencyKey: 'guest-hold' } },
    }).next(), 10_000, 'holdSeats as a guest');
    assert.equal(held.value.errors?.[0]?.extensions?.code, 'UNAUTHENTICATED');
  } finally {
    await events.return();
    await ws.dispose();
  }
  const { body } = await gql('{ myOrders { id } }', {}, { bearer: guest });
  assert.equal(body.errors?.[0]?.extensions?.code, 'UNAUTHENTICATED');
});

test('a bad token in connection_init closes the socket with 4403', async () => {
  const closes = [];
  const ws = client({ Authorization: 'Bearer not-a-token' }, { closed: (e) => closes.push(e.code) });
  try {
    const err = await withTimeout(
      ws.iterate({ query: '{ __typename }' }).next().then(() => null, (e) => e),
      10_000, 'the socket to close');
    assert.ok(err, 'the operation failed');
    assert.equal(err.code, 4403, `close code ${err.code} (${err.reason})`);
    assert.deepEqual(closes, [4403]);
  } finally {
    await ws.dispose();
  }
});
