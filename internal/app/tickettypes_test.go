package app

import (
	"slices"
	"testing"
	"time"
)

// typedPrices are ADULT prices for every kind, and CHILD and SENIOR prices for STANDARD.
var typedPrices = []map[string]any{
	{"kind": "STANDARD", "amountCents": 1000}, {"kind": "PREMIUM", "amountCents": 1500, "ticketType": "ADULT"},
	{"kind": "ACCESSIBLE", "amountCents": 800}, {"kind": "STANDARD", "ticketType": "CHILD", "amountCents": 600},
	{"kind": "STANDARD", "ticketType": "SENIOR", "amountCents": 700},
}

// TestTicketTypesThroughTheAPI: a showtime priced per (kind, ticket type) lists its
// prices with their types; a hold of typed seats is priced per seat and lists its lines;
// its tickets carry the types; seatIds and seats together, an unpriced combination and a
// price given twice are BAD_USER_INPUT.
func TestTicketTypesThroughTheAPI(t *testing.T) {
	a := newTestApp(t)
	hall := a.createHall("Hall 1", 3, 8) // row B PREMIUM
	movie := a.createMovie("Paddington", 100)
	starts := testNow.Add(30 * time.Hour).Format(time.RFC3339)
	twice := append(slices.Clone(typedPrices), map[string]any{"kind": "STANDARD", "ticketType": "CHILD", "amountCents": 500})
	a.wantCode(a.admin, createShowtimeQ, map[string]any{"in": map[string]any{"movieId": movie, "hallId": hall,
		"startsAt": starts, "prices": twice}}, "BAD_USER_INPUT")
	var created struct{ CreateShowtime struct{ ID string } }
	a.must(a.admin, createShowtimeQ, map[string]any{"in": map[string]any{"movieId": movie, "hallId": hall,
		"startsAt": starts, "prices": typedPrices}}, &created)
	show := created.CreateShowtime.ID
	seats := a.openSales(show) // A1..A8 STANDARD, B1..B8 PREMIUM, C1..C8 STANDARD

	var prices struct {
		Showtime struct {
			Prices []struct {
				Kind, TicketType string
				AmountCents      int
			}
		}
	}
	a.must("", `query($id: ID!) { showtime(id: $id) { prices { kind ticketType amountCents } } }`, map[string]any{"id": show}, &prices)
	if got := len(prices.Showtime.Prices); got != 5 || prices.Showtime.Prices[0].TicketType != "ADULT" || prices.Showtime.Prices[1].TicketType != "CHILD" {
		t.Errorf("prices = %+v", prices.Showtime.Prices)
	}

	alice := a.token("alice", "customer")
	const q = `mutation($in: HoldSeatsInput!) { holdSeats(input: $in) { id amountCents seats { id }
		lines { seat { id row number } ticketType amountCents } } }`
	in := func(key string, seatIDs []string, typed ...[2]string) map[string]any {
		m := map[string]any{"showtimeId": show, "idempotencyKey": key}
		if seatIDs != nil {
			m["seatIds"] = seatIDs
		}
		if typed != nil {
			var l []map[string]any
			for _, s := range typed {
				l = append(l, map[string]any{"seatId": s[0], "ticketType": s[1]})
			}
			m["seats"] = l
		}
		return map[string]any{"in": m}
	}
	a.wantCode(alice, q, in("both", []string{seats[0]}, [2]string{seats[1], "CHILD"}), "BAD_USER_INPUT")
	a.wantCode(alice, q, in("neither", nil), "BAD_USER_INPUT")
	a.wantCode(alice, q, in("unpriced", nil, [2]string{seats[8], "CHILD"}), "BAD_USER_INPUT") // B1 PREMIUM has no CHILD price

	var held struct {
		HoldSeats struct {
			ID          string
			AmountCents int
			Lines       []struct {
				Seat        struct{ ID, Row string }
				TicketType  string
				AmountCents int
			}
		}
	}
	a.must(alice, q, in("mixed", nil, [2]string{seats[2], "SENIOR"}, [2]string{seats[0], "CHILD"},
		[2]string{seats[8], "ADULT"}, [2]string{seats[1], "ADULT"}), &held)
	o := held.HoldSeats
	if o.AmountCents != 600+1000+700+1500 || len(o.Lines) != 4 {
		t.Fatalf("held %+v", o)
	}
	wantTypes := []string{"CHILD", "ADULT", "SENIOR", "ADULT"} // in seat order: A1, A2, A3, B1
	wantAmounts := []int{600, 1000, 700, 1500}
	for i, l := range o.Lines {
		if l.TicketType != wantTypes[i] || l.AmountCents != wantAmounts[i] || l.Seat.ID != seats[[]int{0, 1, 2, 8}[i]] {
			t.Errorf("line %d = %+v, want %s %d", i, l, wantTypes[i], wantAmounts[i])
		}
	}
	a.must(alice, `mutation($id: ID!) { payOrder(orderId: $id, paymentRef: "p1") { id } }`, map[string]any{"id": o.ID}, nil)
	var tickets struct {
		Order struct {
			Tickets []struct {
				TicketType string
				Seat       struct{ ID string }
			}
		}
	}
	a.must(alice, `query($id: ID!) { order(id: $id) { tickets { ticketType seat { id } } } }`, map[string]any{"id": o.ID}, &tickets)
	if len(tickets.Order.Tickets) != 4 {
		t.Fatalf("tickets %+v", tickets)
	}
	for i, tk := range tickets.Order.Tickets {
		if tk.TicketType != wantTypes[i] {
			t.Errorf("ticket %d (%s) is %s, want %s", i, tk.Seat.ID, tk.TicketType, wantTypes[i])
		}
	}
}

// TestSalesReportsAreForAdmins: a customer and staff get FORBIDDEN, a guest
// UNAUTHENTICATED or FORBIDDEN; an admin reads a showtime's report and a range's, and a
// range beyond 366 days is BAD_USER_INPUT.
func TestSalesReportsAreForAdmins(t *testing.T) {
	a := newTestApp(t)
	show, seats := a.onSaleShowtime()
	alice := a.token("alice", "customer")
	o := a.hold(alice, show, seats[:2], "k1")
	a.must(alice, `mutation($id: ID!) { payOrder(orderId: $id, paymentRef: "p1") { id } }`, map[string]any{"id": o.ID}, nil)

	const one = `query($id: ID!) { showtimeSales(showtimeId: $id) { sold held available revenueCents refundedCents checkedIn
		byTicketType { ticketType count amountCents } } }`
	const rangeQ = `query($from: Date!, $to: Date!) { salesReport(from: $from, to: $to) { showtime { id } sales { sold revenueCents } } }`
	day := testNow.Add(30 * time.Hour).Format(time.DateOnly)
	for _, tok := range []string{alice, a.token("door-1", "staff")} {
		a.wantCode(tok, one, map[string]any{"id": show}, "FORBIDDEN")
		a.wantCode(tok, rangeQ, map[string]any{"from": day, "to": day}, "FORBIDDEN")
	}
	if r := a.do("", one, map[string]any{"id": show}); r.Code() != "UNAUTHENTICATED" && r.Code() != "FORBIDDEN" {
		t.Errorf("anonymous: %+v", r.Errors)
	}

	var got struct {
		ShowtimeSales struct {
			Sold, Held, Available, RevenueCents, RefundedCents, CheckedIn int
			ByTicketType                                                  []struct {
				TicketType  string
				Count       int
				AmountCents int
			}
		}
	}
	a.must(a.admin, one, map[string]any{"id": show}, &got)
	r := got.ShowtimeSales
	if r.Sold != 2 || r.Held != 0 || r.Available != 22 || r.RevenueCents != 2000 || r.RefundedCents != 0 ||
		len(r.ByTicketType) != 4 || r.ByTicketType[0].TicketType != "ADULT" || r.ByTicketType[0].Count != 2 {
		t.Errorf("showtimeSales = %+v", r)
	}
	var list struct {
		SalesReport []struct {
			Showtime struct{ ID string }
			Sales    struct{ Sold, RevenueCents int }
		}
	}
	a.must(a.admin, rangeQ, map[string]any{"from": day, "to": day}, &list)
	if len(list.SalesReport) != 1 || list.SalesReport[0].Showtime.ID != show || list.SalesReport[0].Sales.Sold != 2 {
		t.Errorf("salesReport = %+v", list)
	}
	a.wantCode(a.admin, rangeQ, map[string]any{"from": "2030-01-01", "to": "2031-01-02"}, "BAD_USER_INPUT")
}

// TestSalesReportCountsCinemaDays: two cinemas 14 hours apart show a film at the same
// instant, on different local days; salesReport lists each showtime on its own cinema's
// day, with and without cinemaId, and a cancelled showtime too (its refunds are sales news).
func TestSalesReportCountsCinemaDays(t *testing.T) {
	a := newTestApp(t)
	akl, la := a.createCinema("Harbour", "Pacific/Auckland"), a.createCinema("Boulevard", "America/Los_Angeles")
	hAKL, hLA := a.createHallIn(akl, "Harbour 1", 10), a.createHallIn(la, "Boulevard 1", 10)
	movie := a.createMovie("Two Zones", 90)
	instant := time.Date(2030, 3, 21, 12, 0, 0, 0, time.UTC) // Auckland 22 Mar 01:00, Los Angeles 21 Mar 05:00
	sAKL, sLA := a.createShowtime(movie, hAKL, instant), a.createShowtime(movie, hLA, instant)
	a.must(a.admin, `mutation($id: ID!) { cancelShowtime(id: $id) { id } }`, map[string]any{"id": sLA}, nil)

	list := func(from, to, cinema string) []string {
		t.Helper()
		vars := map[string]any{"from": from, "to": to}
		q := `query($from: Date!, $to: Date!) { salesReport(from: $from, to: $to) { showtime { id } sales { available } } }`
		if cinema != "" {
			vars["c"] = cinema
			q = `query($from: Date!, $to: Date!, $c: ID) { salesReport(cinemaId: $c, from: $from, to: $to) { showtime { id } sales { available } } }`
		}
		var out struct {
			SalesReport []struct {
				Showtime struct{ ID string }
				Sales    struct{ Available int }
			}
		}
		a.must(a.admin, q, vars, &out)
		ids := []string{}
		for _, l := range out.SalesReport {
			ids = append(ids, l.Showtime.ID)
			if l.Sales.Available != 10 {
				t.Errorf("showtime %s: %d available, want 10", l.Showtime.ID, l.Sales.Available)
			}
		}
		return ids
	}
	for _, c := range []struct {
		from, to, cinema string
		want             []string
	}{
		{"2030-03-21", "2030-03-21", "", []string{sLA}},
		{"2030-03-22", "2030-03-22", "", []string{sAKL}},
		{"2030-03-21", "2030-03-22", "", []string{sAKL, sLA}}, // by start, then id
		{"2030-03-21", "2030-03-22", akl, []string{sAKL}},
		{"2030-03-21", "2030-03-21", akl, []string{}},
		{"2030-03-20", "2030-03-20", "", []string{}},
	} {
		if got := list(c.from, c.to, c.cinema); !slices.Equal(got, c.want) {
			t.Errorf("salesReport(%s..%s, cinema %q) = %v, want %v", c.from, c.to, c.cinema, got, c.want)
		}
	}
}
