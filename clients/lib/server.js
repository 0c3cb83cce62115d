// The server under test, as scripts/clients.sh started it: its address, tokens signed with
// its secret, and catalog data found through the API. Every id is opaque: it comes from an
// answer of the API, never from a number.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';

function required(name) {
  const v = process.env[name];
  if (!v) {
    throw new Error(`${name} is not set: run the tests with scripts/clients.sh (make clients)`);
  }
  return v;
}

/** httpURL is the GraphQL endpoint, e.g. http://127.0.0.1:PORT/query. */
export const httpURL = required('SEATFLOW_URL');
/** wsURL is the same endpoint for websockets. */
export const wsURL = httpURL.replace(/^http/, 'ws');
/** origin is the browser origin the server allows (SEATFLOW_ALLOWED_ORIGINS). */
export const origin = required('SEATFLOW_TEST_ORIGIN');
/** timeZone is the cinema's time zone: a Date is a day in it. */
export const timeZone = process.env.SEATFLOW_TIMEZONE || 'UTC';

/**
 * token returns a bearer token for a new user (its subject made unique per call), signed by
 * `seatflow token` with the server's secret.
 */
export function token(name, role = 'customer') {
  const sub = `${name}-${randomUUID()}`;
  return execFileSync(required('SEATFLOW_BIN'), ['token', '--sub', sub, '--role', role], {
    env: process.env,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  }).trim();
}

/**
 * guestSession starts a guest session, as a front end does for a visitor who has not signed
 * in, and returns its bearer token: reads and websockets sent with it have a budget of
 * their own instead of their address'.
 */
export async function guestSession() {
  const data = await must('mutation GuestSession { guestSession { token expiresAt } }', {});
  return data.guestSession.token;
}

/** gql posts one GraphQL request with fetch and returns the status and the parsed body. */
export async function gql(query, variables, { bearer, headers = {} } = {}) {
  const res = await fetch(httpURL, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/graphql-response+json, application/json;q=0.9',
      ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
      ...headers,
    },
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, body: await res.json() };
}

/** must runs a request that must succeed and returns its data. */
export async function must(query, variables, opts) {
  const { status, body } = await gql(query, variables, opts);
  if (status !== 200 || body.errors) {
    throw new Error(`${status} ${JSON.stringify(body.errors)} for ${query}`);
  }
  return body.data;
}

/** day is the date `offset` days from today in the cinema's time zone (YYYY-MM-DD). */
export function day(offset = 0) {
  const parts = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' })
    .formatToParts(new Date());
  const get = (t) => Number(parts.find((p) => p.type === t).value);
  const d = new Date(Date.UTC(get('year'), get('month') - 1, get('day') + offset));
  return d.toISOString().slice(0, 10);
}

/**
 * onSaleShowtimes lists the showtimes on sale from today on (the demo seed schedules a
 * week; late in the evening today's are over, and the next day's come first): each test
 * file takes one of its own, so files running side by side never share a seat map.
 */
export async function onSaleShowtimes() {
  const out = [];
  for (let d = 0; d < 7; d++) {
    const data = await must(`query Day($date: Date!) { showtimes(date: $date) { id status startsAt } }`, { date: day(d) });
    out.push(...data.showtimes.filter((s) => s.status === 'ON_SALE' && Date.parse(s.startsAt) > Date.now()));
  }
  if (out.length === 0) {
    throw new Error('no showtime on sale this week: was the database seeded (seatflow seed-demo)?');
  }
  return out;
}

/** Which showtime each test file uses (an index into onSaleShowtimes). */
export const SHOWTIME = { graphqlWs: 0, legacyWs: 1, apollo: 2, urql: 3, normalized: 4, keeper: 6 }; // normalized uses 4 and 5

/** showtimeFor returns the id of the showtime a test file owns. */
export async function showtimeFor(index) {
  const all = await onSaleShowtimes();
  return all[index % all.length].id;
}

/** bestSeats returns the ids of count adjacent free seats of a showtime. */
export async function bestSeats(showtimeId, count) {
  const data = await must(`query Best($id: ID!, $n: Int!) { bestSeats(showtimeId: $id, count: $n) { id } }`,
    { id: showtimeId, n: count });
  if (data.bestSeats.length !== count) {
    throw new Error(`bestSeats gave ${data.bestSeats.length} seats, want ${count}`);
  }
  return data.bestSeats.map((s) => s.id);
}

/** holdSeats holds seats over HTTP for the token's user and returns the order. */
export async function holdSeats(bearer, showtimeId, seatIds, idempotencyKey = randomUUID()) {
  const data = await must(`mutation Hold($in: HoldSeatsInput!) { holdSeats(input: $in) { id status } }`,
    { in: { showtimeId, seatIds, idempotencyKey } }, { bearer });
  return data.holdSeats;
}

/** withTimeout rejects when promise has not settled after ms. */
export function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
