package reports_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/order"
	"seatflow/ent/orderseat"
	"seatflow/ent/payment"
	"seatflow/ent/refund"
	"seatflow/ent/seat"
	"seatflow/ent/seatblock"
	"seatflow/ent/ticket"
	"seatflow/internal/booking"
	"seatflow/internal/catalog"
	"seatflow/internal/database"
	"seatflow/internal/payments"
	"seatflow/internal/reports"
	"seatflow/internal/sales"
	"seatflow/internal/seats"
	"seatflow/internal/tickets"
	"seatflow/internal/tooling/testenv"
)

// env is a booking service and the reports over one database and Redis prefix.
type env struct {
	sql   *testenv.DB
	db    *ent.Client
	svc   *booking.Service
	rep   *reports.Service
	cat   *catalog.Service
	store *seats.Store
	sales *sales.Service
	clock *testenv.Clock
}

var extraPrices = []seatflow.Price{
	{Kind: seatflow.SeatStandard, TicketType: seatflow.TicketChild, AmountCents: 600},
	{Kind: seatflow.SeatPremium, TicketType: seatflow.TicketChild, AmountCents: 900},
	{Kind: seatflow.SeatStandard, TicketType: seatflow.TicketSenior, AmountCents: 700},
	{Kind: seatflow.SeatStandard, TicketType: seatflow.TicketStudent, AmountCents: 800},
}

func newEnv(t *testing.T) *env {
	t.Helper()
	mysql := testenv.MySQL(t)
	db := mysql.Client
	r := testenv.NewRedis(t)
	clk := testenv.NewClock(time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC))
	store := &seats.Store{RDB: r.Client, Keys: r.Keys, Now: clk.Now}
	cat := &catalog.Service{DB: db, Now: clk.Now}
	sl := &sales.Service{DB: db, Seats: store, RDB: r.Client, Keys: r.Keys, Catalog: cat, Now: clk.Now}
	svc := booking.New(booking.Deps{DB: db, Seats: store, Layouts: &seats.Layouts{Halls: cat}, Hashes: sl,
		RDB: r.Client, Keys: r.Keys, Catalog: cat, Provider: payments.Test{}},
		booking.Config{Now: clk.Now, LateWindow: 10 * time.Minute})
	ring, err := tickets.NewKeyring(db, tickets.NewSecret(), clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	if err := ring.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	svc.Tickets = &tickets.Service{DB: db, Keys: ring, RDB: r.Client, RedisKeys: r.Keys, Now: clk.Now}
	return &env{sql: mysql, db: db, svc: svc, rep: &reports.Service{DB: db, Catalog: cat, Now: clk.Now}, cat: cat, store: store, sales: sl, clock: clk}
}

// showtime adds an on-sale showtime starting in `in` with its seat hash; it returns its id
// and its sellable seats.
func (e *env) showtime(t *testing.T, in time.Duration, rows, perRow int) (int, []int) {
	t.Helper()
	ctx := context.Background()
	showID, hallID := testenv.Showtime(t, e.db, e.clock.Now(), testenv.ShowtimeSpec{Rows: rows, PerRow: perRow,
		PremiumFirstRow: true, Limit: 50, AllowGaps: true, StartsIn: in, TicketPrices: extraPrices})
	hall, err := e.cat.Hall(ctx, hallID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Init(ctx, showID, hall, nil); err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, s := range hall.Seats {
		ids = append(ids, s.ID)
	}
	return showID, ids
}

// bruteForce is a showtime's report computed by walking its orders, their lines and
// payments, its seats and tickets one by one in Go, as docs/DESIGN.md defines it.
func (e *env) bruteForce(t *testing.T, showID int) seatflow.SalesReport {
	t.Helper()
	ctx := context.Background()
	now := e.clock.Now()
	r := seatflow.SalesReport{}
	byType := map[seatflow.TicketType]*seatflow.TicketTypeSales{}
	for _, typ := range seatflow.TicketTypes {
		r.ByTicketType = append(r.ByTicketType, seatflow.TicketTypeSales{TicketType: typ})
	}
	for i := range r.ByTicketType {
		byType[r.ByTicketType[i].TicketType] = &r.ByTicketType[i]
	}
	for _, o := range e.db.Order.Query().Where(order.ShowtimeID(showID)).AllX(ctx) {
		ps := e.db.Payment.Query().Where(payment.OrderID(o.ID)).AllX(ctx)
		refunding := false
		for _, p := range ps {
			if !p.Status.Settled() {
				continue
			}
			r.RevenueCents += p.AmountCents
			if e.db.Refund.Query().Where(refund.PaymentID(p.ID), refund.Whole(true)).ExistX(ctx) { // refunded whole
				r.RefundedCents += p.AmountCents
				if p.Reference == o.PaymentRef {
					refunding = true
				}
				continue
			}
			for _, part := range e.db.Refund.Query().Where(refund.PaymentID(p.ID)).AllX(ctx) { // some seats refunded
				r.RefundedCents += part.AmountCents
			}
		}
		lines := e.db.OrderSeat.Query().Where(orderseat.OrderID(o.ID)).AllX(ctx)
		switch {
		case o.Status == seatflow.OrderPaid && !refunding:
			for _, l := range lines {
				if l.RefundedAt != nil {
					continue
				}
				r.Sold++
				byType[l.TicketType].Count++
				byType[l.TicketType].AmountCents += *l.AmountCents
			}
		case o.Status == seatflow.OrderPending && o.ExpiresAt.After(now):
			r.Held += len(lines)
		}
	}
	r.RevenueCents -= r.RefundedCents
	st := e.db.Showtime.GetX(ctx, showID)
	sellable := e.db.Seat.Query().Where(seat.HallID(st.HallID), seat.Sellable(true)).CountX(ctx)
	r.Blocked = e.db.SeatBlock.Query().Where(seatblock.ShowtimeID(showID)).CountX(ctx)
	r.Available = max(0, sellable-r.Sold-r.Held-r.Blocked)
	r.CheckedIn = e.db.Ticket.Query().Where(ticket.ShowtimeID(showID), ticket.RevokedAtIsNil(), ticket.CheckedInAtNotNil()).CountX(ctx)
	return r
}

func sameReport(a, b seatflow.SalesReport) bool {
	if a.Sold != b.Sold || a.Held != b.Held || a.Available != b.Available || a.Blocked != b.Blocked || a.RevenueCents != b.RevenueCents ||
		a.RefundedCents != b.RefundedCents || a.CheckedIn != b.CheckedIn || len(a.ByTicketType) != len(b.ByTicketType) {
		return false
	}
	for i := range a.ByTicketType {
		if a.ByTicketType[i] != b.ByTicketType[i] {
			return false
		}
	}
	return true
}

// TestReportsMatchABruteForceCount runs a random sequence of holds of random ticket types,
// payments (on time and late), cancellations, expiries and refunds over three showtimes,
// and after every few steps compares showtimeSales and salesReport with the brute-force
// count.
func TestReportsMatchABruteForceCount(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	type show struct {
		id    int
		seats []int
	}
	var shows []show
	for i, in := range []time.Duration{3 * time.Hour, 5 * time.Hour, 30 * time.Hour} {
		id, ids := e.showtime(t, in, 3, 4+i)
		shows = append(shows, show{id, ids})
	}
	users := []string{"u1", "u2", "u3", "u4"}
	var orders []*seatflow.Order
	compare := func(step int) {
		t.Helper()
		for _, s := range shows {
			got, err := e.rep.ShowtimeSales(ctx, s.id)
			if err != nil {
				t.Fatal(err)
			}
			if want := e.bruteForce(t, s.id); !sameReport(*got, want) {
				t.Fatalf("step %d, showtime %d:\nreport      %+v\nbrute force %+v", step, s.id, *got, want)
			}
		}
		day := e.clock.Now().Format(time.DateOnly)
		list, err := e.rep.SalesReport(ctx, nil, day, e.clock.Now().AddDate(0, 0, 2).Format(time.DateOnly))
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != len(shows) {
			t.Fatalf("step %d: salesReport lists %d showtimes, want %d", step, len(list), len(shows))
		}
		for i, line := range list {
			if line.ShowtimeID != shows[i].id || !sameReport(*line.Sales, e.bruteForce(t, line.ShowtimeID)) {
				t.Fatalf("step %d: salesReport line %d = showtime %d %+v", step, i, line.ShowtimeID, *line.Sales)
			}
		}
	}
	types := append([]seatflow.TicketType{seatflow.TicketAdult, seatflow.TicketAdult}, seatflow.TicketTypes...)
	for step := range 200 {
		switch k := rng.IntN(12); {
		case k < 4 || len(orders) == 0: // hold 1 to 3 random seats of random types
			s := shows[rng.IntN(len(shows))]
			var in []booking.SeatTicketInput
			for _, i := range rng.Perm(len(s.seats))[:1+rng.IntN(3)] {
				in = append(in, booking.SeatTicketInput{SeatID: s.seats[i], TicketType: types[rng.IntN(len(types))]})
			}
			o, err := e.svc.HoldSeats(ctx, users[rng.IntN(len(users))], booking.HoldSeatsInput{ShowtimeID: s.id, Seats: in,
				IdempotencyKey: fmt.Sprintf("k%d", step)})
			if err == nil {
				orders = append(orders, o)
			} else if c := seatflow.ErrorCode(err); c != seatflow.ESEATSUNAVAILABLE && c != seatflow.EINVALID {
				t.Fatalf("step %d: hold: %v", step, err)
			}
		case k < 6: // pay, on time or late
			o := orders[rng.IntN(len(orders))]
			_, _ = e.svc.PayOrder(ctx, o.UserID, o.ID, fmt.Sprintf("pay%d", step))
		case k < 7:
			o := orders[rng.IntN(len(orders))]
			_, _ = e.svc.CancelOrder(ctx, o.UserID, o.ID)
		case k < 8 && rng.IntN(2) == 0:
			o := orders[rng.IntN(len(orders))]
			_, _ = e.svc.RefundOrder(ctx, o.ID)
		case k < 8: // staff refund one of an order's seats
			o := orders[rng.IntN(len(orders))]
			_, _ = e.svc.RefundSeats(ctx, "admin", o.ID, o.SeatIDs[rng.IntN(len(o.SeatIDs)):][:1])
		case k < 9: // someone is let in on a valid ticket (as checkIn's update does)
			if tk, err := e.db.Ticket.Query().Where(ticket.RevokedAtIsNil(), ticket.CheckedInAtIsNil()).First(ctx); err == nil {
				e.db.Ticket.UpdateOne(tk).SetCheckedInAt(e.clock.Now()).SetAdmissions(1).ExecX(ctx)
			}
		case k < 11: // time passes: some holds run out, some of those are expired by the worker
			e.clock.Advance(time.Duration(1+rng.IntN(8)) * time.Minute)
			if rng.IntN(2) == 0 {
				if _, err := e.svc.ExpireDue(ctx); err != nil {
					t.Fatal(err)
				}
			}
		default:
			compare(step)
		}
	}
	compare(-1)
	// Every ticket carries its order line's ticket type.
	for _, tk := range e.db.Ticket.Query().AllX(ctx) {
		line := e.db.OrderSeat.Query().Where(orderseat.OrderID(tk.OrderID), orderseat.SeatID(tk.SeatID)).OnlyX(ctx)
		if tk.TicketType != line.TicketType {
			t.Errorf("ticket %d is %s, its line %s", tk.ID, tk.TicketType, line.TicketType)
		}
	}
	total := seatflow.SalesReport{}
	for _, s := range shows {
		r := e.bruteForce(t, s.id)
		total.Sold, total.CheckedIn, total.RefundedCents = total.Sold+r.Sold, total.CheckedIn+r.CheckedIn, total.RefundedCents+r.RefundedCents
	}
	t.Logf("at the end: %d sold, %d checked in, %d cents refunded", total.Sold, total.CheckedIn, total.RefundedCents)
	// The sequence made every kind of order the report tells apart.
	for _, st := range []seatflow.OrderStatus{seatflow.OrderPaid, seatflow.OrderCancelled, seatflow.OrderExpired} {
		if n := e.db.Order.Query().Where(order.StatusEQ(st)).CountX(ctx); n == 0 {
			t.Logf("no %s order in this sequence", st)
		}
	}
	if n := e.db.Refund.Query().Where(refund.Whole(true)).CountX(ctx); n == 0 {
		t.Logf("no refund in this sequence")
	}
}

// TestReportInput refuses an unknown showtime, a range backwards or over 366 days, and an
// unknown cinema; a range of one day is fine.
func TestReportInput(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	_, err := e.rep.ShowtimeSales(ctx, 999999)
	if seatflow.ErrorCode(err) != seatflow.ENOTFOUND {
		t.Errorf("unknown showtime: %v, want NOT_FOUND", err)
	}
	for _, r := range [][2]string{{"2026-12-02", "2026-12-01"}, {"2026-01-01", "2027-01-02"}, {"2026-12-01", "tomorrow"}} {
		if _, err := e.rep.SalesReport(ctx, nil, r[0], r[1]); seatflow.ErrorCode(err) != seatflow.EINVALID {
			t.Errorf("range %v: %v, want BAD_USER_INPUT", r, err)
		}
	}
	if _, err := e.rep.SalesReport(ctx, nil, "2026-01-01", "2027-01-01"); err != nil {
		t.Errorf("366 days: %v", err)
	}
	unknown := 999999
	if _, err := e.rep.SalesReport(ctx, &unknown, "2026-12-01", "2026-12-01"); seatflow.ErrorCode(err) != seatflow.ENOTFOUND {
		t.Errorf("unknown cinema: %v, want NOT_FOUND", err)
	}
	list, err := e.rep.SalesReport(ctx, nil, "2026-12-01", "2026-12-01")
	if err != nil || len(list) != 0 {
		t.Errorf("an empty day: %v, %v", list, err)
	}
}

// TestReportOfAMixedShowtime checks the numbers of one showtime by hand: an adult and a
// child seat paid, a senior seat held, a child seat paid then refunded, a hold expired.
// salesReport over its days costs two statements, however many showtimes it lists.
func TestReportOfAMixedShowtime(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	showID, ids := e.showtime(t, 3*time.Hour, 2, 5) // A1..A5 PREMIUM, B1..B5 STANDARD
	e.showtime(t, 4*time.Hour, 1, 3)
	hold := func(user string, in ...booking.SeatTicketInput) *seatflow.Order {
		t.Helper()
		o, err := e.svc.HoldSeats(ctx, user, booking.HoldSeatsInput{ShowtimeID: showID, Seats: in, IdempotencyKey: fmt.Sprint(in)})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	pay := func(o *seatflow.Order) {
		t.Helper()
		if _, err := e.svc.PayOrder(ctx, o.UserID, o.ID, fmt.Sprint("pay", o.ID)); err != nil {
			t.Fatal(err)
		}
	}
	a1, b1, b2, b3, b4 := ids[0], ids[5], ids[6], ids[7], ids[8]
	hold("u4", booking.SeatTicketInput{SeatID: b4, TicketType: seatflow.TicketStudent})
	e.clock.Advance(16 * time.Minute)
	if _, err := e.svc.ExpireDue(ctx); err != nil {
		t.Fatal(err)
	}
	pay(hold("u1", booking.SeatTicketInput{SeatID: a1, TicketType: seatflow.TicketAdult},
		booking.SeatTicketInput{SeatID: b1, TicketType: seatflow.TicketChild}))
	hold("u2", booking.SeatTicketInput{SeatID: b2, TicketType: seatflow.TicketSenior})
	refunded := hold("u3", booking.SeatTicketInput{SeatID: b3, TicketType: seatflow.TicketChild})
	pay(refunded)
	if _, err := e.svc.RefundOrder(ctx, refunded.ID); err != nil {
		t.Fatal(err)
	}
	// A house seat is neither available nor sold; a block refused (b1 is sold) counts nothing.
	if _, refused, err := e.sales.BlockSeats(ctx, "admin", showID, []int{ids[9], b1}, "press"); err != nil || refused == nil {
		t.Fatalf("block = %v, %v; want b1 refused", refused, err)
	}
	want := seatflow.SalesReport{Sold: 2, Held: 1, Available: 6, Blocked: 1, RevenueCents: 2100, RefundedCents: 600,
		ByTicketType: []seatflow.TicketTypeSales{{TicketType: seatflow.TicketAdult, Count: 1, AmountCents: 1500},
			{TicketType: seatflow.TicketChild, Count: 1, AmountCents: 600}, {TicketType: seatflow.TicketSenior},
			{TicketType: seatflow.TicketStudent}}}
	got, err := e.rep.ShowtimeSales(ctx, showID)
	if err != nil {
		t.Fatal(err)
	}
	if !sameReport(*got, want) {
		t.Errorf("report %+v\nwant   %+v", *got, want)
	}
	day := e.clock.Now().Format(time.DateOnly)
	e.sql.Queries.Reset()
	list, err := e.rep.SalesReport(ctx, nil, day, day)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.sql.Queries.Count(); n != 2 {
		t.Errorf("salesReport of %d showtimes ran %d statements, want 2 (the showtimes, the report)", len(list), n)
	}
	if len(list) != 2 || list[0].ShowtimeID != showID || !sameReport(*list[0].Sales, want) {
		t.Errorf("salesReport = %+v", list)
	}
}

// TestReportOnSQLite runs the report's statement on the embedded SQLite: a paid order of
// two lines, a held one and an expired hold.
func TestReportOnSQLite(t *testing.T) {
	ctx := context.Background()
	client, db, err := database.OpenSQLite(filepath.Join(t.TempDir(), "seatflow.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	if err := database.Migrate(ctx, client, db); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC)
	showID, hallID := testenv.Showtime(t, client, now, testenv.ShowtimeSpec{Rows: 1, PerRow: 6})
	seatIDs := client.Seat.Query().Where(seat.HallID(hallID)).Order(ent.Asc(seat.FieldID)).IDsX(ctx)
	add := func(status seatflow.OrderStatus, expires time.Time, lines ...seatflow.OrderLine) {
		o := client.Order.Create().SetUserID("u").SetShowtimeID(showID).SetHoldToken(fmt.Sprint("t", lines[0].SeatID)).
			SetIdempotencyKey(fmt.Sprint("k", lines[0].SeatID)).SetStatus(status).SetAmountCents(0).SetPaymentRef("p").
			SetExpiresAt(expires).SetCreatedAt(now).SaveX(ctx)
		for _, l := range lines {
			client.OrderSeat.Create().SetOrderID(o.ID).SetSeatID(l.SeatID).SetTicketType(l.TicketType).SetAmountCents(l.AmountCents).ExecX(ctx)
		}
		if status == seatflow.OrderPaid {
			client.Payment.Create().SetOrderID(o.ID).SetProvider("test").SetReference("p").SetStatus(seatflow.PaymentSucceeded).
				SetAmountCents(1600).SetCurrency("EUR").SetCreatedAt(now).SetUpdatedAt(now).ExecX(ctx)
		}
	}
	add(seatflow.OrderPaid, now, seatflow.OrderLine{SeatID: seatIDs[0], TicketType: seatflow.TicketAdult, AmountCents: 1000},
		seatflow.OrderLine{SeatID: seatIDs[1], TicketType: seatflow.TicketChild, AmountCents: 600})
	add(seatflow.OrderPending, now.Add(time.Minute), seatflow.OrderLine{SeatID: seatIDs[2], TicketType: seatflow.TicketAdult, AmountCents: 1000})
	add(seatflow.OrderPending, now.Add(-time.Minute), seatflow.OrderLine{SeatID: seatIDs[3], TicketType: seatflow.TicketAdult, AmountCents: 1000})
	rep := &reports.Service{DB: client, Now: func() time.Time { return now }}
	got, err := rep.ShowtimeSales(ctx, showID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Sold != 2 || got.Held != 1 || got.Available != 3 || got.RevenueCents != 1600 ||
		got.ByTicketType[0].Count != 1 || got.ByTicketType[1].AmountCents != 600 {
		t.Errorf("report on SQLite = %+v", *got)
	}
}
