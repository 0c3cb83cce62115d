// SeatFlow live seat map, part 3 of 3: the page logic (sign-in, showtimes, the live
// connection, holds and payments) over the API client of api.js and the view of view.js.
// Plain JavaScript; it uses only the public API: POST /query and the seatMap (and, for a
// showtime with an on-sale queue, queue.js's queue; for a sold-out one, waitlist.js's
// waitingList) subscription over graphql-transport-ws, like any front end would.
'use strict';

(() => {
  const TOKEN_KEY = 'seatflow.demo.token';
  const $ = (id) => document.getElementById(id);
  const { api } = window.SeatFlow;

  const state = {
    token: null,
    user: null,
    guest: null, // the guest session ({token, expiresAt}) the page reads and watches with when nobody is signed in
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
    pass: null, // the admission pass of the showtime's on-sale queue, while admitted (queue.js)
    offer: null, // the waiting-list offer shown, while OFFERED (waitlist.js)
  };

  let waitlist = null; // the sold-out showtime's waiting list (waitlist.js), made below

  const {
    showMessage, clearMessage, showError, labels, plural, todayLocal, fmtTime, fmtMoney, showAuth,
    drawHall, applyEvent, render, setLive, withDeadline, setOrder, tick,
  } = window.SeatFlow.view(state, toggleSeat, () => { if (waitlist) waitlist.render(); });

  // gql posts one operation as the signed-in customer, else as the page's guest session
  // (see api.js).
  const gql = async (query, variables) => api.gql(query, variables, await readToken());

  // readToken is the token reads and the live socket carry: the customer's, else a guest
  // session's, started when there is none or it is about to expire.
  async function readToken() {
    if (state.token) return state.token;
    if (!state.guest || state.guest.expiresAt - Date.now() < 60000) {
      state.guest = await api.guestSession();
    }
    return state.guest ? state.guest.token : null;
  }
  const newKey = api.newKey;

  // The waiting room of a showtime with an on-sale queue (queue.js).
  const queue = window.SeatFlow.queue(state, { gql, showError, showMessage, clearMessage, render, fmtTime });
  waitlist = window.SeatFlow.waitlist(state, { gql, showError, showMessage, clearMessage, render, plural, fmtMoney, setOrder, payOrder });

  // ---------- token ----------

  function setToken(tok) {
    state.token = tok || null;
    const claims = tok ? api.jwtClaims(tok) : null;
    state.user = claims && claims.sub ? claims.sub : null;
    if (tok) sessionStorage.setItem(TOKEN_KEY, tok);
    else sessionStorage.removeItem(TOKEN_KEY);
    showAuth();
  }

  async function initToken() {
    const stored = sessionStorage.getItem(TOKEN_KEY);
    if (stored) {
      setToken(stored);
      return;
    }
    // Embedded mode hands out a token for a fresh demo customer; elsewhere there is none.
    setToken(await api.demoToken());
  }

  // ---------- showtimes ----------

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
        'query DemoShowtimes($d: Date!) { showtimes(date: $d) { id startsAt localStartsAt status movie { title } hall { name } cinema { name } } }',
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
      // The cinema's wall clock (each cinema has its own time zone), then the viewer's.
      const local = s.localStartsAt.slice(11, 16);
      return new Option(`${local} ${s.cinema.name} (${fmtTime(s.startsAt)} here) · ${s.movie.title} · ${s.hall.name}${status}`, s.id);
    }));
    sel.disabled = false;
    const pick = list.find((s) => s.id === preferred) || list.find((s) => s.status === 'ON_SALE') || list[0];
    sel.value = pick.id;
    await openShowtime(pick.id);
  }

  const SHOWTIME_Q = `query DemoShowtime($id: ID!) {
  showtime(id: $id) {
    id startsAt endsAt status purchaseLimit allowSeatGaps currency
    prices { kind ticketType amountCents }
    queue { phase opensAt }
    movie { title rating durationMinutes }
    hall { name seats { id row number x y kind sellable } }
    seatMap { showtimeId version seats { seat { id } status } }
  }
}`;

  const SUBSCRIPTION_Q = `subscription DemoSeatMap($id: ID!) {
  seatMap(showtimeId: $id) { kind showtimeId fromVersion version seats { seat { id } status } }
}`;

  function closeShowtime() {
    queue.exit();
    waitlist.exit();
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
    const prices = st.prices.map((p) => `${p.kind.toLowerCase()}${p.ticketType === 'ADULT' ? '' : ' ' + p.ticketType.toLowerCase()} ${fmtMoney(p.amountCents, st.currency)}`).join(' · ');
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
    queue.enter(st);
    waitlist.enter(st);
    restoreOrder(st.id);
    window.SeatFlow.tickets.show(gql, st.id);
  }

  // ---------- selection ----------

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

  function connectLive(showId) {
    const gen = ++state.wsGen;
    if (state.ws) {
      try { state.ws.close(1000, 'bye'); } catch (e) { /* already closed */ }
    }
    state.ws = api.subscribe(SUBSCRIPTION_Q, { id: showId }, {
      current: () => gen === state.wsGen,
      token: () => state.token || (state.guest ? state.guest.token : null),
      next: (payload) => {
        if (payload && payload.errors && payload.errors.length) {
          const e = payload.errors[0];
          showError({ code: (e.extensions || {}).code, message: e.message, extensions: e.extensions });
        }
        if (payload && payload.data && payload.data.seatMap) {
          state.wsRetry = 0;
          if (!applyEvent(payload.data.seatMap)) { resubscribe(); return; } // a change was missed
          setLive('live');
        }
      },
      // The server ended the subscription (an error carrying a code: Redis lost, the
      // instance shutting down; or complete): subscribe again, on a new connection, after a
      // pause. The SNAPSHOT that comes first resets the map.
      error: (payload) => {
        const e = (payload && payload[0]) || {};
        const code = (e.extensions || {}).code;
        if (code !== 'SERVICE_UNAVAILABLE') showError({ code, message: e.message, extensions: e.extensions });
        resubscribe();
      },
      complete: () => resubscribe(),
      close: (ev) => {
        state.ws = null;
        if (ev.code === 4403 || ev.code === 4401) {
          setLive('closed');
          showError({ code: 'UNAUTHENTICATED' });
          return;
        }
        resubscribe();
      },
    });
    function resubscribe() {
      if (gen !== state.wsGen) return;
      state.wsRetry++;
      setLive('reconnecting');
      const delay = Math.min(10000, 500 * 2 ** Math.min(state.wsRetry, 5)) * (0.75 + Math.random() / 2);
      setTimeout(() => { if (gen === state.wsGen) connectLive(showId); }, delay);
    }
    setLive(state.wsRetry > 0 ? 'reconnecting' : 'connecting');
  }

  // ---------- orders ----------

  const ORDER_FIELDS = 'id status amountCents currency expiresAt createdAt paidAt showtime { id } seats { id row number }';

  async function restoreOrder(showId) {
    if (!state.token) return;
    try {
      const { data, serverDate } = await gql(`query DemoMyOrders { myOrders { ${ORDER_FIELDS} } }`, {});
      // A waiting-list offer's order is paid or declined in the waiting list's panel.
      const offered = (o) => state.offer && String(state.offer.orderId) === String(o.id);
      const o = data.myOrders.find((o) => o.status === 'PENDING_PAYMENT' && String(o.showtime.id) === String(showId) && !offered(o));
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
        const input = { showtimeId: state.showtime.id, seatIds: ids, idempotencyKey: state.holdKey, needsAccessible: $('needs-accessible').checked };
        if (state.pass) input.admissionPass = state.pass;
        const { data } = await gql(`mutation DemoHold($in: HoldSeatsInput!) { holdSeats(input: $in) { ${ORDER_FIELDS} } }`,
          { in: input });
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

  // payOrder pays order id (payOrder with a fresh payment reference), says so and lists
  // the tickets; it throws the APIError of a refusal. The hold's Pay and the waiting-list
  // offer's (waitlist.js) both pay through it.
  async function payOrder(id) {
    const { data } = await gql(`mutation DemoPay($id: ID!, $ref: String!) { payOrder(orderId: $id, paymentRef: $ref) { ${ORDER_FIELDS} } }`,
      { id, ref: 'demo-' + newKey() });
    const paid = data.payOrder;
    showMessage('success', `Paid ${fmtMoney(paid.amountCents, paid.currency)}: seats ${paid.seats.map((s) => s.row + s.number).join(', ')} are yours. Your tickets are below. Enjoy the film!`, 'PAID');
    if (state.showtime) window.SeatFlow.tickets.show(gql, state.showtime.id);
    return paid;
  }

  function pay() {
    return run(async () => {
      const o = state.order;
      if (!o) return;
      try {
        await payOrder(o.id);
        setOrder(null);
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
        // A wheelchair user's party: one wheelchair space, the rest companion seats beside it.
        const accessible = $('needs-accessible').checked ? Math.ceil(n / 4) : 0;
        const { data } = await gql('query DemoBest($id: ID!, $n: Int!, $a: Int) { bestSeats(showtimeId: $id, count: $n, accessible: $a) { id row number } }',
          { id: state.showtime.id, n, a: accessible });
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
