// SeatFlow demo: the door of a showtime, for staff. A scanned or pasted code goes to the
// checkIn mutation with a nonce of its own (a retry after a network error sends the same
// nonce, so it never counts twice); the answer shows big and coloured; the count of the
// showtime's door comes live from the checkIns subscription. With the browser's
// BarcodeDetector (where it exists) the camera reads QR codes; otherwise a scanner that
// types into the field, or pasting, does. Plain JavaScript over api.js.
'use strict';

(() => {
  const TOKEN_KEY = 'seatflow.door.token';
  const $ = (id) => document.getElementById(id);
  const { api } = window.SeatFlow;
  const state = { token: null, showtime: null, ws: null, wsGen: 0, busy: false, lastCode: '', lastAt: 0 };
  const gql = (query, variables) => api.gql(query, variables, state.token);

  const CHECK_IN = `mutation DoorCheckIn($show: ID!, $code: String!, $nonce: String!) {
  checkIn(showtimeId: $show, code: $code, nonce: $nonce) {
    status firstCheckedInAt
    ticket { id seat { row number } showtime { id startsAt movie { title } hall { name } } }
  }
}`;
  const COUNT = `subscription DoorCount($id: ID!) { checkIns(showtimeId: $id) { checkedIn sold duplicateScans } }`;

  const fmtTime = (iso) => new Date(iso).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  const seatOf = (t) => (t ? `Row ${t.seat.row}, seat ${t.seat.number}` : '');

  // The answer's words: the colour is never the only signal.
  function words(r) {
    const t = r.ticket;
    switch (r.status) {
      case 'ADMITTED': return ['✓ ADMITTED', seatOf(t)];
      case 'ALREADY_CHECKED_IN': return ['✕ ALREADY CHECKED IN', `${seatOf(t)} · first at ${fmtTime(r.firstCheckedInAt)}`];
      case 'REVOKED': return ['✕ REVOKED', `${seatOf(t)} · refunded or cancelled`];
      case 'WRONG_SHOWTIME': return ['✕ WRONG SHOWTIME', t ? `for ${t.showtime.movie.title}, ${t.showtime.hall.name}, ${fmtTime(t.showtime.startsAt)}` : ''];
      case 'NOT_YET_VALID': return ['… TOO EARLY', 'the door opens 3 hours before the start'];
      case 'EXPIRED': return ['… EXPIRED', 'the showtime has ended'];
      default: return ['✕ NOT A VALID TICKET', 'not one of ours, or changed'];
    }
  }

  function showResult(status, big, detail) {
    const el = $('door-result');
    el.dataset.status = status;
    el.textContent = big;
    $('door-detail').textContent = detail || '';
  }

  function log(status, text) {
    const li = document.createElement('li');
    li.dataset.status = status;
    li.textContent = `${new Date().toLocaleTimeString()} · ${text}`;
    $('door-log').prepend(li);
    while ($('door-log').children.length > 20) $('door-log').lastChild.remove();
  }

  // checkIn sends one scan; a network failure or a busy server is retried with the same nonce.
  async function checkIn(code) {
    code = code.trim();
    if (!code || !state.showtime || state.busy) return;
    state.busy = true;
    const nonce = api.newKey();
    showResult('CHECKING', 'Checking…', '');
    try {
      for (let attempt = 0; ; attempt++) {
        try {
          const { data } = await gql(CHECK_IN, { show: state.showtime, code, nonce });
          const r = data.checkIn;
          const [big, detail] = words(r);
          showResult(r.status, big, detail);
          log(r.status, `${big} ${detail}`);
          return;
        } catch (e) {
          if (attempt < 3 && (e.code === 'NETWORK' || e.code === 'SERVICE_UNAVAILABLE')) {
            await new Promise((ok) => setTimeout(ok, 300 * (attempt + 1)));
            continue;
          }
          const msg = e.code === 'FORBIDDEN' ? 'this token is not a staff token' : e.code === 'UNAUTHENTICATED' ? 'sign in with a staff token' : e.message;
          showResult('ERROR', '⚠ NOT CHECKED', msg);
          log('ERROR', msg);
          return;
        }
      }
    } finally {
      state.busy = false;
    }
  }

  function watchCount(show) {
    const gen = ++state.wsGen;
    if (state.ws) try { state.ws.close(1000, 'bye'); } catch (e) { /* closed */ }
    const el = $('count');
    state.ws = api.subscribe(COUNT, { id: show }, {
      current: () => gen === state.wsGen,
      token: () => state.token,
      next: (p) => {
        const c = p && p.data && p.data.checkIns;
        if (!c) return;
        el.dataset.checkedIn = String(c.checkedIn);
        el.dataset.sold = String(c.sold);
        el.textContent = `Checked in: ${c.checkedIn} of ${c.sold}` + (c.duplicateScans ? ` · duplicate scans: ${c.duplicateScans}` : '');
      },
      error: () => { el.textContent = 'Checked in: – (not allowed with this token)'; },
      complete: () => {},
      close: () => { setTimeout(() => { if (gen === state.wsGen) watchCount(show); }, 2000); },
    });
  }

  async function loadShowtimes(preferred) {
    const sel = $('showtime-select');
    sel.disabled = true;
    try {
      const { data } = await gql('query DoorShowtimes($d: Date!) { showtimes(date: $d) { id startsAt movie { title } hall { name } } }', { d: $('date').value });
      const list = data.showtimes;
      if (list.length === 0) {
        sel.replaceChildren(new Option('No showtimes on this day', ''));
        return;
      }
      sel.replaceChildren(...list.map((s) => new Option(`${fmtTime(s.startsAt)} · ${s.movie.title} · ${s.hall.name}`, s.id)));
      sel.disabled = false;
      sel.value = (list.find((s) => s.id === preferred) || list[0]).id;
      openShowtime(sel.value);
    } catch (e) {
      sel.replaceChildren(new Option('Could not load showtimes', ''));
    }
  }

  function openShowtime(id) {
    state.showtime = id || null;
    const p = new URLSearchParams(location.search);
    p.set('date', $('date').value);
    if (id) p.set('showtime', id);
    history.replaceState(null, '', '?' + p.toString());
    if (id) watchCount(id);
  }

  // camera reads QR codes with the browser's BarcodeDetector; the same code is read again
  // only after 3 s (a ticket held in front of the camera is one scan).
  async function camera() {
    const video = $('camera');
    try {
      const detector = new window.BarcodeDetector({ formats: ['qr_code'] });
      video.srcObject = await navigator.mediaDevices.getUserMedia({ video: { facingMode: 'environment' } });
      video.hidden = false;
      await video.play();
      const loop = async () => {
        try {
          const found = await detector.detect(video);
          const code = found.length ? found[0].rawValue : '';
          if (code && (code !== state.lastCode || Date.now() - state.lastAt > 3000)) {
            state.lastCode = code;
            state.lastAt = Date.now();
            await checkIn(code);
          }
        } catch (e) { /* a frame that could not be read */ }
        setTimeout(loop, 250);
      };
      loop();
    } catch (e) {
      showResult('ERROR', '⚠ NO CAMERA', 'scan into the field, or paste the code');
    }
  }

  function setToken(tok) {
    state.token = tok || null;
    const claims = tok ? api.jwtClaims(tok) : null;
    const who = claims && claims.sub ? `${claims.sub} (${claims.role})` : null;
    $('auth-status').textContent = who ? `Working the door as ${who}.` : 'Paste a staff token to check tickets in.';
    $('auth-status').dataset.state = who ? 'signed-in' : 'none';
    $('token-form').hidden = !!who;
    if (tok) sessionStorage.setItem(TOKEN_KEY, tok);
  }

  async function main() {
    const params = new URLSearchParams(location.search);
    $('date').value = params.get('date') || new Date().toLocaleDateString('en-CA');
    $('date').addEventListener('change', () => loadShowtimes(null));
    $('showtime-select').addEventListener('change', (e) => openShowtime(e.target.value));
    $('scan-form').addEventListener('submit', (e) => {
      e.preventDefault();
      const code = $('code-input').value;
      $('code-input').value = '';
      checkIn(code);
    });
    $('token-form').addEventListener('submit', (e) => {
      e.preventDefault();
      const tok = $('token-input').value.trim().replace(/^Bearer\s+/i, '');
      $('token-input').value = '';
      if (!tok) return;
      setToken(tok);
      if (state.showtime) watchCount(state.showtime);
    });
    if ('BarcodeDetector' in window && navigator.mediaDevices) {
      $('camera-btn').hidden = false;
      $('camera-btn').addEventListener('click', camera);
    }
    setToken(sessionStorage.getItem(TOKEN_KEY) || (await api.demoToken('staff')));
    await loadShowtimes(params.get('showtime'));
    document.body.dataset.ready = 'true';
  }

  main();
})();
