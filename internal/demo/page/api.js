// SeatFlow live seat map, part 1 of 3: the API client. The page talks to the server only as
// any front end could: POST /query (a guest session's token when nobody is signed in), the
// seatMap subscription over graphql-transport-ws and, in embedded mode, GET /demo/token. Plain JavaScript with no modules or build step (the
// CSP allows only same-origin script files): index.html loads api.js, view.js and app.js in
// that order, and what they share hangs off one global, SeatFlow.
'use strict';

(() => {
  // APIError is a failed operation: code is the server's error code, or NETWORK when the
  // server was not reached, so the page can word it for a customer.
  class APIError extends Error {
    constructor(code, message, extensions) {
      super(message);
      this.code = code;
      this.extensions = extensions || {};
    }
  }

  // gql posts one operation to /query, as token's holder if token is set; it resolves to
  // {data, serverDate} or throws APIError.
  async function gql(query, variables, token) {
    const headers = { 'Content-Type': 'application/json', Accept: 'application/json' };
    if (token) headers.Authorization = 'Bearer ' + token;
    let res;
    try {
      res = await fetch('/query', { method: 'POST', headers, body: JSON.stringify({ query, variables }) });
    } catch (e) {
      throw new APIError('NETWORK', String(e));
    }
    let body;
    try {
      body = await res.json();
    } catch (e) {
      throw new APIError(res.status === 429 ? 'RATE_LIMITED' : res.status >= 500 ? 'SERVICE_UNAVAILABLE' : 'INTERNAL', 'HTTP ' + res.status);
    }
    if (body.errors && body.errors.length > 0) {
      const e = body.errors[0];
      const ext = e.extensions || {};
      throw new APIError(ext.code || (res.status === 401 ? 'UNAUTHENTICATED' : 'INTERNAL'), e.message, ext);
    }
    const date = Date.parse(res.headers.get('Date') || '');
    return { data: body.data, serverDate: isNaN(date) ? Date.now() : date };
  }

  // subscribe opens a graphql-transport-ws connection to /query and starts one subscription
  // on it; it returns the WebSocket, which the caller closes to end it. on.current() says
  // whether the caller still wants this connection: once it is false, whatever the
  // connection does later is ignored (a newer one replaced it). on.token() is read when the
  // socket opens, for connection_init. on.next(payload), on.error(payload), on.complete()
  // and on.close(event) report what the server sent.
  function subscribe(query, variables, on) {
    const url = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/query';
    const ws = new WebSocket(url, 'graphql-transport-ws');
    const send = (m) => ws.send(JSON.stringify(m));
    ws.onopen = () => {
      const token = on.token();
      send({ type: 'connection_init', payload: token ? { Authorization: 'Bearer ' + token } : {} });
    };
    ws.onmessage = (ev) => {
      if (!on.current()) return;
      let m;
      try { m = JSON.parse(ev.data); } catch (e) { return; }
      switch (m.type) {
        case 'connection_ack':
          // One subscription per connection, so its id is fixed.
          send({ id: 'seatmap', type: 'subscribe', payload: { query, variables } });
          break;
        case 'ping':
          send({ type: 'pong' });
          break;
        case 'next':
          on.next(m.payload);
          break;
        case 'error':
          on.error(m.payload);
          break;
        case 'complete':
          on.complete();
          break;
      }
    };
    ws.onclose = (ev) => {
      if (on.current()) on.close(ev);
    };
    return ws;
  }

  // jwtClaims decodes a token's claims without checking them (the server does): the page
  // only shows whom it acts for.
  function jwtClaims(tok) {
    try {
      const part = tok.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
      return JSON.parse(atob(part + '='.repeat((4 - (part.length % 4)) % 4)));
    } catch (e) {
      return null;
    }
  }

  // demoToken resolves to a token for a fresh demo customer (or, with role 'staff', a door
  // worker) in embedded mode, which hands them out; elsewhere /demo/token is 204 (no token)
  // and it resolves to null.
  async function demoToken(role) {
    try {
      const res = await fetch('/demo/token' + (role ? '?role=' + encodeURIComponent(role) : ''), { headers: { Accept: 'application/json' } });
      if (res.status === 200) {
        const body = await res.json();
        if (body.token) return body.token;
      }
    } catch (e) {
      // no demo token: the page asks for one
    }
    return null;
  }

  // guestSession resolves to a guest session ({token, expiresAt (ms)}) for a page that is
  // not signed in: its reads and its live socket then carry a budget of their own instead
  // of sharing their address' (a cinema's Wi-Fi, a carrier's NAT); null when the server
  // gives none (the page then reads without a token).
  async function guestSession() {
    try {
      const { data } = await gql('mutation DemoGuestSession { guestSession { token expiresAt } }', {});
      return { token: data.guestSession.token, expiresAt: Date.parse(data.guestSession.expiresAt) };
    } catch (e) {
      return null;
    }
  }

  // newKey returns 128 random bits in hex, for an idempotency key or a payment reference.
  function newKey() {
    const b = new Uint8Array(16);
    crypto.getRandomValues(b);
    return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  }

  window.SeatFlow = { api: { gql, subscribe, jwtClaims, demoToken, guestSession, newKey } };
})();
