package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"seatflow/internal/googlewallet"
)

const walletLinkQ = `query($id: ID!) { ticketWalletLink(ticketId: $id) }`

// googleKeyFile writes a service account's key file, as Google issues it, and returns its
// path and the public key that verifies its links.
func googleKeyFile(t *testing.T) (string, jwk.Key) {
	t.Helper()
	acc, err := googlewallet.NewDemoAccount()
	if err != nil {
		t.Fatal(err)
	}
	acc.Email = "tickets@seatflow-test.iam.gserviceaccount.com"
	b, err := googlewallet.KeyFile(acc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "service-account.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	pub, err := jwk.Import(&acc.Key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return path, pub
}

// walletClaims verifies link's JWT with jwx against pub and returns its claims.
func walletClaims(t *testing.T, link string, pub jwk.Key) (googleClaims, error) {
	t.Helper()
	var c googleClaims
	if !strings.HasPrefix(link, googlewallet.SaveURL) {
		t.Fatalf("link %q is not Google's save page", link)
	}
	payload, err := jws.Verify([]byte(strings.TrimPrefix(link, googlewallet.SaveURL)), jws.WithKey(jwa.RS256(), pub))
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		t.Fatal(err)
	}
	return c, nil
}

type googleClaims struct {
	Iss, Aud, Typ string
	Origins       []string
	Payload       googlewallet.Payload
}

// TestGoogleWalletLink: the owner's link is Google's save page with a JWT that jwx verifies
// against the service account's public key, holding the showtime's class and the ticket's
// object with the ticket's code as its QR barcode and its seat; the door admits that
// barcode; a changed JWT fails; someone else's ticket is NOT_FOUND, a revoked one
// INVALID_STATE.
func TestGoogleWalletLink(t *testing.T) {
	keyPath, pub := googleKeyFile(t)
	a := newTestApp(t, "-wallet-google-key", keyPath, "-wallet-google-issuer-id", "3388000000012345678",
		"-public-url", "https://tickets.example/cinema/")
	show, seats := a.onSaleShowtime()
	alice, bob, staff := a.token("alice", "customer"), a.token("bob", "customer"), a.token("door-1", "staff")
	o := a.paid(alice, show, seats[:2], "k")
	tks := a.tickets(alice, o.ID)
	var out struct{ TicketWalletLink string }
	a.must(alice, walletLinkQ, map[string]any{"id": tks[1].ID}, &out)
	c, err := walletClaims(t, out.TicketWalletLink, pub)
	if err != nil {
		t.Fatalf("the link's JWT does not verify with the service account's key: %v", err)
	}
	if c.Iss != "tickets@seatflow-test.iam.gserviceaccount.com" || c.Aud != "google" || c.Typ != "savetowallet" ||
		len(c.Origins) != 1 || c.Origins[0] != "https://tickets.example" {
		t.Errorf("claims %+v", c)
	}
	p := c.Payload
	if len(p.EventTicketClasses) != 1 || len(p.EventTicketObjects) != 1 {
		t.Fatalf("payload %+v: want one class and one object", p)
	}
	cl, obj := p.EventTicketClasses[0], p.EventTicketObjects[0]
	showID, ticketID := idOf(t, show), idOf(t, tks[1].ID)
	if cl.ID != "3388000000012345678.showtime-"+strconv.Itoa(showID) || obj.ClassID != cl.ID ||
		obj.ID != "3388000000012345678.ticket-"+strconv.Itoa(ticketID) {
		t.Errorf("class %q, object %q of %q", cl.ID, obj.ID, obj.ClassID)
	}
	if cl.EventName.DefaultValue.Value == "" || cl.Venue == nil || cl.DateTime == nil || cl.DateTime.Start == "" {
		t.Errorf("class %+v: want the movie, the venue and the times", cl)
	}
	if obj.State != "ACTIVE" || obj.Barcode.Type != "QR_CODE" || obj.Barcode.Value != tks[1].Code {
		t.Errorf("object %+v: want ACTIVE with the ticket's code as its QR code", obj)
	}
	if obj.SeatInfo == nil || obj.SeatInfo.Row.DefaultValue.Value != tks[1].Seat.Row ||
		obj.SeatInfo.Seat.DefaultValue.Value != strconv.Itoa(tks[1].Seat.Number) {
		t.Errorf("seatInfo %+v, want the ticket's seat %+v", obj.SeatInfo, tks[1].Seat)
	}
	t.Run("TamperedJWTFails", func(t *testing.T) {
		jwt := []byte(out.TicketWalletLink)
		i := len(googlewallet.SaveURL) + 40 // inside the header or the payload
		jwt[i] ^= 0x01
		if _, err := walletClaims(t, string(jwt), pub); err == nil {
			t.Fatal("a changed JWT verifies")
		}
	})
	t.Run("TheDoorAdmitsTheBarcode", func(t *testing.T) {
		a.doorOpen()
		if r := a.checkIn(staff, show, obj.Barcode.Value, ""); r.Status != "ADMITTED" || r.Ticket == nil || r.Ticket.ID != tks[1].ID {
			t.Fatalf("scan of the Google pass's barcode: %+v, want ADMITTED", r)
		}
	})
	t.Run("SomeoneElsesTicket", func(t *testing.T) {
		a.wantCode(bob, walletLinkQ, map[string]any{"id": tks[0].ID}, "NOT_FOUND")
		a.wantCode(staff, walletLinkQ, map[string]any{"id": tks[0].ID}, "NOT_FOUND")
		a.wantCode("", walletLinkQ, map[string]any{"id": tks[0].ID}, "UNAUTHENTICATED")
	})
	t.Run("Revoked", func(t *testing.T) {
		a.must(a.admin, `mutation($id: ID!) { refundOrder(orderId: $id) { status } }`, map[string]any{"id": o.ID}, nil)
		a.wantCode(alice, walletLinkQ, map[string]any{"id": tks[0].ID}, "INVALID_STATE")
	})
}

// TestGoogleWalletUnavailable: a server without Google Wallet settings answers
// WALLET_UNAVAILABLE.
func TestGoogleWalletUnavailable(t *testing.T) {
	a := newTestApp(t)
	show, seats := a.onSaleShowtime()
	alice := a.token("alice", "customer")
	tk := a.tickets(alice, a.paid(alice, show, seats[:1], "k").ID)[0]
	a.wantCode(alice, walletLinkQ, map[string]any{"id": tk.ID}, "WALLET_UNAVAILABLE")
}

// TestGoogleWalletSettingsRefused: one Google setting without the other, a key file that
// is missing or no service account's key, or no public URL refuse the start naming the
// setting.
func TestGoogleWalletSettingsRefused(t *testing.T) {
	keyPath, _ := googleKeyFile(t)
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"type":"service_account","client_email":"a@b.c","private_key":"nope"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	real := []string{"-mysql-dsn", "root@tcp(127.0.0.1:3306)/seatflow", "-redis-url", "redis://127.0.0.1:6379/0",
		"-jwt-secret", "test-secret-0123456789", "-ticket-key-secret", "test-ticket-key-secret-0123456789abcdef",
		"-payment-provider", "test"}
	for name, c := range map[string]struct {
		flags []string
		want  string
	}{
		"KeyWithoutIssuer": {[]string{"-wallet-google-key", keyPath, "-public-url", "https://t.example"}, "SEATFLOW_WALLET_GOOGLE_ISSUER_ID"},
		"IssuerWithoutKey": {[]string{"-wallet-google-issuer-id", "3388000000012345678"}, "SEATFLOW_WALLET_GOOGLE_KEY"},
		"MissingKeyFile": {[]string{"-wallet-google-key", filepath.Join(t.TempDir(), "none.json"),
			"-wallet-google-issuer-id", "1", "-public-url", "https://t.example"}, "-wallet-google-key"},
		"BadKeyFile":  {[]string{"-wallet-google-key", bad, "-wallet-google-issuer-id", "1", "-public-url", "https://t.example"}, "no PEM"},
		"NoPublicURL": {[]string{"-wallet-google-key", keyPath, "-wallet-google-issuer-id", "1"}, "SEATFLOW_PUBLIC_URL"},
	} {
		t.Run(name, func(t *testing.T) {
			clearStores(t)
			_, _, err := ParseConfig("seatflow serve", append(append([]string{}, real...), c.flags...))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want a refusal naming %s", err, c.want)
			}
		})
	}
}

// TestGoogleWalletEmbedded: embedded mode with no Google setting signs links with a demo key
// kept beside its SQLite file, says loudly that Google refuses them, and its links verify
// with that key.
func TestGoogleWalletEmbedded(t *testing.T) {
	a := startEmbeddedTestApp(t)
	if !strings.Contains(a.logBuf.String(), "GOOGLE WALLET LINKS ARE DEMOS") {
		t.Errorf("no warning about the demo Google Wallet key in the log:\n%s", a.logBuf.String())
	}
	acc, err := googlewallet.LoadAccount(a.Config.SQLitePath + ".google-wallet-key.json")
	if err != nil {
		t.Fatalf("the demo key is not kept beside the database: %v", err)
	}
	pub, err := jwk.Import(&acc.Key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	hall := a.createHall("Hall 1", 2, 6)
	show := a.createShowtime(a.createMovie("Dune", 155), hall, testNow.Add(30*time.Hour))
	seats := a.openSales(show)
	alice := a.token("alice", "customer")
	tk := a.tickets(alice, a.paid(alice, show, seats[:1], "k").ID)[0]
	var out struct{ TicketWalletLink string }
	a.must(alice, walletLinkQ, map[string]any{"id": tk.ID}, &out)
	c, err := walletClaims(t, out.TicketWalletLink, pub)
	if err != nil {
		t.Fatalf("the embedded link does not verify with the demo key: %v", err)
	}
	if o := c.Payload.EventTicketObjects; len(o) != 1 || o[0].Barcode.Value != tk.Code ||
		!strings.HasPrefix(o[0].ID, googlewallet.DemoIssuerID+".") || len(c.Origins) != 1 || c.Origins[0] != "http://localhost:8080" {
		t.Fatalf("embedded claims %+v", c)
	}
}
