package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/ticket"
	"seatflow/internal/nodeid"
)

const (
	checkInWorkers = 16
	// checkInHalls × checkInRows × checkInPerRow tickets are made for each measured run,
	// more than a fast host admits in its time; halls of 300 seats, as most are (a hall's
	// seats come from the catalog cache for the answer's seat; a 2,000-seat hall is larger
	// than an entry of its local level may be, so each of its reads is a Redis one).
	checkInHalls, checkInRows, checkInPerRow = 40, 15, 20
	checkInTargetRate                        = 1000
	checkInTargetP99                         = 20 * time.Millisecond
)

const benchCheckInQ = `mutation($show: ID!, $code: String!, $nonce: String) { checkIn(showtimeId: $show, code: $code, nonce: $nonce) {
	status firstCheckedInAt ticket { id status seat { row number } } } }`

// benchTicket is a ticket made for the bench: its showtime's API id and its code's request.
type benchTicket struct {
	id, showID int
	body       []byte // the checkIn request of its code, with a nonce of its own
	again      []byte // the same without a nonce: another scan, not a retry
}

// benchCheckIn measures checkIn at one instance, each request the first scan of a ticket
// (ADMITTED: the conditional update of the ticket's row and the check-in row in one
// transaction), against the same two writes made in one transaction each through the same
// ent client, and `{ __typename }` over the same HTTP path, side by side.
func benchCheckIn(ctx context.Context, b *benchEnv, w io.Writer) error {
	s, err := b.openBenchApp(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	staff, _ := s.Auth.Issue("bench-door", "staff", 2*time.Hour)
	progress("bench:   making %d tickets of %d showtimes starting in an hour …", 2*checkInHalls*checkInRows*checkInPerRow, 2*checkInHalls)
	http1, err := s.benchTickets(ctx, "http", checkInHalls)
	if err != nil {
		return err
	}
	plain, err := s.benchTickets(ctx, "plain", checkInHalls)
	if err != nil {
		return err
	}

	var next atomic.Int64
	bufs := make([]bytes.Buffer, checkInWorkers)
	admitted := []byte(`"status":"ADMITTED"`)
	checkIns := &probe{label: "checkIn over HTTP (first scan: ADMITTED)", workers: checkInWorkers, do: func(ctx context.Context, wk, _ int) error {
		i := next.Add(1) - 1
		if i >= int64(len(http1)) {
			return errBenchStop
		}
		buf := &bufs[wk]
		if err := s.client.postInto(ctx, staff, http1[i].body, buf); err != nil {
			return err
		}
		if !bytes.Contains(buf.Bytes(), admitted) {
			return fmt.Errorf("not admitted: %.200s", buf.Bytes())
		}
		return nil
	}}
	var nextPlain atomic.Int64
	writes := &probe{label: "ticket update + check-in insert, one transaction (ent)", workers: checkInWorkers, do: func(ctx context.Context, _, _ int) error {
		i := nextPlain.Add(1) - 1
		if i >= int64(len(plain)) {
			return errBenchStop
		}
		return admitRows(ctx, s.DB, plain[i].id, plain[i].showID)
	}}
	typenameBody, typenameData := gqlBody(`{ __typename }`, nil), []byte(`"__typename":"Query"`)
	typename := &probe{label: "`{ __typename }` over HTTP", workers: checkInWorkers, do: func(ctx context.Context, wk, _ int) error {
		buf := &bufs[wk]
		if err := s.client.postInto(ctx, staff, typenameBody, buf); err != nil {
			return err
		}
		if !bytes.Contains(buf.Bytes(), typenameData) {
			return fmt.Errorf("response with errors: %.200s", buf.Bytes())
		}
		return nil
	}}
	runs, err := interleave(ctx, b, checkIns, writes, typename)
	if err != nil {
		return err
	}
	scan, rows, floor := runs[0], runs[1], runs[2]

	// Second scans of admitted tickets (ALREADY_CHECKED_IN: a read and no write), for scale.
	admittedN := int(next.Load())
	var again atomic.Int64
	already := []byte(`"status":"ALREADY_CHECKED_IN"`)
	repeats := &probe{label: "checkIn over HTTP (a used ticket: ALREADY_CHECKED_IN)", workers: checkInWorkers, do: func(ctx context.Context, wk, _ int) error {
		i := int(again.Add(1)-1) % max(admittedN, 1)
		buf := &bufs[wk]
		if err := s.client.postInto(ctx, staff, http1[i].again, buf); err != nil {
			return err
		}
		if !bytes.Contains(buf.Bytes(), already) {
			return fmt.Errorf("not refused: %.200s", buf.Bytes())
		}
		return nil
	}}
	reRuns, err := interleave(ctx, b, repeats)
	if err != nil {
		return err
	}
	repeat := reRuns[0]

	p99 := scan.lat.pct(99)
	ok := scan.rps >= checkInTargetRate && p99 <= checkInTargetP99 && scan.errors == 0
	fmt.Fprintf(w, "\n## 8. Check-in\n\n")
	fmt.Fprintf(w, "`checkIn` through the real HTTP handler at one instance (staff token, GraphQL, the code's Ed25519 signature checked, then the ticket's conditional update and its check-in row in one MySQL transaction, then the announcement on Redis), %d concurrent door clients, each request the first scan of a ticket of its own (%d tickets of %d showtimes starting in an hour, in halls of %d seats, made before the clock starts), selecting the ticket's seat. Baselines in the same run, taking turns with it (%d rounds of %s each): the same two writes through the same ent client and connection pool in one transaction each, and `{ __typename }` over the same HTTP path (the server's ceiling for any request).\n",
		checkInWorkers, len(http1), checkInHalls, checkInRows*checkInPerRow, catalogRounds, b.Opt.Duration/catalogRounds)
	table(w, []string{"measure", "ops/s", "p50", "p99", "ratio to the writes", "target", "result", "errors"}, [][]string{
		{"`{ __typename }` over HTTP", fmt.Sprintf("%.0f", floor.rps), ms(floor.lat.pct(50)), ms(floor.lat.pct(99)), fmt.Sprintf("%.2f", floor.rps/rows.rps), "", "", errCell(floor)},
		{"ticket update + check-in insert (ent, one transaction)", fmt.Sprintf("%.0f", rows.rps), ms(rows.lat.pct(50)), ms(rows.lat.pct(99)), "1.00", "", "", errCell(rows)},
		{"`checkIn`, first scan (ADMITTED)", fmt.Sprintf("%.0f", scan.rps), ms(scan.lat.pct(50)), ms(p99), fmt.Sprintf("%.2f", scan.rps/rows.rps),
			fmt.Sprintf("≥ %d/s, p99 ≤ %s", checkInTargetRate, ms(checkInTargetP99)), verdict(ok), errCell(scan)},
		{"`checkIn`, a used ticket (ALREADY_CHECKED_IN, no write)", fmt.Sprintf("%.0f", repeat.rps), ms(repeat.lat.pct(50)), ms(repeat.lat.pct(99)), fmt.Sprintf("%.2f", repeat.rps/rows.rps), "", "", errCell(repeat)},
	})
	return nil
}

// benchTickets makes n showtimes starting in an hour (the door is open: tickets are valid
// from 3 hours before), each in a hall of its own, one PAID order per showtime covering
// every seat, and their tickets, straight in MySQL; then it signs every ticket's code.
func (s *benchServer) benchTickets(ctx context.Context, tag string, n int) ([]benchTicket, error) {
	c, admin := s.client, s.admin
	var movie struct{ CreateMovie struct{ ID string } }
	if err := c.must(ctx, admin, `mutation($in: MovieInput!) { createMovie(input: $in) { id } }`,
		map[string]any{"in": map[string]any{"title": "Door " + tag, "durationMinutes": 120}}, &movie); err != nil {
		return nil, err
	}
	key, err := s.DB.TicketKey.Query().Order(ent.Desc("generation")).First(ctx)
	if err != nil {
		return nil, err
	}
	start := time.Now().Add(time.Hour).Truncate(time.Minute)
	var out []benchTicket
	for h := 0; h < n; h++ {
		var rows []map[string]any
		for r := 0; r < checkInRows; r++ {
			rows = append(rows, map[string]any{"label": rowLabel(r), "seats": checkInPerRow})
		}
		var hall struct {
			CreateHall struct {
				ID    string
				Seats []struct{ ID string }
			}
		}
		if err := c.must(ctx, admin, `mutation($in: HallInput!) { createHall(input: $in) { id seats { id } } }`,
			map[string]any{"in": map[string]any{"name": fmt.Sprintf("Door %s %d", tag, h), "rows": rows}}, &hall); err != nil {
			return nil, err
		}
		var show struct{ CreateShowtime struct{ ID string } }
		if err := c.must(ctx, admin, `mutation($in: ShowtimeInput!) { createShowtime(input: $in) { id } }`,
			map[string]any{"in": map[string]any{"movieId": movie.CreateMovie.ID, "hallId": hall.CreateHall.ID,
				"startsAt": start.Format(time.RFC3339), "prices": []map[string]any{{"kind": "STANDARD", "amountCents": 1000}}}}, &show); err != nil {
			return nil, err
		}
		showID := databaseID(show.CreateShowtime.ID)
		st, err := s.Catalog.FreshShowtime(ctx, showID)
		if err != nil {
			return nil, err
		}
		now := time.Now()
		o, err := s.DB.Order.Create().SetUserID("bench-buyer-" + tag + strconv.Itoa(h)).SetShowtimeID(showID).
			SetHoldToken(uuid.NewString()).SetIdempotencyKey("bench").SetStatus(seatflow.OrderPaid).SetAmountCents(0).
			SetCurrency("USD").SetExpiresAt(now).SetPaidAt(now).SetCreatedAt(now).Save(ctx)
		if err != nil {
			return nil, err
		}
		bulk := make([]*ent.TicketCreate, 0, len(hall.CreateHall.Seats))
		for _, seat := range hall.CreateHall.Seats {
			bulk = append(bulk, s.DB.Ticket.Create().SetOrderID(o.ID).SetShowtimeID(showID).SetSeatID(databaseID(seat.ID)).
				SetKeyID(key.ID).SetCreatedAt(now))
		}
		for i := 0; i < len(bulk); i += 500 {
			if err := s.DB.Ticket.CreateBulk(bulk[i:min(i+500, len(bulk))]...).Exec(ctx); err != nil {
				return nil, err
			}
		}
		made, err := s.DB.Ticket.Query().Where(ticket.OrderID(o.ID)).All(ctx)
		if err != nil {
			return nil, err
		}
		for _, t := range made {
			code, err := s.Tickets.Code(ctx, &seatflow.Ticket{ID: t.ID, ShowtimeID: showID, SeatID: t.SeatID, KeyID: t.KeyID}, st)
			if err != nil {
				return nil, err
			}
			vars := map[string]any{"show": nodeid.Encode(nodeid.Showtime, showID), "code": code}
			again := gqlBody(benchCheckInQ, vars)
			vars["nonce"] = uuid.NewString()
			out = append(out, benchTicket{id: t.ID, showID: showID, body: gqlBody(benchCheckInQ, vars), again: again})
		}
	}
	// Interleave the showtimes, as doors of several halls open at once.
	mixed := make([]benchTicket, 0, len(out))
	per := checkInRows * checkInPerRow
	for i := 0; i < per; i++ {
		for h := 0; h < n; h++ {
			mixed = append(mixed, out[h*per+i])
		}
	}
	return mixed, nil
}

// admitRows writes what an admission writes: the ticket's conditional update and its
// check-in row, in one transaction.
func admitRows(ctx context.Context, db *ent.Client, ticketID, showID int) error {
	tx, err := db.Tx(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	n, err := tx.Ticket.Update().Where(ticket.ID(ticketID), ticket.RevokedAtIsNil(), ticket.CheckedInAtIsNil()).
		SetCheckedInAt(now).SetCheckInNonce("plain").SetCheckedInBy("bench").Save(ctx)
	if err == nil && n != 1 {
		err = fmt.Errorf("ticket %d: %d rows updated", ticketID, n)
	}
	if err == nil {
		err = tx.CheckIn.Create().SetTicketID(ticketID).SetShowtimeID(showID).SetNonce("plain").SetScannedAt(now).
			SetRecordedAt(now).SetStaffID("bench").Exec(ctx)
	}
	if err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
