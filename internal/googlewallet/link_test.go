package googlewallet

import (
	"crypto/rsa"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"seatflow"
)

// testIssuer writes a service account's key file as Google issues it and loads it back.
func testIssuer(t *testing.T) (*Issuer, *rsa.PublicKey) {
	t.Helper()
	a, err := NewDemoAccount()
	if err != nil {
		t.Fatal(err)
	}
	a.Email = "tickets@cinema-test.iam.gserviceaccount.com"
	b, err := KeyFile(a)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "key.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadAccount(path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)
	return &Issuer{Account: loaded, IssuerID: "3388000000012345678", Origin: "https://tickets.example",
		Now: func() time.Time { return now }}, &a.Key.PublicKey
}

func testTicket() *Ticket {
	start := time.Date(2030, 5, 2, 18, 30, 0, 0, time.UTC)
	st := &seatflow.Showtime{ID: 7, StartsAt: start, EndsAt: start.Add(2 * time.Hour)}
	return &Ticket{
		Ticket:   &seatflow.Ticket{ID: 42, ShowtimeID: 7, SeatID: 3, TicketType: seatflow.TicketChild},
		Showtime: st,
		Movie:    &seatflow.Movie{Title: "Arrival"},
		Cinema:   &seatflow.Cinema{Name: "Odeon", TimeZone: "Europe/Paris", Address: "1 Rue de la Paix, Paris"},
		Hall:     &seatflow.Hall{Name: "Hall 1"},
		Seat:     &seatflow.Seat{ID: 3, Row: "C", Number: 12},
		Code:     "eyJhbGciOiJFZERTQSJ9.eyJ0a3QiOiJ4In0.c2ln",
	}
}

// verify checks the JWT of link with go-jose against pub and returns its claims.
func verify(t *testing.T, link string, pub *rsa.PublicKey) (map[string]any, error) {
	t.Helper()
	if !strings.HasPrefix(link, SaveURL) {
		t.Fatalf("link %q does not start with %s", link, SaveURL)
	}
	sig, err := jose.ParseSigned(strings.TrimPrefix(link, SaveURL), []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return nil, err
	}
	body, err := sig.Verify(pub)
	if err != nil {
		return nil, err
	}
	var claims map[string]any
	if err := json.Unmarshal(body, &claims); err != nil {
		t.Fatal(err)
	}
	return claims, nil
}

func TestLinkVerifiesAndCarriesTheTicket(t *testing.T) {
	iss, pub := testIssuer(t)
	tk := testTicket()
	link, err := iss.Link(tk)
	if err != nil {
		t.Fatal(err)
	}
	claims, err := verify(t, link, pub)
	if err != nil {
		t.Fatalf("the link's JWT does not verify: %v", err)
	}
	for k, want := range map[string]any{"iss": "tickets@cinema-test.iam.gserviceaccount.com", "aud": "google",
		"typ": "savetowallet", "iat": float64(time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC).Unix())} {
		if claims[k] != want {
			t.Errorf("claim %s = %v, want %v", k, claims[k], want)
		}
	}
	if o, _ := claims["origins"].([]any); len(o) != 1 || o[0] != "https://tickets.example" {
		t.Errorf("origins = %v", claims["origins"])
	}
	raw, _ := json.Marshal(claims["payload"])
	var p Payload
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.EventTicketClasses) != 1 || len(p.EventTicketObjects) != 1 {
		t.Fatalf("payload %s: want one class and one object", raw)
	}
	c, o := p.EventTicketClasses[0], p.EventTicketObjects[0]
	if c.ID != "3388000000012345678.showtime-7" || o.ClassID != c.ID || c.EventID != c.ID || o.ID != "3388000000012345678.ticket-42" {
		t.Errorf("ids: class %q, object %q of class %q", c.ID, o.ID, o.ClassID)
	}
	if c.EventName.DefaultValue.Value != "Arrival" || c.Venue.Name.DefaultValue.Value != "Odeon, Hall 1" ||
		c.Venue.Address.DefaultValue.Value != "1 Rue de la Paix, Paris" || c.ReviewStatus == "" {
		t.Errorf("class %+v", c)
	}
	// 18:30 UTC is 20:30 in Paris (summer time): the cinema's own time.
	if c.DateTime.Start != "2030-05-02T20:30:00+02:00" || c.DateTime.End != "2030-05-02T22:30:00+02:00" {
		t.Errorf("dateTime %+v", c.DateTime)
	}
	if o.State != "ACTIVE" || o.Barcode.Type != "QR_CODE" || o.Barcode.Value != tk.Code {
		t.Errorf("object %+v: want ACTIVE with the ticket's code as QR_CODE", o)
	}
	if o.SeatInfo.Row.DefaultValue.Value != "C" || o.SeatInfo.Seat.DefaultValue.Value != "12" ||
		o.TicketType.DefaultValue.Value != "child" {
		t.Errorf("seat %+v, type %+v", o.SeatInfo, o.TicketType)
	}
}

func TestTamperedLinkIsRejected(t *testing.T) {
	iss, pub := testIssuer(t)
	link, err := iss.Link(testTicket())
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(strings.TrimPrefix(link, SaveURL), ".")
	other := testTicket()
	other.Code = "another.code.here"
	forged, _ := iss.Link(other)
	// The other link's payload under the first link's signature.
	parts[1] = strings.Split(strings.TrimPrefix(forged, SaveURL), ".")[1]
	if _, err := verify(t, SaveURL+strings.Join(parts, "."), pub); err == nil {
		t.Fatal("a JWT with a changed payload verified")
	}
	stranger, _ := NewDemoAccount()
	if _, err := verify(t, link, &stranger.Key.PublicKey); err == nil {
		t.Fatal("the JWT verified with another key")
	}
}

func TestParseAccountRefusals(t *testing.T) {
	a, _ := NewDemoAccount()
	good, _ := KeyFile(a)
	var m map[string]any
	_ = json.Unmarshal(good, &m)
	with := func(k string, v any) []byte {
		c := map[string]any{}
		for kk, vv := range m {
			c[kk] = vv
		}
		c[k] = v
		b, _ := json.Marshal(c)
		return b
	}
	for name, c := range map[string]struct {
		file []byte
		want string
	}{
		"not json":   {[]byte("-----BEGIN PRIVATE KEY-----"), "not a service account"},
		"wrong type": {with("type", "authorized_user"), "service_account"},
		"no email":   {with("client_email", ""), "client_email"},
		"no pem":     {with("private_key", "abc"), "no PEM"},
		"bad key":    {with("private_key", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), "no PKCS#8"},
	} {
		if _, err := ParseAccount(c.file); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.want)
		}
	}
	if _, err := LoadAccount(filepath.Join(t.TempDir(), "missing.json")); err == nil || !strings.Contains(err.Error(), "cannot read") {
		t.Errorf("a missing file: %v", err)
	}
}

func TestDemoAccountIsKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seatflow.db.google-wallet-key.json")
	a, err := DemoAccount(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := DemoAccount(path)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Key.Equal(b.Key) || a.Email != DemoEmail {
		t.Fatal("the demo key changed between two starts")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("the demo key file's mode is %v, want 0600", fi.Mode().Perm())
	}
}
