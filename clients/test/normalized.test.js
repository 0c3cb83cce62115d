// Normalised caches keep live seat maps, as the README's "For front ends" section sets them
// up: Apollo Client's InMemoryCache and urql's Graphcache read a seat map once, and the
// subscription's events update the cached map in place (seat states by their ids, the
// map's version and available count by the README's snippets), with no refetch. Then
// Relay-style refetch with node(id:), and HTTP caching of a persisted catalog GET.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { ApolloClient, HttpLink, InMemoryCache, gql as apolloGql, split } from '@apollo/client/core/index.js';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions/index.js';
import { getMainDefinition } from '@apollo/client/utilities/index.js';
import { Client, fetchExchange, gql, subscriptionExchange } from '@urql/core';
import { cacheExchange } from '@urql/exchange-graphcache';
import { getIntrospectionQuery } from 'graphql';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { Queue, observe } from '../lib/queue.js';
import { SHOWTIME, bestSeats, holdSeats, httpURL, must, showtimeFor, token, wsURL } from '../lib/server.js';

const sockets = [];
after(() => Promise.all(sockets.map((s) => s.dispose())));

function ws() {
  const c = createClient({ url: wsURL, webSocketImpl: WebSocket, retryAttempts: 0, lazy: true });
  sockets.push(c);
  return c;
}

const MAP = `query Map($id: ID!) { seatMap(showtimeId: $id) { id showtimeId version available seats { id status seat { id row number } } } }`;
const EVENTS = `subscription Events($id: ID!) { seatMap(showtimeId: $id) { kind showtimeId version available seats { id status } } }`;

// The README's Apollo snippet.
function applySeatMapEvent(cache, event) {
  cache.modify({
    id: cache.identify({ __typename: 'SeatMap', showtimeId: event.showtimeId }),
    fields: { version: () => event.version, available: () => event.available },
  });
}

/** statusOf returns seat id → status of a seat map. */
const statusOf = (map) => Object.fromEntries(map.seats.map((s) => [s.seat.id, s.status]));

test('Apollo Client: a DELTA updates the cached seat map (states by id, version and available by the type policy)', async () => {
  const showtimeId = await showtimeFor(SHOWTIME.normalized);
  const wsClient = ws();
  const client = new ApolloClient({
    link: split(({ query }) => {
      const def = getMainDefinition(query);
      return def.kind === 'OperationDefinition' && def.operation === 'subscription';
    }, new GraphQLWsLink(wsClient), new HttpLink({ uri: httpURL, fetch })),
    cache: new InMemoryCache({ typePolicies: { SeatMap: { keyFields: ['showtimeId'] } } }),
  });
  const query = apolloGql(MAP);
  const { data } = await client.query({ query, variables: { id: showtimeId } });
  const before = data.seatMap;

  const events = observe(client.subscribe({ query: apolloGql(EVENTS), variables: { id: showtimeId } }));
  try {
    const snapshot = (await events.next('the SNAPSHOT')).value.data.seatMap;
    applySeatMapEvent(client.cache, snapshot);
    const seatIds = await bestSeats(showtimeId, 2);
    await holdSeats(token('normalized-apollo'), showtimeId, seatIds);
    let delta;
    do {
      delta = (await events.next('the DELTA of the hold')).value.data.seatMap;
      applySeatMapEvent(client.cache, delta);
    } while (delta.kind !== 'DELTA' || !delta.seats.some((s) => s.status === 'HELD'));

    const cached = client.readQuery({ query, variables: { id: showtimeId } }).seatMap;
    assert.equal(cached.version, delta.version, 'the cached map has the event\'s version');
    assert.equal(cached.available, delta.available, 'and its available count');
    const status = statusOf(cached);
    for (const id of seatIds) assert.equal(status[id], 'HELD', `seat ${id} is HELD in the cached map`);
    assert.equal(cached.available, before.available - 2);
  } finally {
    events.close();
    client.stop();
  }
});

test('urql Graphcache: a DELTA updates the cached seat map (the README\'s keys and updater)', async () => {
  const showtimeId = await showtimeFor(SHOWTIME.normalized + 1);
  const schema = await must(getIntrospectionQuery());
  const wsClient = ws();
  let fetches = 0;
  const client = new Client({
    url: httpURL,
    fetch: (url, init) => {
      fetches++;
      return fetch(url, init);
    },
    exchanges: [
      cacheExchange({
        schema,
        keys: {
          SeatMap: (m) => m.showtimeId,
          // Relay's connection types and value types have no id of their own.
          ...Object.fromEntries(['MovieConnection', 'MovieEdge', 'PageInfo', 'Price', 'SeatMapEvent'].map((t) => [t, () => null])),
        },
        updates: {
          Subscription: {
            seatMap(result, _args, cache) {
              const e = result.seatMap;
              cache.writeFragment(gql`fragment _ on SeatMap { showtimeId version available }`,
                { __typename: 'SeatMap', showtimeId: e.showtimeId, version: e.version, available: e.available });
            },
          },
        },
      }),
      fetchExchange,
      subscriptionExchange({
        forwardSubscription: (request) => ({
          subscribe: (sink) => ({ unsubscribe: wsClient.subscribe({ ...request, query: request.query || '' }, sink) }),
        }),
      }),
    ],
  });
  const first = await client.query(gql(MAP), { id: showtimeId }).toPromise();
  assert.equal(first.error, undefined);
  const events = new Queue();
  const sub = client.subscription(gql(EVENTS), { id: showtimeId }).subscribe((r) => events.push(r));
  try {
    await events.next('the SNAPSHOT');
    const seatIds = await bestSeats(showtimeId, 2);
    await holdSeats(token('normalized-urql'), showtimeId, seatIds, randomUUID());
    let delta;
    do {
      const r = await events.next('the DELTA of the hold');
      assert.equal(r.error, undefined);
      delta = r.data.seatMap;
    } while (delta.kind !== 'DELTA' || !delta.seats.some((s) => s.status === 'HELD'));

    const sent = fetches;
    const cached = await client.query(gql(MAP), { id: showtimeId }, { requestPolicy: 'cache-only' }).toPromise();
    assert.equal(fetches, sent, 'read from Graphcache, not the server');
    const map = cached.data.seatMap;
    assert.equal(map.version, delta.version);
    assert.equal(map.available, first.data.seatMap.available - 2);
    const status = statusOf(map);
    for (const id of seatIds) assert.equal(status[id], 'HELD', `seat ${id} is HELD in the cached map`);
  } finally {
    sub.unsubscribe();
  }
});

test('Relay-style refetch: node(id:) returns each object its id names, ids unique across types', async () => {
  const showtimeId = await showtimeFor(0);
  const { showtime } = await must(`query S($id: ID!) { showtime(id: $id) { id status movie { id title } hall { id name } } }`, { id: showtimeId });
  const ids = [showtime.id, showtime.movie.id, showtime.hall.id];
  assert.equal(new Set(ids).size, 3, `ids of a showtime, its movie and its hall differ: ${ids}`);
  const { nodes } = await must(`query N($ids: [ID!]!) { nodes(ids: $ids) { __typename id ... on Showtime { status } ... on Movie { title } ... on Hall { name } } }`, { ids });
  assert.deepEqual(nodes.map((n) => n.__typename), ['Showtime', 'Movie', 'Hall']);
  assert.equal(nodes[0].status, showtime.status);
  assert.equal(nodes[1].title, showtime.movie.title);
  assert.equal(nodes[2].name, showtime.hall.name);
  const { node } = await must(`query N($id: ID!) { node(id: $id) { id ... on Movie { title } } }`, { id: showtime.movie.id });
  assert.equal(node.title, showtime.movie.title);
});

test('a persisted catalog GET is publicly cacheable with an ETag, then 304 Not Modified', async () => {
  const query = `query Listing${randomUUID().replaceAll('-', '')} { movies(first: 4) { edges { node { id title } } } }`;
  const hash = createHash('sha256').update(query).digest('hex');
  const extensions = JSON.stringify({ persistedQuery: { version: 1, sha256Hash: hash } });
  const register = await fetch(httpURL, { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query, extensions: JSON.parse(extensions) }) });
  assert.equal(register.status, 200);
  assert.equal(register.headers.get('cache-control'), 'private, no-store', 'a POST is never shared');
  const url = `${httpURL}?${new URLSearchParams({ extensions })}`;
  let res;
  for (let i = 0; i < 5; i++) { // the first reads fill the instance's local cache level
    res = await fetch(url);
    if (res.headers.get('etag')) break;
  }
  assert.equal(res.status, 200);
  assert.match(res.headers.get('cache-control'), /^public, max-age=\d+$/);
  const etag = res.headers.get('etag');
  assert.match(etag, /^"[^"]+"$/, 'a strong ETag');
  const body = await res.json();
  assert.equal(body.data.movies.edges.length, 4);
  assert.equal(body.extensions.cost.throttleStatus, undefined, 'no client\'s budget in a shared answer');

  const again = await fetch(url, { headers: { 'if-none-match': etag } });
  assert.equal(again.status, 304);
  assert.equal((await again.text()).length, 0);
});
