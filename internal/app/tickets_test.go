package app

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"seatflow/ent/ticket"
)

const ticketsQ = `query($id: ID!) { order(id: $id) { status tickets { id code status checkedInAt revokedAt qrSvg
	seat { id row number } showtime { id } order { id } } } }`

type ticketOut struct {
	ID, Code, Status       string
	CheckedInAt, RevokedAt *string
	QrSvg                  string
	Seat                   struct {
		ID, Row string
		Number  int
	}
	Showtime, Order struct{ ID string }
}

// tickets reads an order's tickets as token's holder (its owner).
func (a *testApp) tickets(token, orderID string) []ticketOut {
	a.t.Helper()
	var out struct {
		Order struct {
			Status  string
			Tickets []ticketOut
		}
	}
	a.must(token, ticketsQ, map[string]any{"id": orderID}, &out)
	return out.Order.Tickets
}

const payQ = `mutation($id: ID!, $ref: String!) { payOrder(orderId: $id, paymentRef: $ref) { status } }`

// paid holds seats for token and pays them with the test provider.
func (a *testApp) paid(token, show string, seats []string, key string) orderOut {
	a.t.Helper()
	o := a.hold(token, show, seats, key)
	a.must(token, payQ, map[string]any{"id": o.ID, "ref": "ref-" + key}, nil)
	return o
}

// doorOpen moves the clock to an hour before the showtimes of onSaleShowtime start
// (testNow + 30 h): their tickets open the door from 3 hours before.
func (a *testApp) doorOpen() { a.clock.Advance(29 * time.Hour) }

// TestTicketsExistExactlyForPaidOrders: a pending order has no tickets; paying it makes one
// per seat, VALID, with a code and its QR code; another customer cannot see them, staff can.
func TestTicketsExistExactlyForPaidOrders(t *testing.T) {
	a := newTestApp(t)
	show, seats := a.onSaleShowtime()
	alice, bob, staff := a.token("alice", "customer"), a.token("bob", "customer"), a.token("door-1", "staff")
	o := a.hold(alice, show, seats[:2], "k")
	if got := a.tickets(alice, o.ID); len(got) != 0 {
		t.Fatalf("a pending order has %d tickets, want none", len(got))
	}
	a.must(alice, payQ, map[string]any{"id": o.ID, "ref": "r"}, nil)
	got := a.tickets(alice, o.ID)
	if len(got) != 2 {
		t.Fatalf("a paid order of 2 seats has %d tickets, want 2", len(got))
	}
	for i, tk := range got {
		if tk.Seat.ID != seats[i] || tk.Status != "VALID" || tk.Showtime.ID != show || tk.Order.ID != o.ID ||
			tk.CheckedInAt != nil || tk.RevokedAt != nil || strings.Count(tk.Code, ".") != 2 || !strings.HasPrefix(tk.QrSvg, "<svg") {
			t.Fatalf("ticket %d = %+v", i, tk)
		}
	}
	if again := a.tickets(alice, o.ID); again[0].Code != got[0].Code || again[0].ID != got[0].ID {
		t.Errorf("a ticket's code changed between two reads: %q, then %q", got[0].Code, again[0].Code)
	}
	var mine struct {
		MyOrders []struct{ Tickets []struct{ ID string } }
	}
	a.must(alice, `{ myOrders { tickets { id } } }`, nil, &mine)
	if len(mine.MyOrders) != 1 || len(mine.MyOrders[0].Tickets) != 2 {
		t.Errorf("myOrders tickets = %+v", mine)
	}

	nodeQ := `query($id: ID!) { node(id: $id) { ... on Ticket { id status seat { id } order { id } } } }`
	t.Run("AnotherCustomerSeesNothing", func(t *testing.T) {
		r := a.do(bob, nodeQ, map[string]any{"id": got[0].ID})
		if len(r.Errors) > 0 || string(r.Data) != `{"node":null}` {
			t.Fatalf("bob's node(alice's ticket) = %s %+v, want null", r.Data, r.Errors)
		}
		if r := a.do("", nodeQ, map[string]any{"id": got[0].ID}); string(r.Data) != `{"node":null}` {
			t.Fatalf("anonymous node(ticket) = %s %+v, want null", r.Data, r.Errors)
		}
		a.wantCode(bob, ticketsQ, map[string]any{"id": o.ID}, "NOT_FOUND")
	})
	t.Run("OwnerAndStaffSeeIt", func(t *testing.T) {
		for who, tok := range map[string]string{"alice": alice, "staff": staff, "admin": a.admin} {
			var out struct {
				Node *struct {
					ID, Status string
					Order      struct{ ID string }
				}
			}
			a.must(tok, nodeQ, map[string]any{"id": got[0].ID}, &out)
			if out.Node == nil || out.Node.ID != got[0].ID || out.Node.Order.ID != o.ID {
				t.Errorf("%s's node(ticket) = %+v", who, out.Node)
			}
		}
	})
	t.Run("NoTicketsBeforeOrWithoutPayment", func(t *testing.T) {
		p := a.hold(bob, show, seats[2:3], "bob")
		a.must(bob, `mutation($id: ID!) { cancelOrder(orderId: $id) { status } }`, map[string]any{"id": p.ID}, nil)
		if got := a.tickets(bob, p.ID); len(got) != 0 {
			t.Fatalf("a cancelled order has %d tickets", len(got))
		}
		if n := a.DB.Ticket.Query().CountX(context.Background()); n != 2 {
			t.Fatalf("%d ticket rows, want the paid order's 2", n)
		}
	})
}

// TestTicketCodeVerifiesWithTheJWKS: the code is a compact JWS that another JOSE library
// (lestrrat-go/jwx; SeatFlow signs with go-jose) verifies with the published JWK Set alone,
// with the claims the issue names; a changed byte anywhere fails it.
func TestTicketCodeVerifiesWithTheJWKS(t *testing.T) {
	a := newTestApp(t)
	show, seats := a.onSaleShowtime()
	alice := a.token("alice", "customer")
	o := a.paid(alice, show, seats[:1], "k")
	tk := a.tickets(alice, o.ID)[0]

	resp, err := http.Get(a.srv.URL + "/.well-known/ticket-keys")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/jwk-set+json" {
		t.Fatalf("GET /.well-known/ticket-keys: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	set, err := jwk.Parse(body)
	if err != nil || set.Len() != 1 {
		t.Fatalf("JWKS %s: %v (%d keys)", body, err, set.Len())
	}
	var raw struct{ Keys []map[string]string }
	_ = json.Unmarshal(body, &raw)
	if k := raw.Keys[0]; k["kty"] != "OKP" || k["crv"] != "Ed25519" || k["use"] != "sig" || k["kid"] == "" || k["x"] == "" {
		t.Fatalf("JWK = %v", k)
	}
	payload, err := jws.Verify([]byte(tk.Code), jws.WithKeySet(set, jws.WithRequireKid(true)))
	if err != nil {
		t.Fatalf("jwx does not verify the code with the JWKS: %v", err)
	}
	msg, _ := jws.Parse([]byte(tk.Code))
	hdr := msg.Signatures()[0].ProtectedHeaders()
	if alg, _ := hdr.Algorithm(); alg != jwa.EdDSA() {
		t.Errorf("alg = %v, want EdDSA", alg)
	}
	if kid, _ := hdr.KeyID(); kid != raw.Keys[0]["kid"] {
		t.Errorf("kid = %q, want the JWK's %q", kid, raw.Keys[0]["kid"])
	}
	var c struct {
		Tkt, Sho, Seat string
		Nbf, Exp       int64
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		t.Fatal(err)
	}
	var st struct {
		Showtime struct{ StartsAt, EndsAt time.Time }
	}
	a.must("", `query($id: ID!) { showtime(id: $id) { startsAt endsAt } }`, map[string]any{"id": show}, &st)
	if c.Tkt != tk.ID || c.Sho != show || c.Seat != seats[0] || c.Nbf != st.Showtime.StartsAt.Add(-3*time.Hour).Unix() ||
		c.Exp != st.Showtime.EndsAt.Unix() {
		t.Fatalf("claims %+v; want tkt %s sho %s seat %s nbf %d exp %d", c, tk.ID, show, seats[0],
			st.Showtime.StartsAt.Add(-3*time.Hour).Unix(), st.Showtime.EndsAt.Unix())
	}
	if bytes.Contains(payload, []byte("alice")) {
		t.Errorf("the code carries the customer: %s", payload)
	}
	t.Run("AnyChangedByteFails", func(t *testing.T) {
		for i := 0; i < len(tk.Code); i += 7 {
			b := []byte(tk.Code)
			if b[i] == '.' {
				continue
			}
			b[i] ^= 0x01
			if _, err := jws.Verify(b, jws.WithKeySet(set)); err == nil {
				t.Fatalf("a code changed at byte %d verifies", i)
			}
		}
	})
	t.Run("TicketKeysQueryIsTheJWKS", func(t *testing.T) {
		var out struct {
			TicketKeys []struct {
				Kid, Kty, Crv, X, Use, Alg string
				Signing                    bool
			}
		}
		a.must("", `{ ticketKeys { kid kty crv x use alg signing } }`, nil, &out)
		k := raw.Keys[0]
		if len(out.TicketKeys) != 1 || out.TicketKeys[0].Kid != k["kid"] || out.TicketKeys[0].X != k["x"] || !out.TicketKeys[0].Signing {
			t.Fatalf("ticketKeys = %+v, JWKS %v", out.TicketKeys, k)
		}
	})
}

// TestTicketsRevoked: refunding an order and cancelling a showtime revoke their tickets for
// good: listed by revokedTickets, REVOKED at the door, and never valid again (the
// revocation rules themselves: internal/tickets, TestRevoke).
func TestTicketsRevoked(t *testing.T) {
	a := newTestApp(t)
	show, seats := a.onSaleShowtime()
	alice, staff := a.token("alice", "customer"), a.token("door-1", "staff")
	refunded := a.paid(alice, show, seats[:2], "refunded")
	kept := a.paid(alice, show, seats[2:3], "kept")
	codes := a.tickets(alice, refunded.ID)
	keptTicket := a.tickets(alice, kept.ID)[0]
	a.must(a.admin, `mutation($id: ID!) { refundOrder(orderId: $id) { status } }`, map[string]any{"id": refunded.ID}, nil)
	if got := a.tickets(alice, refunded.ID); len(got) != 0 {
		t.Fatalf("a refunded (cancelled) order shows %d tickets, want none", len(got))
	}
	revokedQ := `query($id: ID!, $since: Time) { revokedTickets(showtimeId: $id, since: $since) { ticketId revokedAt } }`
	var rev struct {
		RevokedTickets []struct {
			TicketID  string
			RevokedAt time.Time
		}
	}
	a.must(staff, revokedQ, map[string]any{"id": show}, &rev)
	if len(rev.RevokedTickets) != 2 || rev.RevokedTickets[0].TicketID != codes[0].ID || rev.RevokedTickets[1].TicketID != codes[1].ID {
		t.Fatalf("revokedTickets = %+v, want the refunded order's two", rev)
	}
	a.wantCode(alice, revokedQ, map[string]any{"id": show}, "FORBIDDEN")
	a.doorOpen()
	for i := range 2 { // never valid again
		if r := a.checkIn(staff, show, codes[0].Code, ""); r.Status != "REVOKED" || r.Ticket == nil || r.Ticket.Status != "REVOKED" {
			t.Fatalf("scan %d of a refunded ticket: %+v, want REVOKED", i, r)
		}
	}
	if r := a.checkIn(staff, show, keptTicket.Code, ""); r.Status != "ADMITTED" {
		t.Fatalf("the other order's ticket: %s, want ADMITTED", r.Status)
	}

	t.Run("ShowtimeCancelled", func(t *testing.T) {
		since := a.clock.Now()
		a.must(a.admin, `mutation($id: ID!) { cancelShowtime(id: $id) { status } }`, map[string]any{"id": show}, nil)
		got := a.tickets(alice, kept.ID)
		if len(got) != 1 || got[0].Status != "REVOKED" || got[0].RevokedAt == nil {
			t.Fatalf("a cancelled showtime's ticket = %+v, want REVOKED", got)
		}
		a.must(staff, revokedQ, map[string]any{"id": show, "since": since.Format(time.RFC3339)}, &rev)
		if len(rev.RevokedTickets) != 1 || rev.RevokedTickets[0].TicketID != keptTicket.ID {
			t.Fatalf("revokedTickets since the cancellation = %+v, want the kept ticket only", rev)
		}
		if r := a.checkIn(staff, show, keptTicket.Code, "x"); r.Status != "REVOKED" {
			t.Fatalf("scan after the cancellation: %s, want REVOKED", r.Status)
		}
		if n := a.DB.Ticket.Query().Where(ticket.RevokedAtIsNil()).CountX(context.Background()); n != 0 {
			t.Fatalf("%d tickets still valid", n)
		}
	})
}

// TestTicketsOnEveryPayPath: the Stripe webhook and a late payment make tickets too, in the
// transaction that makes the order PAID; none exist before.
func TestTicketsOnEveryPayPath(t *testing.T) {
	t.Run("StripeWebhook", func(t *testing.T) {
		a := newStripeApp(t)
		show, seats := a.onSaleShowtime()
		alice := a.token("alice", "customer")
		o := a.hold(alice, show, seats[:2], "k")
		a.startPayment(alice, o.ID)
		if got := a.tickets(alice, o.ID); len(got) != 0 {
			t.Fatalf("%d tickets before Stripe confirmed", len(got))
		}
		pi := a.orderState(alice, o.ID).Payment.Reference
		ev, _ := stripeEvent("payment_intent.succeeded", intent(pi, o.ID, o.AmountCents, "usd"))
		a.deliver(ev).want(t, http.StatusOK, "applied")
		a.deliver(ev).want(t, http.StatusOK, "replayed")
		if got := a.tickets(alice, o.ID); len(got) != 2 || got[0].Status != "VALID" {
			t.Fatalf("tickets after the webhook: %+v", got)
		}
		if n := a.DB.Ticket.Query().CountX(context.Background()); n != 2 {
			t.Fatalf("%d ticket rows after a replayed event, want 2", n)
		}
	})
	t.Run("LatePayment", func(t *testing.T) {
		a := newTestApp(t)
		show, seats := a.onSaleShowtime()
		alice := a.token("alice", "customer")
		o := a.hold(alice, show, seats[:1], "late")
		a.clock.Advance(16 * time.Minute)
		a.waitExpired(alice, o.ID, show, seats[0])
		if got := a.tickets(alice, o.ID); len(got) != 0 {
			t.Fatalf("an expired order has %d tickets", len(got))
		}
		a.must(alice, payQ, map[string]any{"id": o.ID, "ref": "late"}, nil)
		if got := a.tickets(alice, o.ID); len(got) != 1 || got[0].Seat.ID != seats[0] {
			t.Fatalf("tickets after the late payment: %+v", got)
		}
	})
}

// TestOrdersPaidBeforeTicketsGetThem: a PAID order without tickets (paid before tickets
// existed) gets them at its first read, revoked at once when its showtime was cancelled.
func TestOrdersPaidBeforeTicketsGetThem(t *testing.T) {
	a := newTestApp(t)
	show, seats := a.onSaleShowtime()
	alice := a.token("alice", "customer")
	o := a.paid(alice, show, seats[:2], "k")
	ctx := context.Background()
	a.DB.Ticket.Delete().ExecX(ctx)
	if got := a.tickets(alice, o.ID); len(got) != 2 || got[0].Status != "VALID" || got[1].Seat.ID != seats[1] {
		t.Fatalf("tickets of an order paid before tickets existed: %+v", got)
	}
	a.must(a.admin, `mutation($id: ID!) { cancelShowtime(id: $id) { status } }`, map[string]any{"id": show}, nil)
	a.DB.Ticket.Delete().ExecX(ctx)
	if got := a.tickets(alice, o.ID); len(got) != 2 || got[0].Status != "REVOKED" {
		t.Fatalf("tickets of a cancelled showtime's order made on read: %+v, want REVOKED", got)
	}
}
