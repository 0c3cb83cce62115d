// Apollo Client 3 against the real server, set up as a front end would: HttpLink for
// queries and mutations, GraphQLWsLink (graphql-ws) for subscriptions, split by operation,
// InMemoryCache; and the automatic persisted-queries link, hashed with node:crypto, sending
// hashed queries with GET.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { ApolloClient, ApolloError, HttpLink, InMemoryCache, gql, split } from '@apollo/client/core/index.js';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions/index.js';
import { createPersistedQueryLink } from '@apollo/client/link/persisted-queries/index.js';
import { getMainDefinition } from '@apollo/client/utilities/index.js';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { observe } from '../lib/queue.js';
import { SEAT_MAP, checkSnapshot, heldIn } from '../lib/seatmap.js';
import { SHOWTIME, day, httpURL, onSaleShowtimes, token, wsURL } from '../lib/server.js';

const sha256 = (text) => createHash('sha256').update(text).digest('hex');
const clients = [];
after(async () => {
  for (const c of clients) c.stop();
  await Promise.all(clients.map((c) => c.wsClient.dispose()));
});

/**
 * apollo builds a client for a user (bearer; none: anonymous). With persisted, queries
 * go through the persisted-queries link with GET for hashed queries. requests records
 * every HTTP request: [method, url].
 */
function apollo({ bearer, persisted = false } = {}) {
  const requests = [];
  const recordingFetch = (url, init) => {
    requests.push([init?.method ?? 'GET', String(url)]);
    return fetch(url, init);
  };
  let http = new HttpLink({ uri: httpURL, fetch: recordingFetch, headers: bearer ? { authorization: `Bearer ${bearer}` } : {} });
  if (persisted) {
    http = createPersistedQueryLink({ sha256, useGETForHashedQueries: true }).concat(http);
  }
  const wsClient = createClient({
    url: wsURL, webSocketImpl: WebSocket, retryAttempts: 0, lazy: true,
    connectionParams: bearer ? { Authorization: `Bearer ${bearer}` } : {},
  });
  const link = split(({ query }) => {
    const def = getMainDefinition(query);
    return def.kind === 'OperationDefinition' && def.operation === 'subscription';
  }, new GraphQLWsLink(wsClient), http);
  const cache = new InMemoryCache({
    // Each seat-map event replaces the last; seat states are not entities of their own.
    typePolicies: { Subscription: { fields: { seatMap: { merge: false } } } },
  });
  const client = new ApolloClient({ link, cache });
  client.wsClient = wsClient;
  client.requests = requests;
  clients.push(client);
  return client;
}

const CATALOG = gql`query Catalog($date: Date!) {
  movies(first: 10) { totalCount edges { node { id title durationMinutes } } }
  showtimes(date: $date) { id startsAt status }
}`;
const SHOWTIME_Q = gql`query Showtime($id: ID!) {
  showtime(id: $id) { id startsAt status movie { id title } hall { id name seats { id row number } } }
}`;
const HOLD = gql`mutation Hold($in: HoldSeatsInput!) {
  holdSeats(input: $in) { id status amountCents currency expiresAt seats { id } showtime { id } }
}`;
const BEST = gql`query Best($id: ID!, $n: Int!) { bestSeats(showtimeId: $id, count: $n) { id row number } }`;
const PAY = gql`mutation Pay($id: ID!, $ref: String!) { payOrder(orderId: $id, paymentRef: $ref) { id status paidAt } }`;
const MY_ORDERS = gql`query MyOrders { myOrders { id status amountCents seats { id } showtime { id movie { title } } } }`;

async function ownShowtime() {
  return (await onSaleShowtimes())[SHOWTIME.apollo].id;
}

test('catalog: movies, then a showtime with its movie and hall, normalized in the cache', async () => {
  const client = apollo();
  let date;
  let shows = [];
  for (let d = 0; d < 7 && shows.length === 0; d++) {
    date = day(d);
    const { data } = await client.query({ query: CATALOG, variables: { date } });
    assert.equal(data.movies.totalCount, 4);
    assert.equal(data.movies.edges.length, 4);
    shows = data.showtimes;
  }
  assert.ok(shows.length > 0, 'the demo week has showtimes');
  const { data } = await client.query({ query: SHOWTIME_Q, variables: { id: shows[0].id } });
  const st = data.showtime;
  assert.equal(st.id, shows[0].id);
  assert.ok(['Hall 1', 'Hall 2', 'Harbour 1'].includes(st.hall.name), st.hall.name); // the demo's halls (internal/demo/seed.go)
  assert.ok(st.hall.seats.length >= 80);
  // The movie of the showtime is the same cache entry as the one the movies list brought.
  const movie = client.readFragment({ id: client.cache.identify(st.movie), fragment: gql`fragment M on Movie { title durationMinutes }` });
  assert.equal(movie.title, st.movie.title);
  assert.ok(movie.durationMinutes > 0);
});

test('holdSeats with an idempotency key (same key, same order), payOrder, myOrders', async () => {
  const client = apollo({ bearer: token('apollo-buyer') });
  const showtimeId = await ownShowtime();
  const { data: best } = await client.query({ query: BEST, variables: { id: showtimeId, n: 2 }, fetchPolicy: 'network-only' });
  const seatIds = best.bestSeats.map((s) => s.id);
  const input = { showtimeId, seatIds, idempotencyKey: randomUUID() };

  const first = (await client.mutate({ mutation: HOLD, variables: { in: input } })).data.holdSeats;
  assert.equal(first.status, 'PENDING_PAYMENT');
  assert.equal(first.showtime.id, showtimeId);
  assert.deepEqual(first.seats.map((s) => s.id).sort(), [...seatIds].sort());
  assert.ok(first.amountCents > 0);
  const again = (await client.mutate({ mutation: HOLD, variables: { in: input } })).data.holdSeats;
  assert.equal(again.id, first.id, 'the same idempotency key returns the same order');

  const paid = (await client.mutate({ mutation: PAY, variables: { id: first.id, ref: `apollo-${randomUUID()}` } })).data.payOrder;
  assert.equal(paid.status, 'PAID');
  assert.ok(paid.paidAt);
  // The order's cache entry was updated by the mutation's answer.
  const cached = client.readFragment({ id: client.cache.identify({ __typename: 'Order', id: first.id }), fragment: gql`fragment O on Order { status }` });
  assert.equal(cached.status, 'PAID');

  const { data } = await client.query({ query: MY_ORDERS, fetchPolicy: 'network-only' });
  assert.deepEqual(data.myOrders.map((o) => [o.id, o.status]), [[first.id, 'PAID']]);
  assert.equal(data.myOrders[0].showtime.id, showtimeId);
});

test('errors carry extensions.code: a taken seat is SEATS_UNAVAILABLE in graphQLErrors', async () => {
  const showtimeId = await ownShowtime();
  const alice = apollo({ bearer: token('apollo-alice') });
  const bob = apollo({ bearer: token('apollo-bob') });
  const { data } = await alice.query({ query: BEST, variables: { id: showtimeId, n: 2 }, fetchPolicy: 'network-only' });
  const seatIds = data.bestSeats.map((s) => s.id);
  await alice.mutate({ mutation: HOLD, variables: { in: { showtimeId, seatIds, idempotencyKey: randomUUID() } } });

  const err = await bob.mutate({ mutation: HOLD, variables: { in: { showtimeId, seatIds, idempotencyKey: randomUUID() } } })
    .then(() => null, (e) => e);
  assert.ok(err instanceof ApolloError, `want an ApolloError, got ${err}`);
  assert.equal(err.networkError, null, 'a refused hold is a GraphQL error, not a network error');
  assert.equal(err.graphQLErrors.length, 1);
  assert.equal(err.graphQLErrors[0].extensions.code, 'SEATS_UNAVAILABLE');
  assert.deepEqual([...err.graphQLErrors[0].extensions.seatIds].sort(), [...seatIds].sort());
  assert.deepEqual(err.graphQLErrors[0].path, ['holdSeats']);

  // errorPolicy 'all': the error comes back beside the (null) data instead of throwing.
  const res = await bob.mutate({ mutation: HOLD, errorPolicy: 'all',
    variables: { in: { showtimeId, seatIds, idempotencyKey: randomUUID() } } });
  assert.equal(res.errors[0].extensions.code, 'SEATS_UNAVAILABLE');
});

test('errors carry extensions.code: no token, a bad token, an unknown id', async () => {
  const anonymous = apollo();
  const noToken = await anonymous.query({ query: MY_ORDERS }).then(() => null, (e) => e);
  assert.equal(noToken.graphQLErrors[0].extensions.code, 'UNAUTHENTICATED');

  // A token the server refuses is answered 401 before GraphQL runs: Apollo reports a
  // network error (ServerError) whose result still carries the code.
  const badToken = await apollo({ bearer: 'not-a-token' }).query({ query: MY_ORDERS }).then(() => null, (e) => e);
  assert.equal(badToken.networkError.statusCode, 401);
  assert.equal(badToken.networkError.result.errors[0].extensions.code, 'UNAUTHENTICATED');

  const res = await anonymous.query({ query: SHOWTIME_Q, variables: { id: 'no-such-showtime' }, errorPolicy: 'all' });
  assert.ok(res.errors.length > 0);
  assert.ok(res.errors.every((e) => typeof e.extensions.code === 'string'), JSON.stringify(res.errors));
});

test('seatMap subscription through GraphQLWsLink and the cache: SNAPSHOT, then the DELTA of a hold', async () => {
  const showtimeId = await ownShowtime();
  const watcher = apollo({ bearer: token('apollo-watcher') });
  const buyer = apollo({ bearer: token('apollo-holder') });
  const { data } = await buyer.query({ query: BEST, variables: { id: showtimeId, n: 2 }, fetchPolicy: 'network-only' });
  const seatIds = data.bestSeats.map((s) => s.id);

  const query = gql(SEAT_MAP);
  const events = observe(watcher.subscribe({ query, variables: { id: showtimeId } }));
  try {
    const first = await events.next('the SNAPSHOT');
    assert.equal(first.error, undefined);
    checkSnapshot(first.value.data.seatMap, showtimeId, seatIds);
    // Seats are entities in the cache: the snapshot's are readable by id.
    const seat = watcher.readFragment({ id: watcher.cache.identify({ __typename: 'Seat', id: seatIds[0] }), fragment: gql`fragment S on Seat { row number }` });
    assert.ok(seat.row && seat.number > 0);

    await buyer.mutate({ mutation: HOLD, variables: { in: { showtimeId, seatIds, idempotencyKey: randomUUID() } } });
    let delta;
    do {
      const r = await events.next('the DELTA of the hold');
      assert.equal(r.error, undefined);
      delta = r.value.data.seatMap;
    } while (!heldIn(delta, seatIds));
    // The cache holds the latest event under the subscription's root field.
    const root = watcher.cache.extract().ROOT_SUBSCRIPTION;
    const cached = root[`seatMap(${JSON.stringify({ showtimeId })})`];
    assert.ok(cached, `the seat map is in the cache: ${Object.keys(root)}`);
    assert.equal(cached.version, delta.version);
    assert.equal(cached.kind, 'DELTA');
  } finally {
    events.close();
  }
});

test('persisted queries over GET: an unknown hash is registered with POST, then served by GET alone', async () => {
  // A document of its own, so its hash is unknown to the server at first.
  const tag = `p${randomUUID().replaceAll('-', '')}`;
  const query = gql`query ${tag} { movies(first: 3) { totalCount edges { node { id title } } } }`;
  const first = apollo({ persisted: true });
  const a = await first.query({ query });
  assert.equal(a.data.movies.totalCount, 4);
  assert.deepEqual(first.requests.map(([m]) => m), ['GET', 'POST'], 'the hash alone first (GET), then the document (POST)');
  const [method, url] = first.requests[0];
  assert.equal(method, 'GET');
  const params = new URL(url).searchParams;
  assert.equal(params.get('query'), null, 'the GET carries the hash, not the document');
  assert.match(params.get('extensions'), /"sha256Hash":"[0-9a-f]{64}"/);

  const second = apollo({ persisted: true });
  const b = await second.query({ query });
  assert.deepEqual(second.requests.map(([m]) => m), ['GET'], 'a registered hash is served by GET alone');
  assert.deepEqual(b.data, a.data);
});
