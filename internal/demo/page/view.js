// SeatFlow live seat map, part 2 of 3: what the page shows. SeatFlow.view(state, onSeat,
// onRender) returns the functions that show the page state app.js keeps: the hall's seat
// grid, the selection and order panels, the countdown, who is signed in and the messages.
// They never call the API; setOrder (and the countdown, when the hold runs out) also sets
// the order shown. onSeat(id) is called when a seat is clicked, onRender() after each
// render (the waiting list's panel follows the seat map). Loaded after api.js, before app.js.
'use strict';

// view returns the rendering functions over state, the page state app.js owns.
window.SeatFlow.view = (state, onSeat, onRender) => {
  const $ = (id) => document.getElementById(id);

  // ---------- messages ----------

  const MESSAGES = {
    SEAT_GAP: 'That choice would leave a single empty seat stranded next to taken seats. Pick seats side by side, or include the lone seat.',
    NOT_ON_SALE: 'Tickets for this showtime are not on sale right now.',
    NOT_ADMITTED: 'This sale is open to the waiting room\'s admitted customers only: wait for your turn above (or join the queue again).',
    NOT_SOLD_OUT: 'Seats are available again: hold them instead of joining the waiting list.',
    ALREADY_ON_WAITING_LIST: 'You are already on this showtime\'s waiting list.',
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

  // ---------- formatting ----------

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

  // ---------- sign-in ----------

  // showAuth shows whom the page acts for, or the token form when nobody.
  function showAuth() {
    const status = $('auth-status');
    if (state.token) {
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
      b.addEventListener('click', () => onSeat(String(s.id)));
      state.seats.set(String(s.id), { seat: s, status: b.dataset.status.toUpperCase(), el: b });
      nodes.push(b);
    }
    grid.replaceChildren(...nodes);
  }

  // applyEvent applies a seat-map event by the schema's rule: a SNAPSHOT replaces every
  // state whatever its version (it is the server's whole map; a DELTA may span several
  // versions, merged changes); a DELTA whose fromVersion is the map's version updates the listed seats,
  // one at or below the map's version is ignored. It returns false for any other DELTA: a
  // change was missed, and the caller subscribes again.
  function applyEvent(ev) {
    if (!state.showtime || !ev || (ev.showtimeId && String(ev.showtimeId) !== String(state.showtime.id))) return true;
    if (ev.kind !== 'SNAPSHOT') {
      if (ev.version <= state.version) return true;
      if (ev.fromVersion !== undefined && ev.fromVersion !== state.version) return false;
    }
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
    return true;
  }

  function render() {
    // The customer's: the hold's seats and those of a waiting-list offer (waitlist.js).
    const mine = new Set([...(state.order ? state.order.seats : []), ...(state.offer ? state.offer.seats : [])].map((s) => String(s.id)));
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
      const kind = s.seat.kind === 'STANDARD' ? '' : ', ' + ({ ACCESSIBLE: 'wheelchair space', COMPANION: 'companion seat', PREMIUM: 'premium' }[s.seat.kind] || s.seat.kind.toLowerCase());
      const what = isMine ? 'held by you' : status === 'unavailable' ? 'not for sale' : status === 'blocked' ? 'house seat, not for sale' : status === 'held' ? 'held by someone' : status;
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
    if (onRender) onRender();
  }

  function priceOf(id) {
    const s = state.seats.get(id);
    const st = state.showtime;
    if (!s || !st) return 0;
    // The page holds adult tickets (seatIds): the adult price of the seat's kind.
    const adult = st.prices.filter((p) => p.ticketType === 'ADULT');
    const p = adult.find((p) => p.kind === s.seat.kind) || adult.find((p) => p.kind === 'STANDARD');
    return p ? p.amountCents : 0;
  }

  // ---------- live status ----------

  function setLive(s) {
    const el = $('live-status');
    el.dataset.state = s;
    el.textContent = { idle: 'Not connected', connecting: 'Connecting…', live: 'Live', reconnecting: 'Reconnecting…', closed: 'Disconnected' }[s] || s;
  }

  // ---------- order ----------

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

  return {
    showMessage, clearMessage, showError, labels, plural, todayLocal, fmtTime, fmtMoney, showAuth,
    drawHall, applyEvent, render, setLive, withDeadline, setOrder, tick,
  };
};
