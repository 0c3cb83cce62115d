package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/ticket"
	"seatflow/internal/nodeid"
	"seatflow/internal/tooling/gqlclient"
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
// (ADMITTED: the ticket's row read, then its conditional update), against the same update
// made through the same ent client, and `{ __typename }` over the same HTTP path, side by
// side.
func benchCheckIn(ctx context.Context, b *benchEnv, w io.Writer) error {
	s, err := b.openBenchApp(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	staff, _ := s.Auth.Issue("bench-door", "staff", 2*time.Hour)
	progress("bench:   making %d tickets of %d showtimes starting in an hour …", 4*checkInHalls*checkInRows*checkInPerRow, 4*checkInHalls)
	http1, err := s.benchTickets(ctx, "http", 3*checkInHalls) // the closed loop's, then the open loops'
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
		if _, err := s.client.Post(ctx, staff, http1[i].body, buf); err != nil {
			return err
		}
		if !bytes.Contains(buf.Bytes(), admitted) {
			return fmt.Errorf("not admitted: %.200s", buf.Bytes())
		}
		return nil
	}}
	var nextPlain atomic.Int64
	writes := &probe{label: "the ticket's conditional update, committed (ent)", workers: checkInWorkers, do: func(ctx context.Context, _, _ int) error {
		i := nextPlain.Add(1) - 1
		if i >= int64(len(plain)) {
			return errBenchStop
		}
		return admitRows(ctx, s.DB, plain[i].id)
	}}
	typenameBody, typenameData := gqlclient.Body(`{ __typename }`, nil), []byte(`"__typename":"Query"`)
	typename := &probe{label: "`{ __typename }` over HTTP", workers: checkInWorkers, do: func(ctx context.Context, wk, _ int) error {
		buf := &bufs[wk]
		if _, err := s.client.Post(ctx, staff, typenameBody, buf); err != nil {
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
	scan, rowsRun, floor := runs[0], runs[1], runs[2]

	// Second scans of admitted tickets (ALREADY_CHECKED_IN: a read and no write), for scale.
	admittedN := int(next.Load())
	var again atomic.Int64
	already := []byte(`"status":"ALREADY_CHECKED_IN"`)
	repeats := &probe{label: "checkIn over HTTP (a used ticket: ALREADY_CHECKED_IN)", workers: checkInWorkers, do: func(ctx context.Context, wk, _ int) error {
		i := int(again.Add(1)-1) % max(admittedN, 1)
		buf := &bufs[wk]
		if _, err := s.client.Post(ctx, staff, http1[i].again, buf); err != nil {
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

	// First scans offered at a rate (open loop: each request leaves at its time, whatever
	// the ones before it are doing), timed from when it was due to leave: the target rate,
	// or less when it leaves the host more than hostBusyMax busy (bench_busy.go).
	var nextOpen atomic.Int64
	nextOpen.Store(next.Load())
	type openRun struct {
		rate int
		lat  latencies
		errs map[string]int
		sent int
		busy float64
	}
	var open []openRun
	_, _, within, err := rateAtBusy(checkInTargetRate, func(rate int) (float64, error) {
		cpu := readCPUTimes()
		lat, errs, sent := openLoop(ctx, rate, b.Opt.Duration, func(ctx context.Context) error {
			i := nextOpen.Add(1) - 1
			if i >= int64(len(http1)) {
				return errBenchStop
			}
			var buf bytes.Buffer
			if _, err := s.client.Post(ctx, staff, http1[i].body, &buf); err != nil {
				return err
			}
			if !bytes.Contains(buf.Bytes(), admitted) {
				return fmt.Errorf("not admitted: %.200s", buf.Bytes())
			}
			return nil
		})
		r := openRun{rate: rate, lat: lat, errs: errs, sent: sent, busy: cpu.busySince()}
		open = append(open, r)
		progress("bench:   checkIn at %d/s offered: %d sent, p50 %s, p99 %s, errors %d, host %.0f %% busy", rate, sent,
			ms(lat.pct(50)), ms(lat.pct(99)), sumErrors(errs), 100*r.busy)
		return r.busy, nil
	})
	if err != nil {
		return err
	}
	judged := open[len(open)-1]
	openOK := within && judged.lat.pct(99) <= checkInTargetP99 && sumErrors(judged.errs) == 0 &&
		judged.sent >= int(float64(judged.rate)*b.Opt.Duration.Seconds())
	openRow := func(r openRun, target, result string) []string {
		return []string{fmt.Sprintf("`checkIn`, first scan, %d/s offered (open loop): host %.0f %% busy", r.rate, 100*r.busy),
			fmt.Sprintf("%d sent", r.sent), ms(r.lat.pct(50)), ms(r.lat.pct(99)), "", target, result,
			errCell(catalogRun{errors: sumErrors(r.errs), firstErr: firstError(r.errs)})}
	}

	fmt.Fprintf(w, "\n## 10. Check-in\n\n")
	fmt.Fprintf(w, "`checkIn` through the real HTTP handler at one instance (staff token, GraphQL, the code's Ed25519 signature checked, the ticket's row read, then its conditional update committed, then the announcement on Redis), %d concurrent door clients, each request the first scan of a ticket of its own (%d tickets of %d showtimes starting in an hour, in halls of %d seats, made before the clock starts), selecting the ticket's seat; then first scans offered at %d/s for %s whatever the answers do (open loop), each timed from when it was due: when that leaves the host more than %.0f %% busy (all its cores, from /proc/stat: the server, its clients, MySQL and Redis share them), at a lower rate, scaled by the busy share measured, until one leaves it at most that busy, and the p99 target is judged there (a latency measured on a saturated host is the host's queue); the runs above it stay as figures. The rate target holds when the closed loop reaches it. Baselines in the same run, taking turns with it (%d rounds of %s each): the same conditional update through the same ent client and connection pool, and `{ __typename }` over the same HTTP path (the server's ceiling for any request).\n",
		checkInWorkers, len(http1), 3*checkInHalls, checkInRows*checkInPerRow, checkInTargetRate, b.Opt.Duration, 100*hostBusyMax, catalogRounds, b.Opt.Duration/catalogRounds)
	rows := [][]string{
		{"`{ __typename }` over HTTP", fmt.Sprintf("%.0f", floor.rps), ms(floor.lat.pct(50)), ms(floor.lat.pct(99)), fmt.Sprintf("%.2f", floor.rps/rowsRun.rps), "", "", errCell(floor)},
		{"the ticket's conditional update, committed (ent)", fmt.Sprintf("%.0f", rowsRun.rps), ms(rowsRun.lat.pct(50)), ms(rowsRun.lat.pct(99)), "1.00", "", "", errCell(rowsRun)},
		{"`checkIn`, first scan (ADMITTED), as fast as it goes", fmt.Sprintf("%.0f", scan.rps), ms(scan.lat.pct(50)), ms(scan.lat.pct(99)), fmt.Sprintf("%.2f", scan.rps/rowsRun.rps),
			fmt.Sprintf("≥ %d/s", checkInTargetRate), verdict(scan.rps >= checkInTargetRate && scan.errors == 0), errCell(scan)},
	}
	for _, r := range open[:len(open)-1] {
		rows = append(rows, openRow(r, fmt.Sprintf("(figure: host over %.0f %% busy)", 100*hostBusyMax), ""))
	}
	rows = append(rows, openRow(judged, fmt.Sprintf("p99 ≤ %s, host ≤ %.0f %% busy", ms(checkInTargetP99), 100*hostBusyMax), verdict(openOK)),
		[]string{"`checkIn`, a used ticket (ALREADY_CHECKED_IN, no write)", fmt.Sprintf("%.0f", repeat.rps), ms(repeat.lat.pct(50)), ms(repeat.lat.pct(99)), fmt.Sprintf("%.2f", repeat.rps/rowsRun.rps), "", "", errCell(repeat)})
	table(w, []string{"measure", "ops/s", "p50", "p99", "ratio to the update", "target", "result", "errors"}, rows)
	return nil
}

// benchTickets makes n showtimes starting in an hour (the door is open: tickets are valid
// from 3 hours before), each in a hall of its own, one PAID order per showtime covering
// every seat, and their tickets, straight in MySQL; then it signs every ticket's code.
func (s *benchServer) benchTickets(ctx context.Context, tag string, n int) ([]benchTicket, error) {
	c, admin := s.client, s.admin
	var movie struct{ CreateMovie struct{ ID string } }
	if err := c.Do(ctx, admin, `mutation($in: MovieInput!) { createMovie(input: $in) { id } }`,
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
		if err := c.Do(ctx, admin, `mutation($in: HallInput!) { createHall(input: $in) { id seats { id } } }`,
			map[string]any{"in": map[string]any{"name": fmt.Sprintf("Door %s %d", tag, h), "rows": rows}}, &hall); err != nil {
			return nil, err
		}
		var show struct{ CreateShowtime struct{ ID string } }
		if err := c.Do(ctx, admin, `mutation($in: ShowtimeInput!) { createShowtime(input: $in) { id } }`,
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
			again := gqlclient.Body(benchCheckInQ, vars)
			vars["nonce"] = uuid.NewString()
			out = append(out, benchTicket{id: t.ID, showID: showID, body: gqlclient.Body(benchCheckInQ, vars), again: again})
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

// admitRows writes what an admission writes: the ticket's conditional update, committed on
// its own.
func admitRows(ctx context.Context, db *ent.Client, ticketID int) error {
	n, err := db.Ticket.Update().Where(ticket.ID(ticketID), ticket.RevokedAtIsNil(), ticket.CheckedInAtIsNil()).
		SetCheckedInAt(time.Now()).SetCheckInNonce("plain").SetCheckedInBy("bench").SetAdmissions(1).Save(ctx)
	if err == nil && n != 1 {
		err = fmt.Errorf("ticket %d: %d rows updated", ticketID, n)
	}
	return err
}

// openLoop calls fn rate times a second for d, each call in its own goroutine at its time
// (at most 1,000 in flight), and returns each call's latency from when it was due (a
// server that falls behind shows in the latencies, not in a slower rate), the errors by
// message, and how many calls were made.
func openLoop(ctx context.Context, rate int, d time.Duration, fn func(ctx context.Context) error) (latencies, map[string]int, int) {
	var mu sync.Mutex
	var lat latencies
	errs := map[string]int{}
	var wg sync.WaitGroup
	inflight := make(chan struct{}, 1000)
	start := time.Now()
	n := int(float64(rate) * d.Seconds())
	sent := 0
	for i := 0; i < n && ctx.Err() == nil; i++ {
		due := start.Add(time.Duration(i) * time.Second / time.Duration(rate))
		time.Sleep(time.Until(due))
		inflight <- struct{}{}
		sent++
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-inflight }()
			err := fn(ctx)
			took := time.Since(due)
			mu.Lock()
			defer mu.Unlock()
			if errors.Is(err, errBenchStop) {
				errs["ran out of tickets"]++
				return
			}
			lat = append(lat, took)
			if err != nil {
				errs[err.Error()]++
			}
		}()
	}
	wg.Wait()
	return lat, errs, sent
}
