// SeatFlow live seat map: the waiting room. SeatFlow.queue(state, page) returns what app.js
// calls when a showtime has an on-sale queue (Showtime.queue): enter(showtime) shows the
// queue before the seat map, joins it for the signed-in customer and follows the ticket
// live (the queue subscription); once the ticket is ADMITTED the seat map shows and
// state.pass holds the admission pass that holdSeats sends. exit() stops following.
// It uses only the public API. Loaded after view.js, before app.js.
'use strict';

window.SeatFlow.queue = (state, page) => {
  const $ = (id) => document.getElementById(id);
  const { api } = window.SeatFlow;

  const TICKET = 'id status position waiting estimatedWaitSeconds pass passExpiresAt';
  const SUBSCRIPTION_Q = `subscription DemoQueue($id: ID!) { queue(showtimeId: $id) { ${TICKET} } }`;

  let gen = 0; // the follow in progress; a newer one ignores the older's events
  let ws = null;
  let retry = 0;
  let left = false; // the customer left: no automatic join
  let showID = null;
  let expiry = null; // timer of the pass's end

  // gate hides the hall and the seat picker while the customer has no pass.
  function gate(closed) {
    $('hall').hidden = closed;
    $('selection').hidden = closed;
  }

  function setLive(s) {
    const el = $('queue-live');
    el.dataset.state = s;
    el.textContent = { idle: 'Not connected', connecting: 'Connecting…', live: 'Live', reconnecting: 'Reconnecting…' }[s] || s;
  }

  function wait(seconds) {
    if (seconds == null) return '—';
    if (seconds < 60) return `about ${seconds} s`;
    return `about ${Math.round(seconds / 60)} min`;
  }

  // show renders a ticket: where it is, in words and figures.
  function show(t, phase) {
    const panel = $('queue');
    panel.hidden = false;
    panel.dataset.status = t ? t.status : '';
    $('queue-position').textContent = t && t.position != null ? String(t.position) : '—';
    $('queue-waiting').textContent = t ? String(t.waiting) : '—';
    $('queue-wait').textContent = t ? wait(t.estimatedWaitSeconds) : '—';
    $('queue-join').hidden = !!t && !['EXPIRED'].includes(t.status);
    $('queue-leave').hidden = !t || !['WAITING', 'ADMITTED'].includes(t.status);
    clearTimeout(expiry);
    state.pass = null;
    let text;
    let note = '';
    switch (t ? t.status : 'NONE') {
      case 'NONE':
        text = state.token ? 'This sale opens through a waiting room.' : 'This sale opens through a waiting room: sign in to join it.';
        $('queue-join').hidden = !state.token;
        break;
      case 'WAITING':
        text = t.position == null
          ? `You are in the waiting room. Places are drawn at random when the sale opens (${page.fmtTime(state.showtime.queue.opensAt)}).`
          : `You are number ${t.position} in the queue.`;
        note = 'Keep this page open: an entrant not seen for 5 minutes when its turn comes loses it.';
        break;
      case 'ADMITTED':
        state.pass = t.pass;
        text = `It is your turn: choose your seats before ${page.fmtTime(t.passExpiresAt)}.`;
        note = 'Your admission pass lets you hold and pay; paying or cancelling uses it up.';
        // The page's own clock ends the pass on time (the server's push follows); one far
        // off (a setTimeout past 2^31 ms fires at once) leaves it to the server.
        const left = Date.parse(t.passExpiresAt) - Date.now();
        if (left > 0 && left < 2 ** 31 - 1) expiry = setTimeout(() => show({ ...t, status: 'EXPIRED', pass: null }, phase), left);
        break;
      case 'EXPIRED':
        text = 'Your turn in the queue is over (your pass ran out or was used, or you were away when your turn came).';
        note = 'Join again to queue at the back.';
        break;
      case 'SOLD_OUT':
        text = 'Sold out: no seat is left for those still waiting.';
        break;
      case 'CLOSED':
        text = 'The waiting room has closed.';
        break;
    }
    $('queue-status').textContent = text;
    $('queue-note').textContent = note;
    // The hall shows once admitted, and when the queue decides no more (closed).
    gate(!(t && (t.status === 'ADMITTED' || t.status === 'CLOSED')) && phase !== 'CLOSED');
    page.render();
  }

  function stop() {
    gen++;
    clearTimeout(expiry);
    if (ws) {
      try { ws.close(1000, 'bye'); } catch (e) { /* already closed */ }
      ws = null;
    }
    setLive('idle');
  }

  // follow streams the ticket; a stream that ends without a final ticket (the ticket is
  // gone: the server lost it) joins again after a pause.
  function follow() {
    stop();
    const g = gen;
    const id = showID;
    let final = false;
    const again = () => {
      if (g !== gen || left || final) return;
      retry++;
      setLive('reconnecting');
      setTimeout(() => { if (g === gen) join(); }, Math.min(10000, 500 * 2 ** Math.min(retry, 5)));
    };
    setLive('connecting');
    ws = api.subscribe(SUBSCRIPTION_Q, { id }, {
      current: () => g === gen,
      token: () => state.token,
      next: (payload) => {
        const t = payload && payload.data && payload.data.queue;
        if (!t) return;
        retry = 0;
        setLive('live');
        final = ['EXPIRED', 'SOLD_OUT', 'CLOSED'].includes(t.status);
        show(t, state.showtime && state.showtime.queue && state.showtime.queue.phase);
      },
      error: () => again(),
      complete: () => { if (final) setLive('idle'); else again(); },
      close: () => { ws = null; again(); },
    });
  }

  async function join() {
    if (!state.token || !showID) return;
    left = false;
    try {
      const { data } = await page.gql(`mutation DemoJoinQueue($id: ID!) { joinQueue(showtimeId: $id) { ${TICKET} } }`, { id: showID });
      show(data.joinQueue);
      if (!['SOLD_OUT', 'CLOSED'].includes(data.joinQueue.status)) follow();
    } catch (e) {
      page.showError(e);
      if (['SERVICE_UNAVAILABLE', 'NETWORK', 'RATE_LIMITED'].includes(e.code)) {
        setTimeout(() => { if (!left) join(); }, 3000);
      }
    }
  }

  async function leave() {
    left = true;
    stop();
    try {
      await page.gql('mutation DemoLeaveQueue($id: ID!) { leaveQueue(showtimeId: $id) }', { id: showID });
    } catch (e) {
      page.showError(e);
    }
    show(null);
  }

  // enter shows a showtime's queue when it has one that still decides who may buy, and
  // joins it (a customer who opened this showtime wants in); false when there is none.
  function enter(st) {
    exit();
    const q = st.queue;
    if (!q || q.phase === 'SOLD_OUT' || q.phase === 'CLOSED') {
      if (q && q.phase === 'SOLD_OUT') page.showMessage('info', 'Sold out: this showtime\'s waiting room has nothing left to sell.', 'SOLD_OUT');
      return false;
    }
    showID = st.id;
    left = false;
    retry = 0;
    show(null, q.phase);
    join();
    return true;
  }

  function exit() {
    stop();
    showID = null;
    state.pass = null;
    $('queue').hidden = true;
    gate(false);
  }

  $('queue-join').addEventListener('click', () => { page.clearMessage(); join(); });
  $('queue-leave').addEventListener('click', () => { page.clearMessage(); leave(); });

  return { enter, exit };
};
