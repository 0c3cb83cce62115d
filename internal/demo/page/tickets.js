// SeatFlow demo: the customer's tickets. SeatFlow.tickets.show(gql, showtimeId) lists the
// tickets of the caller's PAID orders for the showtime: each with its QR code (the API's
// qrSvg, shown as an image so nothing in it runs), its seat and the showtime, and its code
// as text (what the door page takes when pasted), and beside the QR code "Add to Apple
// Wallet" (the ticket's applePassUrl) and "Save to Google Wallet" (ticketWalletLink), each
// shown only when the server answers it. Loaded after api.js, before app.js.
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);

  const TICKETS_Q = `query DemoTickets { myOrders { id status showtime { id startsAt movie { title } hall { name } }
  tickets { id code status checkedInAt qrSvg seat { row number } } } }`;

  // Asked apart from TICKETS_Q: a server without the Apple pass field refuses only this query.
  const APPLE_Q = `query DemoApplePasses { myOrders { id tickets { id applePassUrl } } }`;
  const GOOGLE_Q = `query DemoGoogleWallet($id: ID!) { ticketWalletLink(ticketId: $id) }`;

  const STATUS = { VALID: 'Valid', CHECKED_IN: 'Checked in', REVOKED: 'Revoked (refunded or cancelled)' };

  // svgImage is an <img> showing svg (a data: URL: the page's CSP allows those images).
  function svgImage(svg, alt) {
    const img = document.createElement('img');
    img.src = 'data:image/svg+xml;base64,' + btoa(svg);
    img.alt = alt;
    img.className = 'qr';
    return img;
  }

  function ticketCard(o, t) {
    const card = document.createElement('li');
    card.className = 'ticket';
    card.dataset.ticketId = t.id;
    card.dataset.status = t.status;
    const seat = `Row ${t.seat.row}, seat ${t.seat.number}`;
    card.append(svgImage(t.qrSvg, `QR code of the ticket for ${seat}`));
    const info = document.createElement('div');
    const when = new Date(o.showtime.startsAt).toLocaleString([], { dateStyle: 'medium', timeStyle: 'short' });
    const title = document.createElement('strong');
    title.textContent = seat;
    const line = document.createElement('p');
    line.className = 'muted';
    line.textContent = `${o.showtime.movie.title} · ${o.showtime.hall.name} · ${when}`;
    const status = document.createElement('p');
    status.className = 'ticket-status';
    status.textContent = STATUS[t.status] || t.status;
    const code = document.createElement('details');
    const summary = document.createElement('summary');
    summary.textContent = 'Code (for pasting at the door)';
    const text = document.createElement('code');
    text.className = 'ticket-code';
    text.textContent = t.code;
    code.append(summary, text);
    info.append(title, line, status, walletLinks(), code);
    card.append(info);
    return card;
  }

  // walletLinks are the ticket's wallet buttons, hidden until their links arrive.
  function walletLinks() {
    const p = document.createElement('p');
    p.className = 'wallets';
    const apple = document.createElement('a');
    apple.className = 'wallet wallet-apple';
    apple.textContent = 'Add to Apple Wallet';
    apple.hidden = true;
    const google = document.createElement('a');
    google.className = 'wallet wallet-google';
    google.textContent = 'Save to Google Wallet';
    google.target = '_blank';
    google.rel = 'noopener';
    google.hidden = true;
    p.append(apple, google);
    return p;
  }

  // fillWallets gives the cards of tickets not REVOKED their wallet links: the Apple pass
  // links of every ticket in one query, a Google link per ticket; a refusal (a server
  // without that wallet) leaves its button hidden.
  async function fillWallets(gql, cards) {
    const live = cards.filter((c) => c.dataset.status !== 'REVOKED');
    if (live.length === 0) return;
    const apple = (async () => {
      let orders;
      try {
        orders = (await gql(APPLE_Q, {})).data.myOrders;
      } catch (e) {
        return; // no Apple Wallet here
      }
      const urls = new Map();
      for (const o of orders) for (const t of o.tickets) urls.set(t.id, t.applePassUrl);
      for (const c of live) {
        const url = urls.get(c.dataset.ticketId);
        const a = c.querySelector('.wallet-apple');
        if (url && a) {
          a.href = url;
          a.hidden = false;
        }
      }
    })();
    const google = live.map(async (c) => {
      let link;
      try {
        link = (await gql(GOOGLE_Q, { id: c.dataset.ticketId })).data.ticketWalletLink;
      } catch (e) {
        return; // no Google Wallet here, or the ticket was just revoked
      }
      const a = c.querySelector('.wallet-google');
      if (link && a) {
        a.href = link;
        a.hidden = false;
      }
    });
    await Promise.all([apple, ...google]);
  }

  // show lists the tickets of the caller's paid orders for showtimeId (none: the panel hides).
  async function show(gql, showtimeId) {
    const panel = $('tickets');
    const list = $('ticket-list');
    if (!panel || !list) return;
    let orders = [];
    try {
      const { data } = await gql(TICKETS_Q, {});
      orders = data.myOrders;
    } catch (e) {
      orders = [];
    }
    const cards = [];
    for (const o of orders) {
      if (o.status !== 'PAID' || String(o.showtime.id) !== String(showtimeId)) continue;
      for (const t of o.tickets) cards.push(ticketCard(o, t));
    }
    list.replaceChildren(...cards);
    panel.hidden = cards.length === 0;
    await fillWallets(gql, cards);
  }

  window.SeatFlow.tickets = { show };
})();
