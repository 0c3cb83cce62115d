// urql against the real server: @urql/core with Graphcache (normalized, schema-aware from
// the server's introspection) and fetchExchange for queries, subscriptionExchange over a
// graphql-ws client for the live seat map.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Client, fetchExchange, gql, subscriptionExchange } from '@urql/core';
import { cacheExchange } from '@urql/exchange-graphcache';
import { getIntrospectionQuery } from 'graphql';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { Queue } from '../lib/queue.js';
import { SEAT_MAP, checkSnapshot, heldIn } from '../lib/seatmap.js';
import { SHOWTIME, bestSeats, day, holdSeats, httpURL, must, showtimeFor, token, wsURL } from '../lib/server.js';

const sockets = [];
after(() => Promise.all(sockets.map((s) => s.dispose())));

// The schema as a front end's build would ship it: the server's own introspection.
const schema = await must(getIntrospectionQuery());

/** urql builds a client; fetches counts its HTTP requests. */
function urql(bearer) {
  const ws = createClient({ url: wsURL, webSocketImpl: WebSocket, retryAttempts: 0, lazy: true,
    connectionParams: bearer ? { Authorization: `Bearer ${bearer}` } : {} });
  sockets.push(ws);
  const counted = { fetches: 0 };
  const client = new Client({
    url: httpURL,
    fetch: (url, init) => {
      counted.fetches++;
      return fetch(url, init);
    },
    fetchOptions: () => ({ headers: bearer ? { authorization: `Bearer ${bearer}` } : {} }),
    exchanges: [
      cacheExchange({
        schema,
        // Types without an id of their own live inside their parent.
        keys: Object.fromEntries(['MovieConnection', 'MovieEdge', 'PageInfo', 'Price', 'SeatMap', 'SeatState',
          'SeatMapEvent'].map((t) => [t, () => null])),
      }),
      fetchExchange,
      subscriptionExchange({
        forwardSubscription: (request) => ({
          subscribe: (sink) => ({ unsubscribe: ws.subscribe({ ...request, query: request.query || '' }, sink) }),
        }),
      }),
    ],
  });
  return Object.assign(client, counted);
}

const CATALOG = gql`query Catalog($date: Date!) {
  movies(first: 10) { totalCount edges { node { id title durationMinutes } } }
  showtimes(date: $date) { id startsAt status movie { id title } hall { id name } }
}`;
const SHOWTIME_Q = gql`query Showtime($id: ID!) { showtime(id: $id) { id movie { id title } hall { id name seats { id } } } }`;

test('catalog: movies and a showtime with its hall, the second time from the cache', async () => {
  const client = urql();
  let data;
  for (let d = 0; d < 7; d++) {
    const res = await client.query(CATALOG, { date: day(d) }).toPromise();
    assert.equal(res.error, undefined);
    data = res.data;
    if (data.showtimes.length > 0) break;
  }
  assert.equal(data.movies.totalCount, 4);
  assert.ok(data.showtimes.length > 0, 'the demo week has showtimes');
  const shown = data.showtimes[0];
  assert.ok(data.movies.edges.some((e) => e.node.id === shown.movie.id), 'the showtime\'s movie is listed');

  const { data: st, error } = await client.query(SHOWTIME_Q, { id: shown.id }).toPromise();
  assert.equal(error, undefined);
  assert.equal(st.showtime.hall.id, shown.hall.id);
  assert.ok(st.showtime.hall.seats.length >= 80);

  const before = client.fetches;
  const again = await client.query(SHOWTIME_Q, { id: shown.id }).toPromise();
  assert.equal(client.fetches, before, 'a query already answered is served by Graphcache');
  assert.equal(again.operation.context.meta.cacheOutcome, 'hit');
  assert.deepEqual(again.data, st);
});

test('errors carry extensions.code in CombinedError.graphQLErrors', async () => {
  const client = urql();
  const res = await client.query(gql`{ myOrders { id } }`, {}).toPromise();
  assert.equal(res.error.networkError, undefined);
  assert.equal(res.error.graphQLErrors[0].extensions.code, 'UNAUTHENTICATED');
});

test('seatMap subscription over graphql-ws: SNAPSHOT, then the DELTA of a hold made over HTTP', async () => {
  const showtimeId = await showtimeFor(SHOWTIME.urql);
  const seatIds = await bestSeats(showtimeId, 2);
  const client = urql(token('urql-watcher'));
  const events = new Queue();
  const sub = client.subscription(gql(SEAT_MAP), { id: showtimeId }).subscribe((result) => events.push(result));
  try {
    const first = await events.next('the SNAPSHOT');
    assert.equal(first.error, undefined);
    checkSnapshot(first.data.seatMap, showtimeId, seatIds);

    await holdSeats(token('urql-buyer'), showtimeId, seatIds, randomUUID());
    let event;
    do {
      const r = await events.next('the DELTA of the hold');
      assert.equal(r.error, undefined);
      event = r.data.seatMap;
      assert.ok(event.version >= first.data.seatMap.version);
    } while (!heldIn(event, seatIds));
  } finally {
    sub.unsubscribe();
  }
});
