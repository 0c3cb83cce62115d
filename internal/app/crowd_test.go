package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/gorilla/websocket"
)

// Crowds behind one address: anonymous browsers were budgeted per address, so
// of 300 behind one address 51 could read a seat map and 1 could watch it. Each now
// starts a guest session (mutation guestSession) whose token carries its own budget and
// websocket allowance; the per-address limits are backstops sized for a crowd.

const (
	guestSessionQ = `mutation { guestSession { token expiresAt costBudget } }`
	seatMapReadQ  = `query($id: ID!) { seatMap(showtimeId: $id) { seats { seat { id } status } } }`
	seatMapSubQ   = `subscription($id: ID!) { seatMap(showtimeId: $id) { kind version seats { seat { id } status } } }`
)

// shippedCost are the cost budget's shipped defaults (the test instances lift them).
var shippedCost = []string{"-cost-budget", "50000", "-cost-restore", "1000"}

// browser is what the crowd test's anonymous browsers share: one HTTP client (its
// connections kept), the instance.
type crowdBrowser struct {
	a      *testApp
	client *http.Client
}

func newCrowdBrowser(a *testApp) *crowdBrowser {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 128
	a.t.Cleanup(tr.CloseIdleConnections)
	return &crowdBrowser{a: a, client: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// post sends a GraphQL request with token ("" = none) and header; safe from any goroutine.
func (b *crowdBrowser) post(token, query string, vars map[string]any, header http.Header) (int, gqlResponse, error) {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, b.a.srv.URL+"/query", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, gqlResponse{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, gqlResponse{}, err
	}
	var out gqlResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		return resp.StatusCode, out, fmt.Errorf("status %d, not JSON: %.200s", resp.StatusCode, raw)
	}
	return resp.StatusCode, out, nil
}

// guestSession starts a guest session and returns its token.
func (b *crowdBrowser) guestSession(header http.Header) (string, error) {
	status, r, err := b.post("", guestSessionQ, nil, header)
	if err != nil {
		return "", err
	}
	var out struct{ GuestSession struct{ Token string } }
	if len(r.Errors) > 0 || json.Unmarshal(r.Data, &out) != nil || out.GuestSession.Token == "" {
		return "", fmt.Errorf("guestSession: %d %v %s", status, r.Errors, r.Data)
	}
	return out.GuestSession.Token, nil
}

// watch opens a websocket, initialises it with token and subscribes to show's seat map;
// it returns the connection once the snapshot came.
func (b *crowdBrowser) watch(token, show string) (*websocket.Conn, error) {
	d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}, HandshakeTimeout: 20 * time.Second}
	conn, resp, err := d.Dial("ws"+strings.TrimPrefix(b.a.srv.URL, "http")+"/query", nil)
	if err != nil {
		if resp != nil {
			body, _ := io.ReadAll(resp.Body)
			return nil, fmt.Errorf("upgrade refused: %d %s", resp.StatusCode, body)
		}
		return nil, err
	}
	fail := func(err error) (*websocket.Conn, error) { conn.Close(); return nil, err }
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	if err := conn.WriteJSON(map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + token}}); err != nil {
		return fail(err)
	}
	if err := conn.WriteJSON(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{
		"query": seatMapSubQ, "variables": map[string]any{"id": show}}}); err != nil {
		return fail(err)
	}
	for {
		var m struct {
			Type    string
			Payload json.RawMessage
		}
		if err := conn.ReadJSON(&m); err != nil {
			return fail(fmt.Errorf("waiting for the snapshot: %w", err))
		}
		switch m.Type {
		case "connection_ack", "ping", "pong":
		case "next":
			if !bytes.Contains(m.Payload, []byte(`"SNAPSHOT"`)) {
				return fail(fmt.Errorf("first event: %s", m.Payload))
			}
			conn.SetReadDeadline(time.Time{})
			return conn, nil
		default:
			return fail(fmt.Errorf("%s: %s", m.Type, m.Payload))
		}
	}
}

// TestCrowdBehindOneAddress: 1,000 anonymous browsers behind one address (the test's
// 127.0.0.1, no proxy), with the shipped defaults, each start a guest session, read the
// seat map and watch it, all at once.
func TestCrowdBehindOneAddress(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 browsers")
	}
	a := newTestApp(t, shippedCost...)
	show, _ := a.onSaleShowtime()
	b := newCrowdBrowser(a)
	const crowd = 1000
	began := time.Now()
	var (
		mu    sync.Mutex
		conns []*websocket.Conn
		errs  []string
		wg    sync.WaitGroup
		gate  = make(chan struct{}, 50) // browsers arriving at once
	)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for i := range crowd {
		wg.Add(1)
		gate <- struct{}{}
		go func() {
			defer func() { <-gate; wg.Done() }()
			conn, err := func() (*websocket.Conn, error) {
				token, err := b.guestSession(nil)
				if err != nil {
					return nil, err
				}
				status, r, err := b.post(token, seatMapReadQ, map[string]any{"id": show}, nil)
				if err != nil || status != 200 || len(r.Errors) > 0 {
					return nil, fmt.Errorf("seat map read: %d %v %v", status, r.Errors, err)
				}
				return b.watch(token, show)
			}()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Sprintf("browser %d: %v", i, err))
				return
			}
			conns = append(conns, conn)
		}()
	}
	wg.Wait()
	took := time.Since(began)
	if len(errs) > 0 {
		t.Fatalf("%d of %d browsers failed; first: %s", len(errs), crowd, strings.Join(errs[:min(len(errs), 5)], "\n"))
	}
	if n := len(conns); n != crowd {
		t.Fatalf("%d browsers watch the seat map, want %d", n, crowd)
	}
	t.Logf("%d browsers behind one address: session, seat-map read and watch in %s", crowd, took.Round(time.Millisecond))
	if took > 30*time.Second {
		t.Errorf("the crowd took %s to get in", took)
	}
}

// TestCrowdScriptStillThrottled: one script reading the seat map in a loop, with one guest
// session or with none, is refused RATE_LIMITED once its own budget is spent, and the
// refusal says what is left (no 0 right after an answer reporting thousands); a browser
// behind the same address is not.
func TestCrowdScriptStillThrottled(t *testing.T) {
	a := newTestApp(t, "-cost-budget", "20000", "-cost-restore", "1")
	show, _ := a.onSaleShowtime()
	b := newCrowdBrowser(a)
	script, err := b.guestSession(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, token string }{{"OneGuestSession", script}, {"NoToken", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			last := -1
			for i := range 2000 {
				status, r, err := b.post(tc.token, seatMapReadQ, map[string]any{"id": show}, nil)
				if err != nil {
					t.Fatal(err)
				}
				cost, _ := r.Extensions["cost"].(map[string]any)
				if len(r.Errors) > 0 {
					cost, _ = r.Errors[0].Extensions["cost"].(map[string]any)
				}
				th, _ := cost["throttleStatus"].(map[string]any)
				available, _ := th["currentlyAvailable"].(float64)
				if r.Code() == "RATE_LIMITED" {
					if status != http.StatusTooManyRequests || i < 10 {
						t.Fatalf("refused after %d reads: %d", i, status)
					}
					// Honest figures: the refusal tells what the last answer left (the
					// restore of one point a second aside), not 0.
					if int(available) < last || int(available) > last+10 || available >= 601 {
						t.Fatalf("refused with %v points available right after an answer reporting %d", available, last)
					}
					return
				}
				if len(r.Errors) > 0 || status != 200 {
					t.Fatalf("read %d: %d %v", i, status, r.Errors)
				}
				if available > 20000 || (last >= 0 && int(available) > last+10) {
					t.Fatalf("read %d reports %v available after %d", i, available, last)
				}
				last = int(available)
			}
			t.Fatal("2,000 seat-map reads on a budget of 20,000 points were all answered")
		})
	}
	other, err := b.guestSession(nil)
	if err != nil {
		t.Fatal(err)
	}
	if status, r, err := b.post(other, seatMapReadQ, map[string]any{"id": show}, nil); err != nil || status != 200 || len(r.Errors) > 0 {
		t.Fatalf("another browser behind the same address: %d %v %v", status, r.Errors, err)
	}
}

// TestCrowdBackstop: the guest sessions of one address share a crowd budget besides their
// own: a script starting sessions to multiply its budget meets it, and a session refused
// by it is told what the address has left, not what its own budget has.
func TestCrowdBackstop(t *testing.T) {
	a := newTestApp(t, "-complexity-limit", "1000", "-cost-budget", "1000", "-cost-restore", "1",
		"-crowd-cost-budget", "1000", "-crowd-cost-restore", "1", "-trusted-proxies", "127.0.0.1")
	show, _ := a.onSaleShowtime()
	b := newCrowdBrowser(a)
	from := func(addr string) http.Header { return http.Header{"X-Forwarded-For": {addr}} }
	read := func(token string, h http.Header) (gqlResponse, float64) {
		_, r, err := b.post(token, seatMapReadQ, map[string]any{"id": show}, h)
		if err != nil {
			t.Fatal(err)
		}
		cost, _ := r.Extensions["cost"].(map[string]any)
		if cost == nil && len(r.Errors) > 0 {
			cost, _ = r.Errors[0].Extensions["cost"].(map[string]any)
		}
		th, _ := cost["throttleStatus"].(map[string]any)
		available, _ := th["currentlyAvailable"].(float64)
		return r, available
	}
	first, _ := b.guestSession(from("198.51.100.1"))
	second, _ := b.guestSession(from("198.51.100.1"))
	elsewhere, _ := b.guestSession(from("198.51.100.2"))
	// A read asks 601 points and costs 49 (24 seats and their states, the map): eight
	// leave the address 608.
	for i := range 8 {
		if r, _ := read(first, from("198.51.100.1")); len(r.Errors) > 0 {
			t.Fatalf("read %d of the first session: %v", i, r.Errors)
		}
	}
	r, left := read(second, from("198.51.100.1"))
	if len(r.Errors) > 0 || left > 1000-9*49+5 {
		t.Fatalf("the second session's first read: %v; %v available, want no more than the address has left (%d)", r.Errors, left, 1000-9*49)
	}
	r, refused := read(second, from("198.51.100.1"))
	if r.Code() != "RATE_LIMITED" || !strings.Contains(r.Errors[0].Message, "this address") {
		t.Fatalf("a second session of the same address past the crowd budget: %v", r.Errors)
	}
	if refused < left || refused > left+5 {
		t.Fatalf("refused with %v available, after an answer reporting %v", refused, left)
	}
	if r, _ := read(elsewhere, from("198.51.100.2")); len(r.Errors) > 0 {
		t.Fatalf("a session of another address: %v", r.Errors)
	}
}

// TestGuestSessionRate: an address starts at most SEATFLOW_GUEST_SESSIONS_PER_MINUTE
// sessions; past it RATE_LIMITED with retryAfterMs, while another address still starts one.
func TestGuestSessionRate(t *testing.T) {
	a := newTestApp(t, "-guest-sessions-per-minute", "3", "-trusted-proxies", "127.0.0.1")
	b := newCrowdBrowser(a)
	from := func(addr string) http.Header { return http.Header{"X-Forwarded-For": {addr}} }
	for i := range 3 {
		if _, err := b.guestSession(from("203.0.113.9")); err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
	}
	_, r, err := b.post("", guestSessionQ, nil, from("203.0.113.9"))
	if err != nil || r.Code() != "RATE_LIMITED" {
		t.Fatalf("4th session of one address in a minute: %v %v", r.Errors, err)
	}
	if ms, _ := r.Errors[0].Extensions["retryAfterMs"].(float64); ms <= 0 || ms > 60_000 {
		t.Fatalf("retryAfterMs = %v", r.Errors[0].Extensions["retryAfterMs"])
	}
	if _, err := b.guestSession(from("203.0.113.10")); err != nil {
		t.Fatalf("another address: %v", err)
	}
}

// TestGuestIsNoCustomer: a guest session holds no seats and sees no orders (refused as no
// token is); a forged or expired guest token is refused like any bad token, on HTTP and
// on the websocket.
func TestGuestIsNoCustomer(t *testing.T) {
	a := newTestApp(t)
	show, seats := a.onSaleShowtime()
	b := newCrowdBrowser(a)
	guest, err := b.guestSession(nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, q := range map[string]string{"holdSeats": holdQ, "myOrders": `{ myOrders { id } }`} {
		vars := holdVars(show, seats[:1], "guest")
		if name == "myOrders" {
			vars = nil
		}
		r := a.wantCode(guest, q, vars, "UNAUTHENTICATED")
		if !strings.Contains(r.Errors[0].Message, "guest session") {
			t.Errorf("%s as a guest: %q", name, r.Errors[0].Message)
		}
	}
	if m, _ := a.seatStatuses(show); m[seats[0]] != "AVAILABLE" {
		t.Fatalf("a guest held a seat: %s", m[seats[0]])
	}
	sign := func(secret string, exp time.Time) string {
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "guest-0a1b", "role": "guest",
			"iat": exp.Add(-time.Hour).Unix(), "exp": exp.Unix()}).SignedString([]byte(secret))
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	bad := map[string]string{
		"Forged":  sign("not-the-secret-0123456789", time.Now().Add(time.Hour)),
		"Expired": sign("test-secret-0123456789", time.Now().Add(-time.Minute)), // the authenticator reads the real clock
	}
	for name, tok := range bad {
		r := a.wantCode(tok, `{ __typename }`, nil, "UNAUTHENTICATED")
		if r.Status != http.StatusUnauthorized {
			t.Errorf("%s guest token: status %d, want 401", name, r.Status)
		}
		_, err := b.watch(tok, show)
		if err == nil || !strings.Contains(err.Error(), "4403") {
			t.Errorf("%s guest token on a websocket: %v, want 4403", name, err)
		}
	}
}

// TestGuestSocketsPerSession: a websocket is charged to and counted for the session of its
// connection_init, not the address of its upgrade: one session's sockets are capped
// (SEATFLOW_WS_MAX_CONNS_PER_SESSION) while another session of the same address still gets
// one.
func TestGuestSocketsPerSession(t *testing.T) {
	a := newTestApp(t, "-ws-max-conns-per-session", "2", "-cost-budget", "20000", "-cost-restore", "1")
	show, _ := a.onSaleShowtime()
	b := newCrowdBrowser(a)
	addressBudget := func() float64 {
		_, r, err := b.post("", `{ __typename }`, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		cost, _ := r.Extensions["cost"].(map[string]any)
		th, _ := cost["throttleStatus"].(map[string]any)
		got, _ := th["currentlyAvailable"].(float64)
		return got
	}
	before := addressBudget()
	one, _ := b.guestSession(nil)
	two, _ := b.guestSession(nil)
	for i := range 2 {
		c, err := b.watch(one, show)
		if err != nil {
			t.Fatalf("socket %d of a session: %v", i, err)
		}
		t.Cleanup(func() { c.Close() })
	}
	if _, err := b.watch(one, show); err == nil || !strings.Contains(err.Error(), "1013") {
		t.Fatalf("3rd socket of a session capped at 2: %v, want closed 1013", err)
	}
	c, err := b.watch(two, show)
	if err != nil {
		t.Fatalf("another session of the same address: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	// The subscriptions were charged to the sessions: the address' anonymous budget paid
	// only the two guestSession mutations and this query, a point each.
	if got := addressBudget(); got < before-3 {
		t.Fatalf("the address' own budget went from %v to %v: the sockets' subscriptions were charged to it", before, got)
	}
}

// TestCostFiguresHonest: extensions.cost tells what the client really has. A newcomer sees
// the budget less what its answer cost (it saw 50,018 of 50,000), and a customer reading
// myOrders once a second pays what the reads cost, not a lease a second (each instance
// leased up to 6,250 points for a second and threw the rest away).
func TestCostFiguresHonest(t *testing.T) {
	a := newTestApp(t, "-cost-budget", "20000", "-cost-restore", "1")
	b := newCrowdBrowser(a)
	guest, _ := b.guestSession(nil)
	_, r, err := b.post(guest, `{ movies(first: 10) { edges { node { id } } } }`, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cost, _ := r.Extensions["cost"].(map[string]any)
	th, _ := cost["throttleStatus"].(map[string]any)
	if th["maximumAvailable"] != 20000.0 || th["currentlyAvailable"] != 20000-cost["actualQueryCost"].(float64) {
		t.Fatalf("a newcomer's first answer: %v", cost)
	}

	alice := a.token("alice", "customer")
	var seen []float64
	for i := range 4 {
		if i > 0 {
			time.Sleep(1100 * time.Millisecond) // past a lease's life
		}
		_, r, err := b.post(alice, `{ myOrders { id status } }`, nil, nil)
		if err != nil || len(r.Errors) > 0 {
			t.Fatal(r.Errors, err)
		}
		cost, _ := r.Extensions["cost"].(map[string]any)
		th, _ := cost["throttleStatus"].(map[string]any)
		seen = append(seen, th["currentlyAvailable"].(float64))
		// Four reads of 1 point each, and a point back a second.
		if got := seen[i]; got < 20000-float64(i+1) || got > 20000 {
			t.Fatalf("myOrders once a second: %v available after %d reads, want about %d", seen, i+1, 20000-(i+1))
		}
	}
}
