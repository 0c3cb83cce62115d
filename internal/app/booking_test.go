package app

import (
	"fmt"
	"testing"
	"time"

	"seatflow/internal/nodeid"
)

// onSaleShowtime creates a movie, a 3×8 hall (row B premium) and a showtime tomorrow, and
// opens its sale. It returns the showtime id and the hall's seat ids in row order.
func (a *testApp) onSaleShowtime() (string, []string) {
	a.t.Helper()
	hall := a.createHall("Hall 1", 3, 8)
	show := a.createShowtime(a.createMovie("Dune", 155), hall, testNow.Add(30*time.Hour))
	return show, a.openSales(show)
}

// openSales opens the showtime's sale and returns its hall's seat ids in row order.
func (a *testApp) openSales(show string) []string {
	a.t.Helper()
	a.must(a.admin, `mutation($id: ID!) { openSales(showtimeId: $id) { status } }`, map[string]any{"id": show}, nil)
	var out struct {
		Showtime struct {
			Hall struct{ Seats []struct{ ID string } }
		}
	}
	a.must("", `query($id: ID!) { showtime(id: $id) { hall { seats { id } } } }`, map[string]any{"id": show}, &out)
	var ids []string
	for _, s := range out.Showtime.Hall.Seats {
		ids = append(ids, s.ID)
	}
	return ids
}

const holdQ = `mutation($in: HoldSeatsInput!) { holdSeats(input: $in) { id status amountCents currency expiresAt seats { id row number } showtime { id } } }`

type orderOut struct {
	ID, Status, Currency, ExpiresAt string
	AmountCents                     int
	RefundRequired                  bool
	Seats                           []struct{ ID, Row string }
}

func (a *testApp) hold(token, show string, seats []string, key string) orderOut {
	a.t.Helper()
	var out struct{ HoldSeats orderOut }
	a.must(token, holdQ, holdVars(show, seats, key), &out)
	return out.HoldSeats
}

func holdVars(show string, seats []string, key string) map[string]any {
	return map[string]any{"in": map[string]any{"showtimeId": show, "seatIds": seats, "idempotencyKey": key}}
}

// seatStatuses returns seat id → status from the seatMap query.
func (a *testApp) seatStatuses(show string) (map[string]string, int) {
	a.t.Helper()
	var out struct {
		SeatMap struct {
			Available, Version int
			Seats              []struct {
				Seat   struct{ ID string }
				Status string
			}
		}
	}
	a.must("", `query($id: ID!) { seatMap(showtimeId: $id) { version available seats { seat { id } status } } }`, map[string]any{"id": show}, &out)
	m := map[string]string{}
	for _, s := range out.SeatMap.Seats {
		m[s.Seat.ID] = s.Status
	}
	return m, out.SeatMap.Available
}

func TestOrderFlowThroughAPI(t *testing.T) {
	a := newTestApp(t)
	alice, bob := a.token("alice", "customer"), a.token("bob", "customer")
	show, seats := a.onSaleShowtime()

	// Seats 8 and 9 are A8 (standard) and B1 (premium): 1000 + 1500.
	o := a.hold(alice, show, []string{seats[6], seats[7]}, "k1")
	if o.Status != "PENDING_PAYMENT" || o.AmountCents != 2000 || o.Currency != "USD" || len(o.Seats) != 2 {
		t.Fatalf("order = %+v", o)
	}
	if exp, _ := time.Parse(time.RFC3339, o.ExpiresAt); !exp.Equal(testNow.Add(15 * time.Minute)) {
		t.Fatalf("expiresAt = %s, want now + 15m", o.ExpiresAt)
	}
	premium := a.hold(alice, show, []string{seats[8], seats[9]}, "k-premium")
	if premium.AmountCents != 3000 {
		t.Fatalf("two premium seats cost %d, want 3000", premium.AmountCents)
	}
	st, avail := a.seatStatuses(show)
	if st[seats[6]] != "HELD" || st[seats[0]] != "AVAILABLE" || avail != 20 {
		t.Fatalf("seat map after hold: %v available %d", st, avail)
	}

	t.Run("SameKeySameOrder", func(t *testing.T) {
		if again := a.hold(alice, show, []string{seats[6], seats[7]}, "k1"); again.ID != o.ID {
			t.Fatalf("repeat gave order %s, want %s", again.ID, o.ID)
		}
	})
	t.Run("TakenSeatsListed", func(t *testing.T) {
		r := a.wantCode(bob, holdQ, holdVars(show, []string{seats[5], seats[6]}, "b1"), "SEATS_UNAVAILABLE")
		ids, _ := r.Errors[0].Extensions["seatIds"].([]any)
		if len(ids) != 1 || ids[0] != seats[6] {
			t.Fatalf("seatIds = %v, want [%s]", r.Errors[0].Extensions["seatIds"], seats[6])
		}
	})
	t.Run("OtherUsersOrderIsNotFound", func(t *testing.T) {
		for _, q := range []string{
			`query($id: ID!) { order(id: $id) { id } }`,
			`mutation($id: ID!) { payOrder(orderId: $id, paymentRef: "x") { id } }`,
			`mutation($id: ID!) { cancelOrder(orderId: $id) { id } }`,
			`mutation($id: ID!) { extendHold(orderId: $id) { id } }`,
		} {
			a.wantCode(bob, q, map[string]any{"id": o.ID}, "NOT_FOUND")
		}
	})
	t.Run("Pay", func(t *testing.T) {
		var out struct {
			PayOrder struct{ Status, PaidAt string }
		}
		a.must(alice, `mutation($id: ID!) { payOrder(orderId: $id, paymentRef: "pay-1") { status paidAt } }`, map[string]any{"id": o.ID}, &out)
		if out.PayOrder.Status != "PAID" || out.PayOrder.PaidAt == "" {
			t.Fatalf("paid = %+v", out.PayOrder)
		}
		if st, _ := a.seatStatuses(show); st[seats[6]] != "SOLD" || st[seats[7]] != "SOLD" {
			t.Fatalf("after pay: %s %s", st[seats[6]], st[seats[7]])
		}
		a.wantCode(alice, `mutation($id: ID!) { cancelOrder(orderId: $id) { id } }`, map[string]any{"id": o.ID}, "INVALID_STATE")
	})
	t.Run("Cancel", func(t *testing.T) {
		var out struct{ CancelOrder struct{ Status string } }
		a.must(alice, `mutation($id: ID!) { cancelOrder(orderId: $id) { status } }`, map[string]any{"id": premium.ID}, &out)
		if out.CancelOrder.Status != "CANCELLED" {
			t.Fatalf("status = %s", out.CancelOrder.Status)
		}
		if st, _ := a.seatStatuses(show); st[seats[8]] != "AVAILABLE" {
			t.Fatalf("cancelled seat is %s", st[seats[8]])
		}
	})
	t.Run("MyOrders", func(t *testing.T) {
		var out struct{ MyOrders []struct{ ID, Status string } }
		a.must(alice, `{ myOrders { id status } }`, nil, &out)
		if len(out.MyOrders) != 2 {
			t.Fatalf("alice's orders = %+v", out.MyOrders)
		}
		a.must(bob, `{ myOrders { id status } }`, nil, &out)
		if len(out.MyOrders) != 0 {
			t.Fatalf("bob sees %+v", out.MyOrders)
		}
	})
	t.Run("Errors", func(t *testing.T) {
		a.wantCode("", holdQ, holdVars(show, seats[:1], "x"), "UNAUTHENTICATED")
		a.wantCode(bob, holdQ, holdVars(show, []string{}, "x"), "BAD_USER_INPUT")
		a.wantCode(bob, holdQ, holdVars(show, seats[:11], "x"), "BAD_USER_INPUT")
		a.wantCode(bob, holdQ, holdVars(show, []string{seats[0], seats[0]}, "x"), "BAD_USER_INPUT")
		a.wantCode(bob, holdQ, holdVars(show, []string{nodeid.Encode(nodeid.Seat, 99999999)}, "x"), "BAD_USER_INPUT")
		a.wantCode(bob, holdQ, holdVars(show, []string{"99999999"}, "x"), "BAD_USER_INPUT")
		a.wantCode(bob, holdQ, holdVars(nodeid.Encode(nodeid.Showtime, 99999999), seats[:1], "x"), "NOT_FOUND")
		a.wantCode(bob, holdQ, holdVars(show, []string{show}, "x"), "NOT_FOUND") // a showtime's id as a seat
		a.wantCode(bob, holdQ, holdVars(show, []string{seats[1]}, "gap"), "SEAT_GAP")
		a.wantCode(bob, holdQ, holdVars(show, seats[16:23], "limit"), "PURCHASE_LIMIT_EXCEEDED")
		a.wantCode(bob, `query($id: ID!) { bestSeats(showtimeId: $id, count: 0) { id } }`, map[string]any{"id": show}, "BAD_USER_INPUT")
	})
	t.Run("NotOnSale", func(t *testing.T) {
		a.must(a.admin, `mutation($id: ID!) { closeSales(showtimeId: $id) { status } }`, map[string]any{"id": show}, nil)
		a.wantCode(bob, holdQ, holdVars(show, seats[16:18], "closed"), "NOT_ON_SALE")
		a.wantCode(a.admin, `mutation($id: ID!) { closeSales(showtimeId: $id) { status } }`, map[string]any{"id": show}, "INVALID_STATE")
		a.must(a.admin, `mutation($id: ID!) { openSales(showtimeId: $id) { status } }`, map[string]any{"id": show}, nil)
		if st, _ := a.seatStatuses(show); st[seats[6]] != "SOLD" {
			t.Fatalf("re-opening lost a sold seat: %s", st[seats[6]])
		}
		a.hold(bob, show, seats[16:18], "reopened")
	})
	t.Run("BestSeats", func(t *testing.T) {
		var out struct {
			BestSeats []struct {
				Row    string
				Number int
			}
		}
		a.must("", `query($id: ID!) { bestSeats(showtimeId: $id, count: 2) { row number } }`, map[string]any{"id": show}, &out)
		if len(out.BestSeats) != 2 || out.BestSeats[0].Row != "B" {
			t.Fatalf("best seats = %+v, want two adjacent seats in the middle row B", out.BestSeats)
		}
	})
}

func TestHoldNeedsOpenSale(t *testing.T) {
	a := newTestApp(t)
	hall := a.createHall("Hall 1", 1, 5)
	show := a.createShowtime(a.createMovie("X", 90), hall, testNow.Add(30*time.Hour))
	var out struct {
		Showtime struct {
			Hall struct{ Seats []struct{ ID string } }
		}
	}
	a.must("", `query($id: ID!) { showtime(id: $id) { hall { seats { id } } } }`, map[string]any{"id": show}, &out)
	a.wantCode(a.token("c", "customer"), holdQ, holdVars(show, []string{out.Showtime.Hall.Seats[0].ID}, "k"), "NOT_ON_SALE")
	a.wantCode(a.token("c", "customer"), `mutation($id: ID!) { openSales(showtimeId: $id) { id } }`, map[string]any{"id": show}, "FORBIDDEN")
}

// TestCacheForkedFromDatabase is seed 001's way to test a cache: fork it from the database
// and watch which writes reach readers.
func TestCacheForkedFromDatabase(t *testing.T) {
	a := newTestApp(t)
	movie := a.createMovie("Original", 100)
	read := func() string {
		var out struct{ Movie struct{ Title string } }
		a.must("", `query($id: ID!) { movie(id: $id) { title } }`, map[string]any{"id": movie}, &out)
		return out.Movie.Title
	}
	read() // warm both levels
	id := idOf(t, movie)

	t.Run("ChangeBehindTheCacheIsNotSeen", func(t *testing.T) {
		if _, err := a.SQL.Exec("UPDATE movies SET title = 'Behind' WHERE id = ?", id); err != nil {
			t.Fatal(err)
		}
		if got := read(); got != "Original" {
			t.Fatalf("title = %q, want the cached %q", got, "Original")
		}
	})
	t.Run("UpdateThroughTheAPIIsSeen", func(t *testing.T) {
		a.must(a.admin, `mutation($id: ID!) { updateMovie(id: $id, input: {title: "Updated", durationMinutes: 100}) { id } }`, map[string]any{"id": movie}, nil)
		if got := read(); got != "Updated" {
			t.Fatalf("title = %q, want %q", got, "Updated")
		}
	})
	t.Run("LogicallyExpiredEnvelopeIsRebuilt", func(t *testing.T) {
		if _, err := a.SQL.Exec("UPDATE movies SET title = 'FromDatabase' WHERE id = ?", id); err != nil {
			t.Fatal(err)
		}
		old := fmt.Sprintf(`{"expireAt":%d,"data":{"id":%d,"title":"Updated","durationMinutes":100,"genres":[],"status":"LISTED"}}`,
			testNow.Add(-time.Minute).UnixMilli(), id)
		if err := a.Redis.Set(t.Context(), a.Keys.Cache(fmt.Sprint("movie:", id)), old, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		a.clock.Advance(61 * time.Second) // past the local level's 60 s
		if got := read(); got != "FromDatabase" {
			t.Fatalf("title = %q, want the database's %q", got, "FromDatabase")
		}
	})
	t.Run("OpenSaleIsSeenAtOnce", func(t *testing.T) {
		hall := a.createHall("H", 1, 4)
		show := a.createShowtime(movie, hall, testNow.Add(48*time.Hour))
		status := func() string {
			var out struct{ Showtime struct{ Status string } }
			a.must("", `query($id: ID!) { showtime(id: $id) { status } }`, map[string]any{"id": show}, &out)
			return out.Showtime.Status
		}
		if s := status(); s != "SCHEDULED" {
			t.Fatalf("status = %s", s)
		}
		a.must(a.admin, `mutation($id: ID!) { openSales(showtimeId: $id) { id } }`, map[string]any{"id": show}, nil)
		if s := status(); s != "ON_SALE" {
			t.Fatalf("status right after openSales = %s, want ON_SALE", s)
		}
	})
}
