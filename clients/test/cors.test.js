// A browser front end on another origin: CORS preflight and answers for the origin the
// server allows (SEATFLOW_ALLOWED_ORIGINS), nothing for others; the websocket's origin
// check likewise.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { httpURL, origin, wsURL } from '../lib/server.js';

const other = 'https://elsewhere.seatflow.test';

function preflight(from) {
  return fetch(httpURL, {
    method: 'OPTIONS',
    headers: { origin: from, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, authorization' },
  });
}

test('preflight for POST /query from the allowed origin', async () => {
  const res = await preflight(origin);
  assert.ok(res.status === 204 || res.status === 200, `status ${res.status}`);
  assert.equal(res.headers.get('access-control-allow-origin'), origin);
  assert.match(res.headers.get('access-control-allow-methods'), /\bPOST\b/);
  const allowed = res.headers.get('access-control-allow-headers').toLowerCase();
  assert.match(allowed, /\bcontent-type\b/);
  assert.match(allowed, /\bauthorization\b/);
  assert.match(res.headers.get('vary') ?? '', /Origin/i);
});

test('preflight with the headers client libraries add (Apollo, tracing) is allowed, cached for hours', async () => {
  const asked = 'content-type, apollographql-client-name, apollographql-client-version, traceparent, sentry-trace, baggage';
  const res = await fetch(httpURL, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': asked },
  });
  assert.equal(res.headers.get('access-control-allow-origin'), origin);
  const allowed = res.headers.get('access-control-allow-headers').toLowerCase();
  for (const h of asked.split(', ')) assert.ok(allowed.includes(h), `${h} allowed: ${allowed}`);
  assert.ok(Number(res.headers.get('access-control-max-age')) >= 3600);
  // And the request itself, with those headers, from that origin.
  const post = await fetch(httpURL, {
    method: 'POST',
    headers: { origin, 'content-type': 'application/json', 'apollographql-client-name': 'web', traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' },
    body: JSON.stringify({ query: '{ __typename }' }),
  });
  assert.equal(post.status, 200);
  assert.equal(post.headers.get('access-control-allow-origin'), origin);
  assert.match(post.headers.get('access-control-expose-headers') ?? '', /Retry-After/i);
});

test('preflight from another origin gets no CORS headers', async () => {
  const res = await preflight(other);
  assert.equal(res.headers.get('access-control-allow-origin'), null);
});

test('a POST from the allowed origin is answered with its CORS header', async () => {
  const res = await fetch(httpURL, {
    method: 'POST',
    headers: { origin, 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ __typename }' }),
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('access-control-allow-origin'), origin);
  assert.deepEqual((await res.json()).data, { __typename: 'Query' });
});

function dial(from) {
  return new Promise((resolve) => {
    const ws = new WebSocket(wsURL, 'graphql-transport-ws', { origin: from });
    ws.on('open', () => {
      ws.close();
      resolve('open');
    });
    ws.on('unexpected-response', (_req, res) => {
      resolve(res.statusCode);
      ws.terminate();
    });
    ws.on('error', () => {});
  });
}

test('websocket: the allowed origin connects, another is refused with 403', async () => {
  assert.equal(await dial(origin), 'open');
  assert.equal(await dial(other), 403);
});
