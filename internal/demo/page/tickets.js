// SeatFlow demo: the customer's tickets. SeatFlow.tickets.show(gql, showtimeId) lists the
// tickets of the caller's PAID orders for the showtime: each with its QR code (the API's
// qrSvg, shown as an image so nothing in it runs), its seat and the showtime, and its code
// as text (what the door page takes when pasted). Loaded after api.js, before app.js.
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);

  const TICKETS_Q = `query DemoTickets { myOrders { id status showtime { id startsAt movie { title } hall { name } }
  tickets { id code status checkedInAt qrSvg seat { row number } } } }`;

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
    info.append(title, line, status, code);
    card.append(info);
    return card;
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
  }

  window.SeatFlow.tickets = { show };
})();
