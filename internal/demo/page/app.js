// SeatFlow live seat map. Plain JavaScript; it uses only the public API: POST /query and the
// seatMap subscription over graphql-transport-ws, like any front end would.
'use strict';

(() => {
  const TOKEN_KEY = 'seatflow.demo.token';
  const $ = (id) => document.getElementById(id);

  const state = {
    token: null,
    user: null,
    showtime: null, // the showtime being shown (with hall seats, limits, prices)
    seats: new Map(), // seat id -> {seat, status, el}
    version: -1, // last seat-map version applied
    selected: new Set(), // seat ids, in click order
    holdKey: null, // idempotency key of the current selection
    order: null, // the pending order shown, with deadline (local ms)
    ws: null,
    wsGen: 0,
    wsRetry: 0,
    timer: null,
    busy: false,
  };

  // ---------- messages ----------

  const MESSAGES = {
    SEAT_GAP: 'That choice would leave a single empty seat stranded next to taken seats. Pick seats side by side, or include the lone seat.',
    NOT_ON_SALE: 'Tickets for this showtime are not on sale right now.',
    ORDER_EXPIRED: 'Your hold expired and the seats were released. Please choose again.',
    RATE_LIMITED: 'Too many attempts in a short time. Please wait a moment and try again.',
    UNAUTHENTICATED: 'You are not signed in, or your token expired. Paste a valid customer token above.',
    FORBIDDEN: 'This token may not do that.',
    NOT_FOUND: 'That showtime or order no longer exists.',
    IN_PROGRESS: 'Your previous request is still being processed. Try again in a second.',
    INVALID_STATE: 'This order can no longer be changed (it may already be paid, cancelled or expired).',
    SERVICE_UNAVAILABLE: 'The box office is busy right now. Please try again shortly.',
    INTERNAL: 'Something went wrong on our side. Please try again.',
    NETWORK: 'Cannot reach the server. Check your connection and try again.',
  };

  function showMessage(kind, text, code) {
    const el = $('message');
    el.hidden = false;
    el.dataset.kind = kind;
    el.dataset.code = code || '';
    el.setAttribute('role', kind === 'error' ? 'alert' : 'status');
    el.textContent = text;
  }

  function clearMessage() {
    const el = $('message');
    el.hidden = true;
    el.textContent = '';
    el.dataset.kind = '';
    el.dataset.code = '';
  }

  function seatLabel(id) {
    const s = state.seats.get(String(id));
    return s ? s.seat.row + s.seat.number : '#' + id;
  }

  function labels(ids) {
    return ids.map(seatLabel).join(', ');
  }

  function plural(n, one, many) {
    return n === 1 ? one : many;
  }

  // errorText turns an API error into a sentence a customer understands.
  function errorText(err) {
    const code = err.code || 'INTERNAL';
    const ext = err.extensions || {};
    switch (code) {
      case 'SEATS_UNAVAILABLE': {
        const ids = Array.isArray(ext.seatIds) ? ext.seatIds.map(String) : [];
        if (ids.length === 0) return 'Sorry, some of these seats were just taken. Please pick other seats.';
        return `Sorry, ${plural(ids.length, 'seat', 'seats')} ${labels(ids)} ${plural(ids.length, 'was', 'were')} just taken. Please pick other seats.`;
      }
      case 'PURCHASE_LIMIT_EXCEEDED': {
        const limit = state.showtime ? state.showtime.purchaseLimit : null;
        return limit ? `You can buy at most ${limit} ${plural(limit, 'seat', 'seats')} for this showtime.` : 'That is more seats than one customer may buy for this showtime.';
      }
      case 'BAD_USER_INPUT':
        return 'That request was not accepted: ' + (err.message || 'invalid input') + '.';
      default:
        return MESSAGES[code] || err.message || 'Something went wrong.';
    }
  }

  function showError(err) {
    showMessage('error', errorText(err), err.code || 'INTERNAL');
  }

  // ---------- API ----------

  class APIError extends Error {
    constructor(code, message, extensions) {
      super(message);
      this.code = code;
      this.extensions = extensions || {};
    }
  }

  // gql posts one operation to /query; it resolves to {data, serverDate} or throws APIError.
  async function gql(query, variables) {
    const headers = { 'Content-Type': 'application/json', Accept: 'application/json' };
    if (state.token) headers.Authorization = 'Bearer ' + state.token;
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

  // ---------- token ----------

  function jwtClaims(tok) {
    try {
      const part = tok.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
      return JSON.parse(atob(part + '='.repeat((4 - (part.length % 4)) % 4)));
    } catch (e) {
      return null;
    }
  }

  function setToken(tok) {
    state.token = tok || null;
    const claims = tok ? jwtClaims(tok) : null;
    state.user = claims && claims.sub ? claims.sub : null;
    if (tok) sessionStorage.setItem(TOKEN_KEY, tok);
    else sessionStorage.removeItem(TOKEN_KEY);
    const status = $('auth-status');
    if (tok) {
      status.dataset.state = 'signed-in';
      status.textContent = `Signed in as customer “${state.user || 'unknown'}” (this tab only).`;
      $('token-form').hidden = true;
      $('token-clear').hidden = false;
    } else {
      status.dataset.state = 'none';
      status.textContent = 'Paste a customer token to hold and pay seats (browsing works without one).';
      $('token-form').hidden = false;
      $('token-clear').hidden = true;
    }
  }

  async function initToken() {
    const stored = sessionStorage.getItem(TOKEN_KEY);
    if (stored) {
      setToken(stored);
      return;
    }
    // Embedded mode hands out a token for a fresh demo customer; elsewhere this is 404.
    try {
      const res = await fetch('/demo/token', { headers: { Accept: 'application/json' } });
      if (res.ok) {
        const body = await res.json();
        if (body.token) {
          setToken(body.token);
          return;
        }
      }
    } catch (e) {
      // no demo token: ask for one
    }
    setToken(null);
  }

  // ---------- showtimes ----------

  function todayLocal() {
    const d = new Date();
    const pad = (n) => String(n).padStart(2, '0');
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
  }

  function fmtTime(iso) {
    const d = new Date(iso);
    return d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  }

  function fmtMoney(cents, currency) {
    try {
      return new Intl.NumberFormat(undefined, { style: 'currency', currency: currency || 'EUR' }).format(cents / 100);
    } catch (e) {
      return (cents / 100).toFixed(2) + ' ' + (currency || '');
    }
  }

  function updateURL() {
    const p = new URLSearchParams();
    if ($('date').value) p.set('date', $('date').value);
    if (state.showtime) p.set('showtime', state.showtime.id);
    history.replaceState(null, '', '?' + p.toString());
  }

  async function loadShowtimes(preferred) {
    const sel = $('showtime-select');
    sel.disabled = true;
    sel.replaceChildren(new Option('Loading…', ''));
    let list;
    try {
      const { data } = await gql(
        'query DemoShowtimes($d: Date!) { showtimes(date: $d) { id startsAt status movie { title } hall { name } } }',
        { d: $('date').value });
      list = data.showtimes;
    } catch (e) {
      sel.replaceChildren(new Option('Could not load showtimes', ''));
      showError(e);
      return;
    }
    if (list.length === 0) {
      sel.replaceChildren(new Option('No showtimes on this day', ''));
      closeShowtime();
      return;
    }
    sel.replaceChildren(...list.map((s) => {
      const status = s.status === 'ON_SALE' ? '' : ` (${s.status.replace('_', ' ').toLowerCase()})`;
      return new Option(`${fmtTime(s.startsAt)} · ${s.movie.title} · ${s.hall.name}${status}`, s.id);
    }));
    sel.disabled = false;
    const pick = list.find((s) => s.id === preferred) || list.find((s) => s.status === 'ON_SALE') || list[0];
    sel.value = pick.id;
    await openShowtime(pick.id);
  }

  const SHOWTIME_Q = `query DemoShowtime($id: ID!) {
  showtime(id: $id) {
    id startsAt endsAt status purchaseLimit allowSeatGaps currency
    prices { kind amountCents }
    movie { title rating durationMinutes }
    hall { name seats { id row number x y kind sellable } }
    seatMap { showtimeId version seats { seat { id } status } }
  }
}`;

  const SUBSCRIPTION_Q = `subscription DemoSeatMap($id: ID!) {
  seatMap(showtimeId: $id) { kind showtimeId version seats { seat { id } status } }
}`;

  function closeShowtime() {
    state.wsGen++;
    if (state.ws) {
      try { state.ws.close(1000, 'bye'); } catch (e) { /* already closed */ }
      state.ws = null;
    }
    state.showtime = null;
    state.seats.clear();
    state.selected.clear();
    state.version = -1;
    $('seat-grid').replaceChildren();
    $('showtime-info').textContent = '';
    setLive('idle');
    render();
  }

  async function openShowtime(id) {
    closeShowtime();
    setOrder(null);
    if (!id) return;
    let st;
    try {
      const { data } = await gql(SHOWTIME_Q, { id });
      st = data.showtime;
    } catch (e) {
      showError(e);
      return;
    }
    if (!st) {
      showError({ code: 'NOT_FOUND' });
      return;
    }
    state.showtime = st;
    const prices = st.prices.map((p) => `${p.kind.toLowerCase()} ${fmtMoney(p.amountCents, st.currency)}`).join(' · ');
    const sale = st.status === 'ON_SALE' ? 'On sale' : 'Not on sale (' + st.status.replace('_', ' ').toLowerCase() + ')';
    $('showtime-info').textContent = `${st.movie.title} (${st.movie.rating || 'unrated'}, ${st.movie.durationMinutes} min) · ${st.hall.name} · ` +
      `${new Date(st.startsAt).toLocaleString([], { dateStyle: 'medium', timeStyle: 'short' })} · ${sale} · ${prices}`;
    $('hall-title').textContent = st.hall.name;
    $('best-count').max = String(st.purchaseLimit);
    if (Number($('best-count').value) > st.purchaseLimit) $('best-count').value = String(st.purchaseLimit);
    $('limit-note').textContent = `Up to ${st.purchaseLimit} ${plural(st.purchaseLimit, 'seat', 'seats')} per customer.`;
    drawHall(st.hall.seats);
    applyEvent({ kind: 'SNAPSHOT', showtimeId: st.id, version: st.seatMap.version, seats: st.seatMap.seats });
    updateURL();
    connectLive(st.id);
    restoreOrder(st.id);
  }

  // ---------- hall ----------

  function drawHall(seats) {
    const grid = $('seat-grid');
    const maxX = Math.max(0, ...seats.map((s) => s.x));
    grid.style.gridTemplateColumns = `24px repeat(${maxX + 1}, var(--seat))`;
    const rows = new Map();
    const nodes = [];
    for (const s of seats) {
      if (!rows.has(s.y)) {
        rows.set(s.y, s.row);
        const lab = document.createElement('div');
        lab.className = 'row-label';
        lab.textContent = s.row;
        lab.style.gridColumn = '1';
        lab.style.gridRow = String(s.y + 1);
        lab.setAttribute('aria-hidden', 'true');
        nodes.push(lab);
      }
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'seat';
      b.id = 'seat-' + s.id;
      b.dataset.seatId = s.id;
      b.dataset.row = s.row;
      b.dataset.number = String(s.number);
      b.dataset.kind = s.kind.toLowerCase();
      b.dataset.status = s.sellable ? 'available' : 'unavailable';
      b.style.gridColumn = String(s.x + 2);
      b.style.gridRow = String(s.y + 1);
      const num = document.createElement('span');
      num.className = 'num';
      num.textContent = String(s.number);
      b.appendChild(num);
      b.addEventListener('click', () => toggleSeat(String(s.id)));
      state.seats.set(String(s.id), { seat: s, status: b.dataset.status.toUpperCase(), el: b });
      nodes.push(b);
    }
    grid.replaceChildren(...nodes);
  }

  // applyEvent applies a seat-map event: SNAPSHOT replaces every state, DELTA updates the
  // listed seats; an event at or below the last version seen is ignored.
  function applyEvent(ev) {
    if (!state.showtime || !ev || (ev.showtimeId && String(ev.showtimeId) !== String(state.showtime.id))) return;
    if (ev.version <= state.version) return;
    state.version = ev.version;
    const listed = new Map(ev.seats.map((s) => [String(s.seat.id), s.status]));
    if (ev.kind === 'SNAPSHOT') {
      for (const [id, s] of state.seats) s.status = listed.get(id) || 'UNAVAILABLE';
    } else {
      for (const [id, status] of listed) {
        const s = state.seats.get(id);
        if (s) s.status = status;
      }
    }
    render();
  }

  function render() {
    const mine = new Set(state.order ? state.order.seats.map((s) => String(s.id)) : []);
    let available = 0;
    for (const [id, s] of state.seats) {
      const el = s.el;
      const status = s.status.toLowerCase();
      if (s.status === 'AVAILABLE') available++;
      const selected = state.selected.has(id);
      const isMine = mine.has(id) && s.status === 'HELD';
      el.dataset.status = status;
      el.dataset.selected = selected ? 'true' : 'false';
      el.dataset.mine = isMine ? 'true' : 'false';
      el.setAttribute('aria-pressed', selected ? 'true' : 'false');
      el.disabled = !selected && (s.status !== 'AVAILABLE' || !!state.order);
      const kind = s.seat.kind === 'STANDARD' ? '' : ', ' + (s.seat.kind === 'ACCESSIBLE' ? 'wheelchair space' : 'premium');
      const what = isMine ? 'held by you' : status === 'unavailable' ? 'not for sale' : status === 'held' ? 'held by someone' : status;
      const label = `Row ${s.seat.row} seat ${s.seat.number}${kind}, ${what}${selected ? ', selected' : ''}`;
      el.setAttribute('aria-label', label);
      el.title = label;
    }
    $('available-count').textContent = state.showtime ? `${available} of ${state.seats.size} seats available · live version ${state.version}` : '';

    const ids = [...state.selected];
    const st = state.showtime;
    if (ids.length === 0) {
      $('selection-summary').textContent = 'No seats selected. Click seats in the hall, or ask for the best ones.';
    } else {
      const total = ids.reduce((sum, id) => sum + priceOf(id), 0);
      $('selection-summary').textContent = `${ids.length} ${plural(ids.length, 'seat', 'seats')}: ${labels(ids)} · ${fmtMoney(total, st && st.currency)}`;
    }
    const blocked = state.busy || !!state.order || !st;
    $('hold-btn').disabled = blocked || ids.length === 0;
    $('hold-btn').textContent = ids.length > 0 ? `Hold ${ids.length} ${plural(ids.length, 'seat', 'seats')}` : 'Hold';
    $('clear-btn').disabled = blocked || ids.length === 0;
    $('best-btn').disabled = blocked;
    const n = Number($('best-count').value) || 1;
    $('best-btn').textContent = `Best ${n} ${plural(n, 'seat', 'seats')}`;
    $('pay-btn').disabled = state.busy;
    $('cancel-btn').disabled = state.busy;
    $('extend-btn').disabled = state.busy;
  }

  function priceOf(id) {
    const s = state.seats.get(id);
    const st = state.showtime;
    if (!s || !st) return 0;
    const p = st.prices.find((p) => p.kind === s.seat.kind) || st.prices.find((p) => p.kind === 'STANDARD');
    return p ? p.amountCents : 0;
  }

  function newKey() {
    const b = new Uint8Array(16);
    crypto.getRandomValues(b);
    return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  }

  function selectionChanged() {
    state.holdKey = null;
    render();
  }

  function toggleSeat(id) {
    if (state.order || state.busy) return;
    const s = state.seats.get(id);
    if (!s) return;
    if (state.selected.has(id)) {
      state.selected.delete(id);
    } else {
      if (s.status !== 'AVAILABLE') return;
      const limit = state.showtime.purchaseLimit;
      if (state.selected.size >= limit) {
        showMessage('error', `You can pick at most ${limit} ${plural(limit, 'seat', 'seats')} for this showtime.`, 'PURCHASE_LIMIT_EXCEEDED');
        return;
      }
      state.selected.add(id);
    }
    if ($('message').dataset.kind === 'error') clearMessage();
    selectionChanged();
  }

  // ---------- live updates ----------

  function setLive(s) {
    const el = $('live-status');
    el.dataset.state = s;
    el.textContent = { idle: 'Not connected', connecting: 'Connecting…', live: 'Live', reconnecting: 'Reconnecting…', closed: 'Disconnected' }[s] || s;
  }

  function connectLive(showId) {
    const gen = ++state.wsGen;
    if (state.ws) {
      try { state.ws.close(1000, 'bye'); } catch (e) { /* already closed */ }
    }
    const url = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/query';
    const ws = new WebSocket(url, 'graphql-transport-ws');
    state.ws = ws;
    setLive(state.wsRetry > 0 ? 'reconnecting' : 'connecting');
    const send = (m) => ws.send(JSON.stringify(m));
    ws.onopen = () => send({ type: 'connection_init', payload: state.token ? { Authorization: 'Bearer ' + state.token } : {} });
    ws.onmessage = (ev) => {
      if (gen !== state.wsGen) return;
      let m;
      try { m = JSON.parse(ev.data); } catch (e) { return; }
      switch (m.type) {
        case 'connection_ack':
          send({ id: 'seatmap', type: 'subscribe', payload: { query: SUBSCRIPTION_Q, variables: { id: showId } } });
          break;
        case 'ping':
          send({ type: 'pong' });
          break;
        case 'next':
          if (m.payload && m.payload.errors && m.payload.errors.length) {
            const e = m.payload.errors[0];
            showError({ code: (e.extensions || {}).code, message: e.message, extensions: e.extensions });
          }
          if (m.payload && m.payload.data && m.payload.data.seatMap) {
            state.wsRetry = 0;
            applyEvent(m.payload.data.seatMap);
            setLive('live');
          }
          break;
        case 'error': {
          const e = (m.payload && m.payload[0]) || {};
          showError({ code: (e.extensions || {}).code, message: e.message, extensions: e.extensions });
          break;
        }
        case 'complete':
          setLive('closed');
          break;
      }
    };
    ws.onclose = (ev) => {
      if (gen !== state.wsGen) return;
      state.ws = null;
      if (ev.code === 4403 || ev.code === 4401) {
        setLive('closed');
        showError({ code: 'UNAUTHENTICATED' });
        return;
      }
      state.wsRetry++;
      setLive('reconnecting');
      const delay = Math.min(10000, 500 * 2 ** Math.min(state.wsRetry, 5)) * (0.75 + Math.random() / 2);
      setTimeout(() => { if (gen === state.wsGen) connectLive(showId); }, delay);
    };
  }

  // ---------- orders ----------

  const ORDER_FIELDS = 'id status amountCents currency expiresAt createdAt paidAt showtime { id } seats { id row number }';

  // withDeadline works out when, by this browser's clock, the order expires: relative to the
  // order's createdAt (fresh holds) or to the response's Date header (older orders), so a
  // skewed client clock does not matter.
  function withDeadline(o, localAnchor, serverAnchor) {
    const exp = Date.parse(o.expiresAt);
    o.deadline = isNaN(exp) ? null : localAnchor + (exp - serverAnchor);
    return o;
  }

  function setOrder(o) {
    state.order = o;
    clearInterval(state.timer);
    state.timer = null;
    const panel = $('order');
    if (!o) {
      panel.hidden = true;
      $('order-status').dataset.status = '';
      render();
      return;
    }
    panel.hidden = false;
    $('order-status').dataset.status = o.status;
    $('order-status').textContent = `Order ${o.id}: waiting for payment`;
    $('order-seats').textContent = `Seats ${o.seats.map((s) => s.row + s.number).join(', ')}`;
    $('order-amount').textContent = `Total ${fmtMoney(o.amountCents, o.currency)}`;
    tick();
    state.timer = setInterval(tick, 250);
    render();
  }

  function tick() {
    const o = state.order;
    const el = $('countdown');
    if (!o || o.deadline == null) {
      el.textContent = '--:--';
      return;
    }
    const left = Math.max(0, Math.round((o.deadline - Date.now()) / 1000));
    el.dataset.remaining = String(left);
    el.dataset.urgent = left < 60 ? 'true' : 'false';
    el.textContent = `${Math.floor(left / 60)}:${String(left % 60).padStart(2, '0')}`;
    if (left === 0) {
      setOrder(null);
      showMessage('error', MESSAGES.ORDER_EXPIRED, 'ORDER_EXPIRED');
    }
  }

  async function restoreOrder(showId) {
    if (!state.token) return;
    try {
      const { data, serverDate } = await gql(`query DemoMyOrders { myOrders { ${ORDER_FIELDS} } }`, {});
      const o = data.myOrders.find((o) => o.status === 'PENDING_PAYMENT' && String(o.showtime.id) === String(showId));
      if (o && !state.order && state.showtime && String(state.showtime.id) === String(showId)) {
        setOrder(withDeadline(o, Date.now(), serverDate));
        showMessage('info', `You already hold ${labels(o.seats.map((s) => String(s.id)))} for this showtime.`, '');
      }
    } catch (e) {
      if (e.code === 'UNAUTHENTICATED') showError(e);
    }
  }

  async function run(fn) {
    if (state.busy) return;
    state.busy = true;
    render();
    try {
      await fn();
    } finally {
      state.busy = false;
      render();
    }
  }

  function hold() {
    return run(async () => {
      const ids = [...state.selected];
      if (ids.length === 0 || !state.showtime) return;
      if (!state.token) {
        showError({ code: 'UNAUTHENTICATED' });
        return;
      }
      if (!state.holdKey) state.holdKey = newKey();
      try {
        const before = Date.now();
        const { data } = await gql(`mutation DemoHold($in: HoldSeatsInput!) { holdSeats(input: $in) { ${ORDER_FIELDS} } }`,
          { in: { showtimeId: state.showtime.id, seatIds: ids, idempotencyKey: state.holdKey } });
        const o = data.holdSeats;
        state.selected.clear();
        state.holdKey = null;
        setOrder(withDeadline(o, (before + Date.now()) / 2, Date.parse(o.createdAt)));
        showMessage('success', `Held ${labels(o.seats.map((s) => String(s.id)))}. Pay before the timer runs out.`, 'HELD');
      } catch (e) {
        if (e.code === 'SEATS_UNAVAILABLE' && Array.isArray(e.extensions.seatIds)) {
          for (const id of e.extensions.seatIds) state.selected.delete(String(id));
          state.holdKey = null;
        }
        showError(e);
      }
    });
  }

  function pay() {
    return run(async () => {
      const o = state.order;
      if (!o) return;
      try {
        const { data } = await gql(`mutation DemoPay($id: ID!, $ref: String!) { payOrder(orderId: $id, paymentRef: $ref) { ${ORDER_FIELDS} } }`,
          { id: o.id, ref: 'demo-' + newKey() });
        const paid = data.payOrder;
        setOrder(null);
        showMessage('success', `Paid ${fmtMoney(paid.amountCents, paid.currency)}: seats ${paid.seats.map((s) => s.row + s.number).join(', ')} are yours. Enjoy the film!`, 'PAID');
      } catch (e) {
        if (e.code === 'ORDER_EXPIRED' || e.code === 'INVALID_STATE' || e.code === 'NOT_FOUND') setOrder(null);
        showError(e);
      }
    });
  }

  function cancel() {
    return run(async () => {
      const o = state.order;
      if (!o) return;
      try {
        await gql(`mutation DemoCancel($id: ID!) { cancelOrder(orderId: $id) { id status } }`, { id: o.id });
        setOrder(null);
        showMessage('info', `Hold cancelled; ${labels(o.seats.map((s) => String(s.id)))} released.`, 'CANCELLED');
      } catch (e) {
        if (e.code === 'ORDER_EXPIRED' || e.code === 'INVALID_STATE' || e.code === 'NOT_FOUND') setOrder(null);
        showError(e);
      }
    });
  }

  function extend() {
    return run(async () => {
      const o = state.order;
      if (!o) return;
      try {
        const { data } = await gql(`mutation DemoExtend($id: ID!) { extendHold(orderId: $id) { id expiresAt } }`, { id: o.id });
        // Keep the same anchor: the new expiry is relative to the old one.
        const oldExp = Date.parse(o.expiresAt);
        const newExp = Date.parse(data.extendHold.expiresAt);
        if (!isNaN(oldExp) && !isNaN(newExp) && o.deadline != null) o.deadline += newExp - oldExp;
        o.expiresAt = data.extendHold.expiresAt;
        tick();
        showMessage('info', 'Hold extended.', 'EXTENDED');
      } catch (e) {
        if (e.code === 'ORDER_EXPIRED') setOrder(null);
        showError(e);
      }
    });
  }

  function best() {
    return run(async () => {
      if (!state.showtime) return;
      const limit = state.showtime.purchaseLimit;
      const n = Math.max(1, Math.min(limit, Number($('best-count').value) || 1));
      $('best-count').value = String(n);
      try {
        const { data } = await gql('query DemoBest($id: ID!, $n: Int!) { bestSeats(showtimeId: $id, count: $n) { id row number } }',
          { id: state.showtime.id, n });
        const seats = data.bestSeats;
        if (seats.length === 0) {
          showMessage('info', `There are no ${n} free seats side by side right now.`, 'NO_BEST_SEATS');
          return;
        }
        state.selected = new Set(seats.map((s) => String(s.id)));
        state.holdKey = null;
        showMessage('info', `Best ${n} ${plural(n, 'seat', 'seats')}: ${seats.map((s) => s.row + s.number).join(', ')}. Press Hold to keep them.`, 'BEST_SEATS');
      } catch (e) {
        showError(e);
      }
    });
  }

  // ---------- wiring ----------

  async function main() {
    const params = new URLSearchParams(location.search);
    $('date').value = params.get('date') || todayLocal();
    $('date').addEventListener('change', () => { clearMessage(); updateURL(); loadShowtimes(null); });
    $('showtime-select').addEventListener('change', (e) => { clearMessage(); openShowtime(e.target.value); });
    $('hold-btn').addEventListener('click', hold);
    $('pay-btn').addEventListener('click', pay);
    $('cancel-btn').addEventListener('click', cancel);
    $('extend-btn').addEventListener('click', extend);
    $('best-btn').addEventListener('click', best);
    $('best-count').addEventListener('input', render);
    $('clear-btn').addEventListener('click', () => { state.selected.clear(); selectionChanged(); });
    $('token-form').addEventListener('submit', (e) => {
      e.preventDefault();
      const tok = $('token-input').value.trim().replace(/^Bearer\s+/i, '');
      if (!tok) return;
      $('token-input').value = '';
      setToken(tok);
      clearMessage();
      // The websocket carries the token in connection_init: reconnect with the new one.
      if (state.showtime) openShowtime(state.showtime.id);
    });
    $('token-clear').addEventListener('click', () => {
      setToken(null);
      setOrder(null);
      $('token-input').focus();
    });
    await initToken();
    await loadShowtimes(params.get('showtime'));
    document.body.dataset.ready = 'true';
  }

  main();
})();
