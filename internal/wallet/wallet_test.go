package wallet

import (
	"archive/zip"
	"bytes"
	"crypto/sha1"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smallstep/pkcs7"

	"seatflow"
)

var now = time.Date(2030, 3, 10, 9, 0, 0, 0, time.UTC)

// demoSigner writes demo files to a temporary directory and loads them.
func demoSigner(t *testing.T) (*Signer, Files) {
	t.Helper()
	dir := t.TempDir()
	f := Files{Cert: filepath.Join(dir, "pass.pem"), Key: filepath.Join(dir, "pass-key.pem"), WWDR: filepath.Join(dir, "wwdr.pem")}
	if err := DemoFiles(f, "pass.dev.seatflow.demo", "SEATFLOWDEMO"); err != nil {
		t.Fatal(err)
	}
	s, err := LoadSigner(f)
	if err != nil {
		t.Fatal(err)
	}
	return s, f
}

func ticketed() Ticketed {
	revoked := now.Add(time.Hour)
	return Ticketed{
		Ticket: &seatflow.Ticket{ID: 7, OrderID: 3, ShowtimeID: 2, SeatID: 11, TicketType: seatflow.TicketChild,
			CreatedAt: now, RevokedAt: &revoked},
		Showtime: &seatflow.Showtime{ID: 2, StartsAt: time.Date(2030, 3, 11, 18, 0, 0, 0, time.UTC),
			EndsAt: time.Date(2030, 3, 11, 20, 35, 0, 0, time.UTC), UpdatedAt: now.Add(-time.Hour)},
		Movie:  &seatflow.Movie{Title: "Dune"},
		Cinema: &seatflow.Cinema{Name: "Rex", TimeZone: "Europe/Paris"},
		Hall:   &seatflow.Hall{Name: "Hall 1"},
		Seat:   &seatflow.Seat{Row: "B", Number: 5},
		Code:   "header.payload.signature",
	}
}

// TestPackage: a demo-signed pass unzips to its five files, every manifest hash matches,
// the signature verifies against the demo CA over the manifest (and not over another),
// and pass.json says what the ticket is, in the cinema's zone.
func TestPackage(t *testing.T) {
	s, files := demoSigner(t)
	tk := ticketed()
	b, err := Package(NewPass(Identity{PassTypeID: "pass.dev.seatflow.demo", TeamID: "SEATFLOWDEMO",
		WebServiceURL: "https://tickets.example/passkit", TokenKey: []byte("k")}, tk), s, LastUpdated(tk.Showtime, tk.Ticket))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	for _, f := range zr.File {
		rc, _ := f.Open()
		got[f.Name], _ = io.ReadAll(rc)
		rc.Close()
	}
	var manifest map[string]string
	if err := json.Unmarshal(got["manifest.json"], &manifest); err != nil || len(manifest) != 3 {
		t.Fatalf("manifest = %v (%v), want 3 files", manifest, err)
	}
	for name, sum := range manifest {
		h := sha1.Sum(got[name])
		if hex.EncodeToString(h[:]) != sum {
			t.Errorf("manifest's SHA-1 of %s = %s, the file's is %x", name, sum, h)
		}
	}
	pemCA, _ := os.ReadFile(files.WWDR)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemCA)
	verify := func(content []byte) error {
		p7, err := pkcs7.Parse(got["signature"])
		if err != nil {
			return err
		}
		p7.Content = content
		return p7.VerifyWithChain(pool)
	}
	if err := verify(got["manifest.json"]); err != nil {
		t.Fatalf("the signature does not verify: %v", err)
	}
	if err := verify(bytes.Replace(got["manifest.json"], []byte(`"`), []byte(`'`), 1)); err == nil {
		t.Fatal("the signature verifies over a changed manifest")
	}

	var p Pass
	if err := json.Unmarshal(got["pass.json"], &p); err != nil {
		t.Fatal(err)
	}
	if p.SerialNumber != SerialNumber(7) || p.AuthenticationToken != AuthenticationToken([]byte("k"), SerialNumber(7)) ||
		len(p.AuthenticationToken) != 64 || !p.Voided || p.Barcodes[0].Message != tk.Code || p.Barcode.Message != tk.Code {
		t.Errorf("pass = %+v", p)
	}
	if p.RelevantDate != "2030-03-11T19:00:00+01:00" || p.ExpirationDate != "2030-03-11T21:35:00+01:00" {
		t.Errorf("relevantDate %s, expirationDate %s: want them in Paris time", p.RelevantDate, p.ExpirationDate)
	}
	fields := map[string]string{}
	for _, f := range append(append(p.EventTicket.AuxiliaryFields, p.EventTicket.BackFields...), p.EventTicket.SecondaryFields...) {
		fields[f.Key] = f.Value
	}
	if fields["seat"] != "Row B, seat 5" || fields["ticketType"] != "Child" || fields["hall"] != "Hall 1" ||
		!strings.HasPrefix(fields["doors"], "Mon 11 Mar 2030, 19:00 (Europe/Paris)") {
		t.Errorf("fields = %v", fields)
	}
	if want := *tk.Ticket.RevokedAt; !LastUpdated(tk.Showtime, tk.Ticket).Equal(want) {
		t.Errorf("LastUpdated = %v, want the revocation %v", LastUpdated(tk.Showtime, tk.Ticket), want)
	}
}

// TestLoadSignerRefusals: each bad file is refused naming its setting.
func TestLoadSignerRefusals(t *testing.T) {
	_, f := demoSigner(t)
	_, other := demoSigner(t)
	junk := filepath.Join(t.TempDir(), "junk.pem")
	if err := os.WriteFile(junk, []byte("not a pem file"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		files   Files
		setting string
	}{
		"MissingCert":        {Files{Cert: "/nonexistent/pass.pem", Key: f.Key, WWDR: f.WWDR}, SettingCert},
		"JunkCert":           {Files{Cert: junk, Key: f.Key, WWDR: f.WWDR}, SettingCert},
		"JunkKey":            {Files{Cert: f.Cert, Key: junk, WWDR: f.WWDR}, SettingKey},
		"KeyOfAnotherCert":   {Files{Cert: f.Cert, Key: other.Key, WWDR: f.WWDR}, SettingKey},
		"WWDRNotTheIssuer":   {Files{Cert: f.Cert, Key: f.Key, WWDR: other.WWDR}, SettingWWDR},
		"CertGivenAsTheWWDR": {Files{Cert: f.Cert, Key: f.Key, WWDR: junk}, SettingWWDR},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := LoadSigner(c.files)
			var se *SettingError
			if !errors.As(err, &se) || se.Setting != c.setting || !strings.Contains(err.Error(), c.setting) {
				t.Fatalf("err = %v, want one naming %s", err, c.setting)
			}
		})
	}
}

// TestLinks: a link verifies until it expires, for its own ticket only, unchanged.
func TestLinks(t *testing.T) {
	clock := now
	s := &Service{Signer: &Signer{}, LinkKey: []byte("link-key"), Now: func() time.Time { return clock }}
	link, err := s.Link(7)
	if err != nil {
		t.Fatal(err)
	}
	path, query, _ := strings.Cut(link, "?")
	if path != PassPath(SerialNumber(7)) {
		t.Fatalf("link path %s", path)
	}
	exp, sig, _ := strings.Cut(query, "&")
	exp, sig = strings.TrimPrefix(exp, "exp="), strings.TrimPrefix(sig, "sig=")
	if !s.validLink(SerialNumber(7), exp, sig) {
		t.Fatal("a fresh link is refused")
	}
	if s.validLink(SerialNumber(8), exp, sig) || s.validLink(SerialNumber(7), exp+"0", sig) {
		t.Fatal("a link verifies for another ticket or expiry")
	}
	clock = clock.Add(LinkTTL + time.Second)
	if s.validLink(SerialNumber(7), exp, sig) {
		t.Fatal("an expired link is accepted")
	}
	if _, err := (&Service{}).Link(7); seatflow.ErrorCode(err) != seatflow.EWALLETUNAVAILABLE {
		t.Fatalf("Link without a signer: %v, want WALLET_UNAVAILABLE", err)
	}
}
