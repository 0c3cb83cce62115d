// subscriptions-transport-ws (Apollo's legacy client, the graphql-ws subprotocol) against
// the real server: the seat map's SNAPSHOT, the DELTA of a hold made over HTTP, the bearer
// token of connection_init, and for a bad token connection_error then a 4403 close.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SubscriptionClient } from 'subscriptions-transport-ws';
import WebSocket from 'ws';
import { observe } from '../lib/queue.js';
import { SEAT_MAP, checkSnapshot, heldIn } from '../lib/seatmap.js';
import { SHOWTIME, bestSeats, holdSeats, showtimeFor, token, withTimeout, wsURL } from '../lib/server.js';

/** open connects with connectionParams; closes records the socket's close codes. */
function open(connectionParams, connectionCallback) {
  const closes = [];
  class RecordingWebSocket extends WebSocket {
    constructor(...args) {
      super(...args);
      this.on('close', (code) => closes.push(code));
    }
  }
  const client = new SubscriptionClient(wsURL, { connectionParams, connectionCallback, reconnect: false },
    RecordingWebSocket);
  return { client, closes };
}

test('seatMap subscription: SNAPSHOT, then the DELTA of a hold made over HTTP', async () => {
  const showtimeId = await showtimeFor(SHOWTIME.legacyWs);
  const seatIds = await bestSeats(showtimeId, 2);
  const { client } = open({ Authorization: `Bearer ${token('legacy-watcher')}` });
  const seatMap = observe(client.request({ query: SEAT_MAP, variables: { id: showtimeId } }));
  try {
    const first = await seatMap.next('the SNAPSHOT');
    assert.equal(first.error, undefined);
    assert.equal(first.value.errors, undefined);
    const snapshot = first.value.data.seatMap;
    checkSnapshot(snapshot, showtimeId, seatIds);

    await holdSeats(token('legacy-buyer'), showtimeId, seatIds);
    for (;;) {
      const { value, error, done } = await seatMap.next('the DELTA of the hold');
      assert.ok(!error && !done, `the subscription ended before the DELTA: ${error}`);
      const event = value.data.seatMap;
      assert.ok(event.version > snapshot.version);
      if (heldIn(event, seatIds)) break;
    }
  } finally {
    seatMap.close();
    client.close();
  }
});

test('connection_init with a bearer token: operations run as that user', async () => {
  const showtimeId = await showtimeFor(SHOWTIME.legacyWs);
  const seatIds = await bestSeats(showtimeId, 1);
  const bearer = token('legacy-owner');
  const order = await holdSeats(bearer, showtimeId, seatIds);
  const { client } = open({ Authorization: `Bearer ${bearer}` });
  const orders = observe(client.request({ query: '{ myOrders { id status } }' }));
  try {
    const { value, error } = await orders.next('myOrders');
    assert.equal(error, undefined);
    assert.equal(value.errors, undefined);
    assert.deepEqual(value.data.myOrders, [{ id: order.id, status: 'PENDING_PAYMENT' }]);
  } finally {
    orders.close();
    client.close();
  }
});

test('a bad token: connection_error, then the socket closes with 4403', async () => {
  let refused;
  const connectionError = new Promise((resolve) => {
    refused = resolve;
  });
  const { client, closes } = open({ Authorization: 'Bearer not-a-token' }, (err) => err && refused(err));
  const closed = new Promise((resolve) => client.onDisconnected(resolve));
  try {
    const err = await withTimeout(connectionError, 10_000, 'connection_error');
    assert.match(err.message, /token/);
    await withTimeout(closed, 10_000, 'the socket to close');
    assert.deepEqual(closes, [4403]);
  } finally {
    client.close();
  }
});
