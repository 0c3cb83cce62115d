package app

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/gorilla/websocket"

	"seatflow/ent/order"
)

// Finding: a token subject "alice " read alice's orders (MySQL pads trailing spaces) while
// Redis counted it apart; a subject over 191 bytes signed in, then holdSeats failed INTERNAL.
func TestAbuseSubjectAliasing(t *testing.T) {
	a := newTestApp(t)
	show, seats := a.onSaleShowtime()
	alice := a.token("alice", "customer")
	a.hold(alice, show, seats[:1], "k")
	sign := func(sub string) string {
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": sub, "role": "customer",
			"exp": time.Now().Add(time.Hour).Unix()}).SignedString([]byte("test-secret-0123456789")) // the authenticator reads the real clock
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	for _, sub := range []string{"alice ", " alice", "alice\t", "ali\x00ce", strings.Repeat("a", 192)} {
		r := a.wantCode(sign(sub), `{ myOrders { id } }`, nil, "UNAUTHENTICATED")
		if !strings.Contains(r.Errors[0].Message, "not a valid user id") {
			t.Fatalf("subject %q: message %q does not say what is wrong", sub, r.Errors[0].Message)
		}
		a.wantCode(sign(sub), holdQ, holdVars(show, seats[1:2], "x"), "UNAUTHENTICATED")
	}
	var out struct{ MyOrders []struct{ ID string } }
	a.must(sign(strings.Repeat("a", 191)), `{ myOrders { id } }`, nil, &out) // the longest id is fine
}

// Finding: hold 6 (the limit), let it expire, hold 6 more, pay both late: 12 seats PAID,
// and neither verify nor the reconciler noticed.
func TestAbusePurchaseLimitOnLatePayment(t *testing.T) {
	a := newTestApp(t)
	show, seats := a.onSaleShowtime() // purchase limit 6
	alice := a.token("alice", "customer")
	payQ := `mutation($id: ID!) { payOrder(orderId: $id, paymentRef: "ref") { status } }`
	first := a.hold(alice, show, seats[:6], "first")
	a.clock.Advance(16 * time.Minute)
	a.waitExpired(alice, first.ID, show, seats[0])
	second := a.hold(alice, show, seats[6:12], "second")

	r := a.wantCode(alice, payQ, map[string]any{"id": first.ID}, "ORDER_EXPIRED")
	if !strings.Contains(r.Errors[0].Message, "purchase limit") {
		t.Fatalf("late payment over the limit: %q, want it to name the purchase limit", r.Errors[0].Message)
	}
	if st := a.orderState(alice, first.ID); st.Status != "EXPIRED" || !st.RefundRequired || st.refund() != "SUCCEEDED" {
		t.Fatalf("first order %+v: want EXPIRED with its payment refunded", st)
	}
	a.must(alice, payQ, map[string]any{"id": second.ID}, nil)
	m, _ := a.seatStatuses(show)
	for i, s := range seats[:12] {
		if want := map[bool]string{true: "AVAILABLE", false: "SOLD"}[i < 6]; m[s] != want {
			t.Fatalf("seat %d is %s, want %s", i, m[s], want)
		}
	}
	if vs, err := verifyViolations(a); err != nil || len(vs) > 0 {
		t.Fatalf("verify: %v %v", vs, err)
	}

	t.Run("OnlyJustExpired", func(t *testing.T) {
		bob := a.token("bob", "customer")
		o := a.hold(bob, show, seats[12:13], "late")
		a.clock.Advance(16 * time.Minute)
		a.waitExpired(bob, o.ID, show, seats[12])
		a.clock.Advance(31 * time.Minute) // past the 30-minute late window; the seat is still free
		r := a.wantCode(bob, payQ, map[string]any{"id": o.ID}, "ORDER_EXPIRED")
		if !strings.Contains(r.Errors[0].Message, "too long ago") {
			t.Fatalf("payment after the window: %q", r.Errors[0].Message)
		}
		if m, _ := a.seatStatuses(show); m[seats[12]] != "AVAILABLE" {
			t.Fatalf("seat = %s after a refused late payment", m[seats[12]])
		}
	})
	t.Run("VerifyAndReconcilerReportUsersOverLimit", func(t *testing.T) {
		// An operator moves carol's paid order to alice by hand: alice has 12 paid seats.
		carol := a.token("carol", "customer")
		c := a.hold(carol, show, seats[14:20], "carol")
		a.must(carol, payQ, map[string]any{"id": c.ID}, nil)
		ctx := context.Background()
		if err := a.DB.Order.UpdateOneID(idOf(t, c.ID)).SetUserID("alice").Exec(ctx); err != nil {
			t.Fatal(err)
		}
		vs, err := verifyViolations(a)
		if err != nil || !strings.Contains(strings.Join(vs, "\n"), `user "alice" has 12 active seats, over the purchase limit of 6`) {
			t.Fatalf("verify: %v %v", vs, err)
		}
		rep, err := a.Rec.RunOnce(ctx)
		if err != nil || rep.UsersOverLimit != 1 {
			t.Fatalf("reconcile: %+v %v, want usersOverLimit 1", rep, err)
		}
		if n, _ := a.DB.Order.Query().Where(order.UserID("alice"), order.StatusEQ("PAID")).Count(ctx); n != 2 {
			t.Fatalf("the reconciler changed alice's orders: %d paid", n)
		}
	})
}

// Finding: a websocket outlived its token: a holdSeats sent 25 s after the token expired
// created an order.
func TestAbuseSocketOutlivesToken(t *testing.T) {
	a := newTestApp(t)
	show, seats := a.onSaleShowtime()
	tok, err := a.Auth.Issue("alice", "customer", 2*time.Second) // tokens expire on the wall clock
	if err != nil {
		t.Fatal(err)
	}
	c := dialWS(t, a, "graphql-transport-ws", tok)
	c.subscribe(show)
	if ev := c.event(); ev.Kind != "SNAPSHOT" {
		t.Fatalf("first event %s", ev.Kind)
	}
	time.Sleep(2500 * time.Millisecond)
	// Whichever comes first, the server's expiry tick or this mutation: the socket closes
	// with 4403 and nothing is held.
	_ = c.conn.WriteJSON(map[string]any{"id": "2", "type": "subscribe", "payload": map[string]any{
		"query": holdQ, "variables": holdVars(show, seats[:1], "late-socket")}})
	c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		var m map[string]any
		if err = c.conn.ReadJSON(&m); err != nil {
			break
		}
		if m["id"] == "2" {
			t.Fatalf("the mutation was answered after the token expired: %v", m)
		}
	}
	if !strings.Contains(err.Error(), "4403") {
		t.Fatalf("close = %v, want 4403", err)
	}
	if m, _ := a.seatStatuses(show); m[seats[0]] != "AVAILABLE" {
		t.Fatalf("seat = %s: a mutation ran on an expired token", m[seats[0]])
	}
}

// Finding: 300 anonymous connections × 10 subscriptions: no per-address or global cap.
func TestAbuseSocketCaps(t *testing.T) {
	dial := func(a *testApp, forwardedFor string) (int, string) {
		h := http.Header{}
		if forwardedFor != "" {
			h.Set("X-Forwarded-For", forwardedFor)
		}
		d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}}
		conn, resp, err := d.Dial("ws"+strings.TrimPrefix(a.srv.URL, "http")+"/query", h)
		if err == nil {
			t.Cleanup(func() { conn.Close() })
			return http.StatusSwitchingProtocols, ""
		}
		if resp == nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		r := decode(t, body)
		return resp.StatusCode, r.Code()
	}
	t.Run("PerClient", func(t *testing.T) {
		a := newTestApp(t, "-ws-max-conns-per-client", "3", "-trusted-proxies", "127.0.0.1")
		for range 3 {
			if status, _ := dial(a, "203.0.113.7"); status != http.StatusSwitchingProtocols {
				t.Fatalf("connection under the cap refused: %d", status)
			}
		}
		if status, code := dial(a, "203.0.113.7"); status != http.StatusTooManyRequests || code != "RATE_LIMITED" {
			t.Fatalf("4th connection of one client: %d %q, want 429 RATE_LIMITED", status, code)
		}
		if status, _ := dial(a, "203.0.113.8"); status != http.StatusSwitchingProtocols {
			t.Fatalf("another client behind the same proxy was refused: %d", status)
		}
	})
	t.Run("PerInstance", func(t *testing.T) {
		a := newTestApp(t, "-ws-max-conns", "2")
		dial(a, "")
		dial(a, "")
		if status, code := dial(a, ""); status != http.StatusServiceUnavailable || code != "SERVICE_UNAVAILABLE" {
			t.Fatalf("connection over the instance cap: %d %q, want 503 SERVICE_UNAVAILABLE", status, code)
		}
	})
}

// The cost budget: many cheap queries and a few costly ones are limited alike, per client
// (user, or address behind trusted proxies), with 429 and Retry-After.
func TestAbuseCostBudget(t *testing.T) {
	a := newTestApp(t, "-cost-budget", "300", "-cost-restore", "5", "-complexity-limit", "300", "-trusted-proxies", "127.0.0.1")
	from := func(addr string) http.Header { return http.Header{"X-Forwarded-For": {addr}} }
	status, _, body := a.postRaw(map[string]any{"query": `{ __typename }`}, from("198.51.100.1"))
	r := decode(t, body)
	cost, _ := r.Extensions["cost"].(map[string]any)
	throttle, _ := cost["throttleStatus"].(map[string]any)
	if status != 200 || cost["requestedQueryCost"] != 1.0 || cost["actualQueryCost"] != 1.0 ||
		throttle["maximumAvailable"] != 300.0 || throttle["restoreRate"] != 5.0 || throttle["currentlyAvailable"] == nil {
		t.Fatalf("extensions.cost = %v", r.Extensions)
	}

	// 100 cheap queries leave about 200 points: a query of 223 is refused.
	costly := map[string]any{"query": `{ movies(first: 60) { edges { node { id } } } showtimes(date: "2030-01-01") { id hall { id } } }`}
	for i := range 99 {
		if status, _, body := a.postRaw(map[string]any{"query": `{ __typename }`}, from("198.51.100.1")); status != 200 {
			t.Fatalf("cheap query %d: %d %s", i, status, body)
		}
	}
	status, h, body := a.postRaw(costly, from("198.51.100.1"))
	r = decode(t, body)
	if status != http.StatusTooManyRequests || r.Code() != "RATE_LIMITED" || h.Get("Retry-After") == "" {
		t.Fatalf("costly query with ~200 points left: %d %v Retry-After %q; want 429 RATE_LIMITED", status, r.codes(), h.Get("Retry-After"))
	}
	if secs, _ := strconv.Atoi(h.Get("Retry-After")); secs < 1 {
		t.Fatalf("Retry-After %q", h.Get("Retry-After"))
	}
	var wg sync.WaitGroup
	refused := 0
	var mu sync.Mutex
	for range 400 { // cheap queries alone exhaust the budget too
		wg.Add(1)
		go func() {
			defer wg.Done()
			if status, _, _ := a.postRaw(map[string]any{"query": `{ __typename }`}, from("198.51.100.1")); status == http.StatusTooManyRequests {
				mu.Lock()
				refused++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if refused == 0 {
		t.Fatal("400 cheap queries on a budget of 300 points were all answered")
	}
	if status, _, body := a.postRaw(costly, from("198.51.100.2")); status != 200 {
		t.Fatalf("another address shares the budget: %d %s", status, body)
	}
	if status, _, body := a.postRaw(costly, http.Header{"Authorization": {"Bearer " + a.token("alice", "customer")},
		"X-Forwarded-For": {"198.51.100.1"}}); status != 200 {
		t.Fatalf("a signed-in user shares the anonymous budget of the address: %d %s", status, body)
	}
}
