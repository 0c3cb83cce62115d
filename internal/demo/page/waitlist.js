// SeatFlow live seat map: the waiting list. SeatFlow.waitlist(state, page) returns what
// app.js calls for a sold-out showtime: enter(showtime) finds the signed-in customer's
// active entry for it (myWaitingListEntries) and follows it; render(), after every change
// of the seat map, offers "Join the waiting list" (1 to the purchase limit seats) while no
// seat is AVAILABLE. The entry is followed live (the waitingList subscription): its place
// while WAITING; once OFFERED, the seats held for the customer with a countdown to the
// offer's expiresAt, Pay (page.payOrder pays the offer's order as the hold panel's Pay
// does) and Decline (declineWaitingListOffer). state.offer is the offer shown, so the seat
// map marks its seats as the customer's. exit() stops following. It uses only the public
// API. Loaded after view.js, before app.js.
'use strict';

window.SeatFlow.waitlist = (state, page) => {
  const $ = (id) => document.getElementById(id);
  const { api } = window.SeatFlow;

  const ENTRY = 'id status seats position waiting showtime { id } ' +
    'offer { orderId expiresAt seats { id row number } order { id status amountCents currency createdAt } }';
  const SUBSCRIPTION_Q = `subscription DemoWaitingList($id: ID!) { waitingList(entryId: $id) { ${ENTRY} } }`;
  const FINAL = ['ACCEPTED', 'EXPIRED', 'DECLINED', 'LEFT'];

  let gen = 0; // the follow in progress; a newer one ignores the older's events
  let ws = null;
  let retry = 0;
  let showID = null;
  let entry = null; // the customer's entry for the showtime, as last seen
  let deadline = null; // {orderId, at}: when, by this browser's clock, the offer runs out
  let timer = null; // the offer's countdown
  let busy = false;
  const settled = new Set(); // offers' orders this page paid or declined: a late push of them as OFFERED is stale

  function setLive(s) {
    const el = $('waitlist-live');
    el.dataset.state = s;
    el.textContent = { idle: 'Not connected', connecting: 'Connecting…', live: 'Live', reconnecting: 'Reconnecting…' }[s] || s;
  }

  const seatWord = (n) => page.plural(n, 'seat', 'seats');
  const seatList = (seats) => seats.map((s) => s.row + s.number).join(', ');

  // soldOut says whether the showtime shown has no seat AVAILABLE (or its on-sale queue
  // is SOLD_OUT): joinWaitingList's own rule, which the server checks again.
  function soldOut() {
    const st = state.showtime;
    if (!st || String(st.id) !== String(showID) || st.status !== 'ON_SALE' || state.seats.size === 0) return false;
    if (st.queue && st.queue.phase === 'SOLD_OUT') return true;
    for (const s of state.seats.values()) if (s.status === 'AVAILABLE') return false;
    return true;
  }

  // render shows the entry (or, with none, the join control while the showtime is sold out).
  function render() {
    const panel = $('waitlist');
    const status = entry ? entry.status : '';
    const out = soldOut();
    panel.hidden = !showID || (!entry && !out);
    panel.dataset.status = status;
    if (panel.hidden) return;
    const waiting = status === 'WAITING';
    const offered = status === 'OFFERED' && !!entry.offer;
    $('waitlist-facts').hidden = !waiting;
    $('waitlist-position').textContent = waiting && entry.position != null ? String(entry.position) : '—';
    $('waitlist-waiting').textContent = waiting ? String(entry.waiting) : '—';
    $('waitlist-size').textContent = entry ? String(entry.seats) : '—';
    $('waitlist-offer').hidden = !offered;
    $('waitlist-join-row').hidden = !(out && state.token && (!entry || FINAL.includes(status)));
    $('waitlist-leave').hidden = !waiting;
    const limit = state.showtime ? state.showtime.purchaseLimit : 10;
    $('waitlist-seats').max = String(limit);
    if (Number($('waitlist-seats').value) > limit) $('waitlist-seats').value = String(limit);
    for (const id of ['waitlist-join', 'waitlist-leave', 'waitlist-pay', 'waitlist-decline']) $(id).disabled = busy;
    let text;
    switch (status) {
      case '':
        text = state.token
          ? 'Sold out. Join the waiting list: seats that come back are offered to those waiting, in the order they joined, before anyone else can hold them.'
          : 'Sold out. Sign in to join the waiting list.';
        break;
      case 'WAITING':
        text = entry.position != null
          ? `You are number ${entry.position} on the waiting list for ${entry.seats} ${seatWord(entry.seats)} together.`
          : `You are on the waiting list for ${entry.seats} ${seatWord(entry.seats)} together.`;
        break;
      case 'OFFERED':
        text = 'Seats came back for you: they are held for you until the timer runs out. Pay to take them, or decline to pass them on.';
        break;
      case 'ACCEPTED':
        text = 'You took the offer: the seats are yours (your tickets are below).';
        break;
      case 'EXPIRED':
        text = 'Your offer ran out unpaid: its seats went to the next in line.';
        break;
      case 'DECLINED':
        text = 'You declined the offer: its seats went to the next in line.';
        break;
      case 'LEFT':
        text = 'You left the waiting list.';
        break;
      default:
        text = status;
    }
    $('waitlist-status').textContent = text;
    if (offered) {
      const o = entry.offer;
      $('waitlist-offer').dataset.orderId = String(o.orderId);
      $('waitlist-offer-seats').textContent = `Seats ${seatList(o.seats)}`;
      $('waitlist-offer-amount').textContent = `Total ${page.fmtMoney(o.order.amountCents, o.order.currency)}`;
      tick();
    }
  }

  // tick shows the time left on the offer; at 0 the page ends it by its own clock (the
  // server's push follows).
  function tick() {
    const el = $('waitlist-countdown');
    if (!entry || entry.status !== 'OFFERED' || !deadline) {
      el.textContent = '--:--';
      el.dataset.remaining = '';
      return;
    }
    const left = Math.max(0, Math.round((deadline.at - Date.now()) / 1000));
    el.dataset.remaining = String(left);
    el.dataset.urgent = left < 60 ? 'true' : 'false';
    el.textContent = `${Math.floor(left / 60)}:${String(left % 60).padStart(2, '0')}`;
    if (left === 0) show({ ...entry, status: 'EXPIRED' });
  }

  // show makes e the entry shown. An offer's deadline is worked out once, when the page
  // first sees it: relative to serverAnchor (the Date of the response that carried it) or,
  // for one pushed (within a second of being made), to its order's createdAt, so a skewed
  // client clock does not matter.
  function show(e, serverAnchor) {
    entry = e;
    const offer = e && e.status === 'OFFERED' ? e.offer : null;
    if (offer && (!deadline || deadline.orderId !== offer.orderId)) {
      const exp = Date.parse(offer.expiresAt);
      const anchor = serverAnchor != null ? serverAnchor : Date.parse(offer.order.createdAt);
      deadline = isNaN(exp) || isNaN(anchor) ? null : { orderId: offer.orderId, at: Date.now() + (exp - anchor) };
    }
    state.offer = offer;
    // The offer's order is paid or declined here, not in the hold panel.
    if (offer && state.order && String(state.order.id) === String(offer.orderId)) page.setOrder(null);
    clearInterval(timer);
    timer = offer ? setInterval(tick, 250) : null;
    page.render(); // the seat map marks the offer's seats; render() follows
  }

  function stop() {
    gen++;
    if (ws) {
      try { ws.close(1000, 'bye'); } catch (e) { /* already closed */ }
      ws = null;
    }
    setLive('idle');
  }

  // follow streams the entry until it is final; a stream that ends before follows again
  // after a pause.
  function follow() {
    stop();
    const g = gen;
    const id = entry.id;
    let final = false;
    const again = () => {
      if (g !== gen || final) return;
      retry++;
      setLive('reconnecting');
      setTimeout(() => { if (g === gen) follow(); }, Math.min(10000, 500 * 2 ** Math.min(retry, 5)));
    };
    setLive('connecting');
    ws = api.subscribe(SUBSCRIPTION_Q, { id }, {
      current: () => g === gen,
      token: () => state.token,
      next: (payload) => {
        const e = payload && payload.data && payload.data.waitingList;
        if (!e) return;
        retry = 0;
        setLive('live');
        final = FINAL.includes(e.status);
        if (e.status === 'OFFERED' && e.offer && settled.has(String(e.offer.orderId))) return;
        show(e);
      },
      error: (payload) => {
        const err = (payload && payload[0]) || {};
        const code = (err.extensions || {}).code;
        if (code === 'NOT_FOUND' || code === 'UNAUTHENTICATED') {
          final = true;
          setLive('idle');
          page.showError({ code, message: err.message, extensions: err.extensions });
          return;
        }
        again();
      },
      complete: () => { if (final) setLive('idle'); else again(); },
      close: () => { ws = null; again(); },
    });
  }

  // act runs one of the panel's mutations, its buttons disabled meanwhile.
  async function act(fn) {
    if (busy) return;
    busy = true;
    render();
    try {
      await fn();
    } catch (err) {
      page.showError(err);
      // The entry moved on meanwhile (an offer came, or ran out), or another tab joined:
      // read it again.
      if (['INVALID_STATE', 'ORDER_EXPIRED', 'NOT_FOUND', 'ALREADY_ON_WAITING_LIST'].includes(err.code)) load();
    } finally {
      busy = false;
      render();
    }
  }

  // load reads the customer's active entry for the showtime and follows it.
  async function load() {
    const g = gen;
    const id = showID;
    try {
      const { data, serverDate } = await page.gql(`query DemoMyWaitingList { myWaitingListEntries { ${ENTRY} } }`, {});
      if (g !== gen || id !== showID) return;
      const mine = data.myWaitingListEntries.filter((x) => String(x.showtime.id) === String(id));
      const e = mine.find((x) => !FINAL.includes(x.status)) || (entry && mine.find((x) => x.id === entry.id));
      if (!e) return;
      show(e, serverDate);
      if (!FINAL.includes(e.status)) follow();
    } catch (err) {
      if (err.code === 'UNAUTHENTICATED') page.showError(err);
    }
  }

  function join() {
    return act(async () => {
      if (!state.token || !showID) return;
      const limit = state.showtime ? state.showtime.purchaseLimit : 10;
      const n = Math.max(1, Math.min(limit, Math.floor(Number($('waitlist-seats').value)) || 1));
      $('waitlist-seats').value = String(n);
      const { data } = await page.gql(`mutation DemoJoinWaitingList($id: ID!, $n: Int!) { joinWaitingList(showtimeId: $id, seats: $n) { ${ENTRY} } }`,
        { id: showID, n });
      retry = 0;
      show(data.joinWaitingList);
      if (!FINAL.includes(entry.status)) follow();
    });
  }

  function leave() {
    return act(async () => {
      if (!entry) return;
      const { data } = await page.gql(`mutation DemoLeaveWaitingList($id: ID!) { leaveWaitingList(entryId: $id) { ${ENTRY} } }`, { id: entry.id });
      if (FINAL.includes(data.leaveWaitingList.status)) stop();
      show(data.leaveWaitingList);
    });
  }

  function pay() {
    return act(async () => {
      const e = entry;
      if (!e || e.status !== 'OFFERED' || !e.offer) return;
      await page.payOrder(e.offer.orderId);
      settled.add(String(e.offer.orderId));
      stop();
      show({ ...e, status: 'ACCEPTED' });
    });
  }

  function decline() {
    return act(async () => {
      const e = entry;
      if (!e || e.status !== 'OFFERED') return;
      const { data } = await page.gql(`mutation DemoDeclineOffer($id: ID!) { declineWaitingListOffer(entryId: $id) { ${ENTRY} } }`, { id: e.id });
      if (e.offer) settled.add(String(e.offer.orderId));
      stop();
      show(data.declineWaitingListOffer);
      page.showMessage('info', `Offer declined; ${e.offer ? seatList(e.offer.seats) : 'its seats'} went to the next in line.`, 'DECLINED');
    });
  }

  // enter shows the showtime's waiting list: the customer's active entry, followed live,
  // or the join control while the showtime is sold out.
  function enter(st) {
    exit();
    showID = st.id;
    retry = 0;
    render();
    if (state.token) load();
  }

  function exit() {
    stop();
    clearInterval(timer);
    timer = null;
    showID = null;
    entry = null;
    deadline = null;
    state.offer = null;
    $('waitlist').hidden = true;
  }

  $('waitlist-join').addEventListener('click', () => { page.clearMessage(); join(); });
  $('waitlist-leave').addEventListener('click', () => { page.clearMessage(); leave(); });
  $('waitlist-pay').addEventListener('click', () => { page.clearMessage(); pay(); });
  $('waitlist-decline').addEventListener('click', () => { page.clearMessage(); decline(); });

  return { enter, exit, render };
};
