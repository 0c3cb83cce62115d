package app

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jws"

	"seatflow/internal/tooling/testenv"
)

// TestTicketKeyRotation: after `seatflow ticket-keys rotate`, new tickets carry the new
// kid (on every instance once its key cache turns over); tickets made before keep their
// code, still verify and still check in; both keys are published (the key ring's rules
// themselves: internal/tickets, TestRotate).
func TestTicketKeyRotation(t *testing.T) {
	a := newTestApp(t)
	b := a.sibling()
	show, seats := a.onSaleShowtime()
	alice, staff := a.token("alice", "customer"), a.token("door", "staff")
	old := a.paid(alice, show, seats[:1], "old")
	oldTicket := a.tickets(alice, old.ID)[0]

	var out bytes.Buffer
	t.Setenv("SEATFLOW_JWT_SECRET", "test-secret-0123456789") // as the server's environment has it
	err := TicketKeysCommand(context.Background(), []string{"rotate", "-mysql-dsn", a.db.DSN, "-redis-url", testenv.RedisURL(),
		"-redis-prefix", a.Keys.Prefix, "-ticket-key-secret", a.Config.TicketKeySecret}, &out, io.Discard)
	if err != nil || !strings.Contains(out.String(), "added key") {
		t.Fatalf("ticket-keys rotate: %v %q", err, out.String())
	}
	for _, inst := range []*testApp{a, b} {
		inst.clock.Advance(31 * time.Second) // past the key cache
	}
	fresh := b.paid(alice, show, seats[1:2], "new")
	newTicket := b.tickets(alice, fresh.ID)[0]
	if kidOf(t, newTicket.Code) == kidOf(t, oldTicket.Code) {
		t.Fatalf("a ticket made after the rotation has the old kid %s", kidOf(t, newTicket.Code))
	}
	if again := a.tickets(alice, old.ID)[0]; again.Code != oldTicket.Code {
		t.Fatalf("the old ticket's code changed with the rotation")
	}
	var keys struct {
		TicketKeys []struct {
			Kid     string
			Signing bool
		}
	}
	a.must("", `{ ticketKeys { kid signing } }`, nil, &keys)
	if len(keys.TicketKeys) != 2 || keys.TicketKeys[0].Kid != kidOf(t, newTicket.Code) || !keys.TicketKeys[0].Signing ||
		keys.TicketKeys[1].Kid != kidOf(t, oldTicket.Code) || keys.TicketKeys[1].Signing {
		t.Fatalf("ticketKeys after the rotation = %+v", keys)
	}
	a.doorOpen()
	b.doorOpen()
	if r := b.checkIn(staff, show, oldTicket.Code, ""); r.Status != "ADMITTED" {
		t.Fatalf("old ticket after the rotation: %s", r.Status)
	}
	if r := a.checkIn(staff, show, newTicket.Code, ""); r.Status != "ADMITTED" {
		t.Fatalf("new ticket: %s", r.Status)
	}
	t.Run("OldKeyLeavesOnceItsTicketsExpired", func(t *testing.T) {
		a.clock.Advance(6 * time.Hour) // the showtime has ended: no ticket of the old key can be presented
		a.must("", `{ ticketKeys { kid signing } }`, nil, &keys)
		if len(keys.TicketKeys) != 1 || keys.TicketKeys[0].Kid != kidOf(t, newTicket.Code) {
			t.Fatalf("ticketKeys after the showtime = %+v, want the signing key only", keys)
		}
	})
}

// kidOf is the kid header of a compact JWS.
func kidOf(t *testing.T, code string) string {
	t.Helper()
	msg, err := jws.Parse([]byte(code))
	if err != nil {
		t.Fatal(err)
	}
	kid, _ := msg.Signatures()[0].ProtectedHeaders().KeyID()
	return kid
}

// TestTicketKeySecret: an instance whose secret is not the one the keys were sealed with
// refuses to start, naming the setting; the right one opens them.
func TestTicketKeySecret(t *testing.T) {
	a := newTestApp(t)
	for secret, ok := range map[string]bool{"another-secret-of-at-least-32-bytes!!": false, a.Config.TicketKeySecret: true} {
		cfg, _, err := ParseConfig("test", []string{"-mysql-dsn", a.db.DSN, "-redis-url", testenv.RedisURL(),
			"-redis-prefix", a.Keys.Prefix, "-jwt-secret", "test-secret-0123456789", "-payment-provider", "test",
			"-ticket-key-secret", secret})
		if err != nil {
			t.Fatal(err)
		}
		b := &App{Config: cfg, Log: a.Log, DB: a.DB, SQL: a.SQL, Redis: a.Redis, Keys: a.Keys, Now: a.Now}
		err = b.wire()
		if ok != (err == nil) || (!ok && !strings.Contains(err.Error(), "SEATFLOW_TICKET_KEY_SECRET")) {
			t.Fatalf("secret %q: %v", secret, err)
		}
	}
}

// TestEmbeddedTickets: in embedded mode (SQLite, one connection) tickets are made inside the
// pay transaction also once the key cache has turned over, and survive a restart: the
// secret kept beside the database opens the same key, whose tickets still check in.
func TestEmbeddedTickets(t *testing.T) {
	clearStores(t)
	t.Setenv("SEATFLOW_TICKET_KEY_SECRET", "")
	path := filepath.Join(t.TempDir(), "embedded.db")
	clk := testenv.NewClock(testNow)
	open := func() *testApp {
		cfg, _, err := ParseConfig("test", []string{"-sqlite-path", path, "-reconcile-every", "0"})
		if err != nil {
			t.Fatal(err)
		}
		app, err := OpenWithClock(context.Background(), cfg, a0Log(), clk.Now)
		if err != nil {
			t.Fatal(err)
		}
		app.Start(context.Background())
		srv := httptest.NewServer(app.Handler())
		a := &testApp{App: app, t: t, srv: srv, clock: clk}
		a.admin = a.token("admin-1", "admin")
		return a
	}
	a := open()
	show, seats := a.onSaleShowtime()
	alice := a.token("alice", "customer")
	first := a.paid(alice, show, seats[:1], "first")
	clk.Advance(time.Minute) // past the key cache: the next payment reads the key in its transaction
	second := a.paid(alice, show, seats[1:2], "second")
	codes := []string{a.tickets(alice, first.ID)[0].Code, a.tickets(alice, second.ID)[0].Code}
	a.srv.Close()
	a.Close()

	b := open()
	defer func() { b.srv.Close(); b.Close() }()
	b.doorOpen()
	staff := b.token("door", "staff")
	for i, c := range codes {
		if r := b.checkIn(staff, show, c, ""); r.Status != "ADMITTED" {
			t.Fatalf("ticket %d after a restart: %s, want ADMITTED", i, r.Status)
		}
	}
}

func a0Log() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
