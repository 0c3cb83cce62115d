package app

import (
	"archive/zip"
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"seatflow/internal/auth"
	"seatflow/internal/tickets"
	"seatflow/internal/wallet"
)

// Apple Wallet passes: the route, its auth, the package Apple's devices read, the demo CA
// of embedded mode and the settings.

const applePassQ = `query($id: ID!) { order(id: $id) { tickets { id code status applePassUrl seat { id } showtime { id } } } }`

type passTicket struct {
	ID, Code, Status, ApplePassURL string
	Seat, Showtime                 struct{ ID string }
}

// passTickets reads an order's tickets with their pass links, as token's holder.
func (a *testApp) passTickets(token, orderID string) []passTicket {
	a.t.Helper()
	var out struct {
		Order struct{ Tickets []passTicket }
	}
	a.must(token, applePassQ, map[string]any{"id": orderID}, &out)
	return out.Order.Tickets
}

// walletFlags are the five Apple settings over demo files made in a temporary directory
// (a real certificate is Apple's to issue), the public URL, and the CA's file.
func walletFlags(t *testing.T) (flags []string, caFile string) {
	t.Helper()
	dir := t.TempDir()
	f := wallet.Files{Cert: filepath.Join(dir, "pass.pem"), Key: filepath.Join(dir, "pass-key.pem"), WWDR: filepath.Join(dir, "wwdr.pem")}
	if err := wallet.DemoFiles(f, "pass.com.example.tickets", "A1B2C3D4E5"); err != nil {
		t.Fatal(err)
	}
	return []string{"-wallet-apple-cert", f.Cert, "-wallet-apple-key", f.Key, "-wallet-apple-wwdr", f.WWDR,
		"-wallet-apple-pass-type-id", "pass.com.example.tickets", "-wallet-apple-team-id", "A1B2C3D4E5",
		"-public-url", "https://tickets.example/"}, f.WWDR
}

// getPass fetches a pass path (with its query) with an optional bearer token.
func (a *testApp) getPass(path, token string) (*http.Response, []byte) {
	a.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, a.srv.URL+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	return resp, b
}

// wantPassError fetches path and wants status with the JSON error code.
func (a *testApp) wantPassError(path, token string, status int, code string) {
	a.t.Helper()
	resp, b := a.getPass(path, token)
	var out struct{ Error struct{ Code string } }
	if resp.StatusCode != status || json.Unmarshal(b, &out) != nil || out.Error.Code != code {
		a.t.Fatalf("GET %s: %d %s, want %d with code %s", path, resp.StatusCode, b, status, code)
	}
}

// unpackPass checks a served pass's headers and unzips it.
func unpackPass(t *testing.T, resp *http.Response, b []byte) map[string][]byte {
	t.Helper()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/vnd.apple.pkpass" {
		t.Fatalf("pass: %d %s %.200s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	if _, err := http.ParseTime(resp.Header.Get("Last-Modified")); err != nil {
		t.Fatalf("Last-Modified %q: %v", resp.Header.Get("Last-Modified"), err)
	}
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		files[f.Name], _ = io.ReadAll(rc)
		rc.Close()
	}
	for _, name := range []string{"pass.json", "manifest.json", "signature", "icon.png", "logo.png"} {
		if len(files[name]) == 0 {
			t.Fatalf("the pass has no %s (files: %d)", name, len(files))
		}
	}
	return files
}

// checkSigned checks every manifest hash, and verifies the signature with openssl against
// caFile over the manifest; a tampered manifest must fail the same command.
func checkSigned(t *testing.T, files map[string][]byte, caFile string) {
	t.Helper()
	var manifest map[string]string
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if name == "manifest.json" || name == "signature" {
			continue
		}
		sum := sha1.Sum(b)
		if manifest[name] != hex.EncodeToString(sum[:]) {
			t.Errorf("manifest's SHA-1 of %s = %q, the file's is %x", name, manifest[name], sum)
		}
	}
	if len(manifest) != len(files)-2 {
		t.Errorf("manifest lists %d files, the pass has %d besides manifest and signature", len(manifest), len(files)-2)
	}
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatal("openssl is needed to verify the signature (apt-get install openssl)")
	}
	dir := t.TempDir()
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("signature", files["signature"])
	write("manifest.json", files["manifest.json"])
	write("tampered.json", bytes.Replace(files["manifest.json"], []byte(manifest["pass.json"]), []byte(strings.Repeat("0", 40)), 1))
	verify := func(content string) ([]byte, error) {
		cmd := exec.Command("openssl", "smime", "-verify", "-binary", "-inform", "DER", "-in", "signature",
			"-content", content, "-CAfile", caFile, "-purpose", "any", "-out", os.DevNull)
		cmd.Dir = dir
		return cmd.CombinedOutput()
	}
	if out, err := verify("manifest.json"); err != nil {
		t.Fatalf("openssl smime -verify: %v\n%s", err, out)
	}
	if out, err := verify("tampered.json"); err == nil {
		t.Fatalf("openssl verified the signature over a tampered manifest:\n%s", out)
	}
}

// passJSON reads pass.json and checks the keys Apple's reference requires or this pass
// sets, with their JSON types.
func passJSON(t *testing.T, files map[string][]byte) map[string]any {
	t.Helper()
	var p map[string]any
	if err := json.Unmarshal(files["pass.json"], &p); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"description", "organizationName", "passTypeIdentifier", "serialNumber", "teamIdentifier",
		"authenticationToken", "webServiceURL", "relevantDate", "expirationDate"} {
		if s, ok := p[k].(string); !ok || s == "" {
			t.Errorf("pass.json %s = %#v, want a string", k, p[k])
		}
	}
	if v, ok := p["formatVersion"].(float64); !ok || v != 1 {
		t.Errorf("formatVersion = %#v, want the number 1", p["formatVersion"])
	}
	for _, k := range []string{"relevantDate", "expirationDate"} {
		if _, err := time.Parse(time.RFC3339, p[k].(string)); err != nil {
			t.Errorf("%s %q is not RFC 3339: %v", k, p[k], err)
		}
	}
	if tok, _ := p["authenticationToken"].(string); len(tok) < 16 {
		t.Errorf("authenticationToken %q: Apple wants 16 characters or more", tok)
	}
	barcodes, ok := p["barcodes"].([]any)
	if !ok || len(barcodes) != 1 {
		t.Fatalf("barcodes = %#v, want an array of one", p["barcodes"])
	}
	for _, bc := range append(barcodes, p["barcode"]) {
		m, ok := bc.(map[string]any)
		if !ok || m["format"] != "PKBarcodeFormatQR" || m["messageEncoding"] != "iso-8859-1" || m["message"] == "" {
			t.Errorf("barcode = %#v", bc)
		}
	}
	ev, ok := p["eventTicket"].(map[string]any)
	if !ok {
		t.Fatalf("eventTicket = %#v, want an object", p["eventTicket"])
	}
	keys := map[string]bool{}
	for _, place := range []string{"headerFields", "primaryFields", "secondaryFields", "auxiliaryFields", "backFields"} {
		fields, ok := ev[place].([]any)
		if !ok {
			t.Fatalf("eventTicket.%s = %#v, want an array", place, ev[place])
		}
		for _, f := range fields {
			m, _ := f.(map[string]any)
			key, _ := m["key"].(string)
			if _, isString := m["value"].(string); key == "" || !isString || keys[key] {
				t.Errorf("eventTicket.%s field %#v: want a key unique in the pass and a value", place, f)
			}
			keys[key] = true
		}
	}
	return p
}

// fieldValue is the value of the pass field of key.
func fieldValue(p map[string]any, key string) string {
	for _, place := range p["eventTicket"].(map[string]any) {
		for _, f := range place.([]any) {
			if m := f.(map[string]any); m["key"] == key {
				return m["value"].(string)
			}
		}
	}
	return ""
}

// TestApplePass: a paid ticket's pass, by its signed link and by its owner's token, is a
// .pkpass whose manifest and signature check out (openssl, against the WWDR of the
// settings), whose pass.json is an eventTicket with the ticket's code as its barcode: that
// code opens the door. Someone else's ticket is NOT_FOUND, a bad or expired link
// UNAUTHENTICATED, a refunded seat's pass is voided, and a reschedule moves the pass (its
// dates, its code, its Last-Modified).
func TestApplePass(t *testing.T) {
	flags, caFile := walletFlags(t)
	a := newTestApp(t, append(flags, "-timezone", "Europe/Paris")...)
	show, seats := a.onSaleShowtime()
	alice, bob, staff := a.token("alice", "customer"), a.token("bob", "customer"), a.token("door-1", "staff")
	o := a.paid(alice, show, seats[:2], "k")
	tks := a.passTickets(alice, o.ID)
	tk := tks[0]
	if !strings.HasPrefix(tk.ApplePassURL, "/tickets/"+tk.ID+"/pass.pkpass?exp=") || !strings.Contains(tk.ApplePassURL, "&sig=") {
		t.Fatalf("applePassUrl = %q", tk.ApplePassURL)
	}
	path := "/tickets/" + tk.ID + "/pass.pkpass"

	resp, b := a.getPass(tk.ApplePassURL, "")
	files := unpackPass(t, resp, b)
	checkSigned(t, files, caFile)
	p := passJSON(t, files)
	if p["serialNumber"] != tk.ID || p["passTypeIdentifier"] != "pass.com.example.tickets" || p["teamIdentifier"] != "A1B2C3D4E5" ||
		p["webServiceURL"] != "https://tickets.example/passkit" || p["voided"] != nil {
		t.Errorf("pass.json = %s", files["pass.json"])
	}
	if want := wallet.AuthenticationToken(authKey(a, "wallet-pass"), tk.ID); p["authenticationToken"] != want {
		t.Errorf("authenticationToken = %v, want %s", p["authenticationToken"], want)
	}
	// The showtime starts at testNow + 30 h = 2030-03-11 15:00 UTC, 16:00 in Paris.
	if p["relevantDate"] != "2030-03-11T16:00:00+01:00" || !strings.HasPrefix(fieldValue(p, "doors"), "Mon 11 Mar 2030, 16:00 (Europe/Paris)") ||
		fieldValue(p, "movie") != "Dune" || fieldValue(p, "hall") != "Hall 1" || fieldValue(p, "seat") != "Row A, seat 1" ||
		fieldValue(p, "ticketType") != "Adult" {
		t.Errorf("pass.json = %s", files["pass.json"])
	}
	code := p["barcodes"].([]any)[0].(map[string]any)["message"].(string)
	if code != tk.Code {
		t.Fatalf("the barcode %q is not the ticket's code %q", code, tk.Code)
	}

	t.Run("OwnersToken", func(t *testing.T) {
		resp, b := a.getPass(path, alice)
		if f := unpackPass(t, resp, b); !bytes.Equal(f["pass.json"], files["pass.json"]) {
			t.Errorf("the owner's pass differs from the link's:\n%s\n%s", f["pass.json"], files["pass.json"])
		}
		again, _ := a.getPass(path, alice)
		if again.Header.Get("Last-Modified") != resp.Header.Get("Last-Modified") {
			t.Errorf("Last-Modified moved with nothing changed")
		}
		// A phone's copy that is current: 304, answered before any pass is signed.
		req, _ := http.NewRequest(http.MethodGet, a.srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+alice)
		req.Header.Set("If-Modified-Since", resp.Header.Get("Last-Modified"))
		cur, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		cur.Body.Close()
		if cur.StatusCode != http.StatusNotModified {
			t.Errorf("If-Modified-Since its Last-Modified: %d, want 304", cur.StatusCode)
		}
	})
	t.Run("Refusals", func(t *testing.T) {
		a.wantPassError(path, bob, http.StatusNotFound, "NOT_FOUND")
		a.wantPassError("/tickets/"+tks[1].ID+"/pass.pkpass", bob, http.StatusNotFound, "NOT_FOUND")
		a.wantPassError("/tickets/not-an-id/pass.pkpass", alice, http.StatusNotFound, "NOT_FOUND")
		a.wantPassError(path, "", http.StatusUnauthorized, "UNAUTHENTICATED")
		a.wantPassError(path, "not-a-token", http.StatusUnauthorized, "UNAUTHENTICATED")
		// The link of one ticket does not open another, nor with a changed signature.
		_, query, _ := strings.Cut(tk.ApplePassURL, "?")
		a.wantPassError("/tickets/"+tks[1].ID+"/pass.pkpass?"+query, "", http.StatusUnauthorized, "UNAUTHENTICATED")
		a.wantPassError(tk.ApplePassURL[:len(tk.ApplePassURL)-1]+"0", "", http.StatusUnauthorized, "UNAUTHENTICATED")
		a.wantPassError(path+"?exp=9999999999", "", http.StatusUnauthorized, "UNAUTHENTICATED")
	})
	t.Run("TheBarcodeOpensTheDoor", func(t *testing.T) {
		a.doorOpen()
		var out struct{ CheckIn checkInOut }
		a.must(staff, checkInQ, map[string]any{"show": show, "code": code}, &out)
		if out.CheckIn.Status != "ADMITTED" || out.CheckIn.Ticket == nil || out.CheckIn.Ticket.ID != tk.ID {
			t.Fatalf("checkIn with the pass's barcode = %+v, want ADMITTED", out.CheckIn)
		}
		// The link read a day and more ago has expired.
		a.wantPassError(tk.ApplePassURL, "", http.StatusUnauthorized, "UNAUTHENTICATED")
	})
	t.Run("RefundedSeatIsVoided", func(t *testing.T) {
		before, _ := a.getPass("/tickets/"+tks[1].ID+"/pass.pkpass", alice)
		a.clock.Advance(time.Minute)
		a.must(a.admin, refundSeatsQ, map[string]any{"id": o.ID, "seats": []string{tks[1].Seat.ID}}, nil)
		resp, b := a.getPass("/tickets/"+tks[1].ID+"/pass.pkpass", alice)
		files := unpackPass(t, resp, b)
		checkSigned(t, files, caFile)
		if p := passJSON(t, files); p["voided"] != true {
			t.Fatalf("a refunded seat's pass: voided = %v, want true", p["voided"])
		}
		was, _ := http.ParseTime(before.Header.Get("Last-Modified"))
		now, _ := http.ParseTime(resp.Header.Get("Last-Modified"))
		if !now.After(was) {
			t.Errorf("Last-Modified %v did not move past %v with the refund", now, was)
		}
		// A fresh link of the revoked ticket still serves its (voided) pass.
		if tks := a.passTickets(alice, o.ID); tks[1].Status != "REVOKED" {
			t.Fatalf("ticket status %s, want REVOKED", tks[1].Status)
		} else if resp, _ := a.getPass(tks[1].ApplePassURL, ""); resp.StatusCode != http.StatusOK {
			t.Fatalf("a revoked ticket's link: %d, want 200", resp.StatusCode)
		}
	})
	t.Run("RescheduleMovesThePass", func(t *testing.T) {
		before, _ := a.getPass(path, alice)
		a.clock.Advance(time.Minute)
		a.must(a.admin, `mutation($id: ID!, $at: Time!) { rescheduleShowtime(id: $id, startsAt: $at) { id } }`,
			map[string]any{"id": show, "at": testNow.Add(48 * time.Hour).Format(time.RFC3339)}, nil)
		resp, b := a.getPass(path, alice)
		p := passJSON(t, unpackPass(t, resp, b))
		if p["relevantDate"] != "2030-03-12T10:00:00+01:00" {
			t.Errorf("relevantDate after the reschedule = %v, want the new start in Paris time", p["relevantDate"])
		}
		moved := p["barcodes"].([]any)[0].(map[string]any)["message"]
		if now := a.passTickets(alice, o.ID)[0].Code; moved == code || moved != now {
			t.Errorf("the barcode after the reschedule is %.20v…, want the ticket's new code %.20v…", moved, now)
		}
		was, _ := http.ParseTime(before.Header.Get("Last-Modified"))
		now, _ := http.ParseTime(resp.Header.Get("Last-Modified"))
		if !now.After(was) {
			t.Errorf("Last-Modified %v did not move past %v with the reschedule", now, was)
		}
	})
}

// authKey is the instance's key of purpose, as the wallet derives it.
func authKey(a *testApp, purpose string) []byte {
	return auth.DeriveKey([]byte(a.Config.JWTSecret), purpose)
}

// TestApplePassEmbedded: embedded mode with no Apple settings makes a demo CA and pass
// certificate beside the SQLite file at first start, keeps them across a restart, says so
// loudly, and its passes verify against that CA.
func TestApplePassEmbedded(t *testing.T) {
	a := startEmbeddedTestApp(t)
	if !strings.Contains(a.logBuf.String(), "WALLET PASSES ARE DEMO PASSES") {
		t.Fatalf("embedded log: %q, want the demo passes' warning", a.logBuf.String())
	}
	caFile := a.Config.SQLitePath + ".wallet-demo-ca.pem"
	ca, err := os.ReadFile(caFile)
	if err != nil || !bytes.Contains(ca, []byte("BEGIN CERTIFICATE")) {
		t.Fatalf("demo CA beside the database: %v", err)
	}
	if fi, err := os.Stat(a.Config.SQLitePath + ".wallet-demo-pass-key.pem"); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("demo key: %v %v, want mode 0600", fi, err)
	}
	if _, err := a.demoWalletFiles(); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(caFile); !bytes.Equal(again, ca) {
		t.Fatal("a restart made another demo CA: passes made before it would no longer verify")
	}
	show, seats := a.onSaleShowtime()
	alice := a.token("alice", "customer")
	o := a.paid(alice, show, seats[:1], "k")
	tk := a.passTickets(alice, o.ID)[0]
	resp, b := a.getPass(tk.ApplePassURL, "")
	files := unpackPass(t, resp, b)
	checkSigned(t, files, caFile)
	if p := passJSON(t, files); p["passTypeIdentifier"] != demoPassTypeID || p["teamIdentifier"] != demoTeamID ||
		p["webServiceURL"] != embeddedPublicURL+"/passkit" {
		t.Errorf("demo pass.json = %s", files["pass.json"])
	}
}

// TestAppleWalletSettings: the five settings go together (one missing refuses to start,
// naming it), with SEATFLOW_PUBLIC_URL outside embedded mode; a file that does not load
// or a key not the certificate's refuses to start naming its setting; none set outside
// embedded mode turns the passes off: WALLET_UNAVAILABLE.
func TestAppleWalletSettings(t *testing.T) {
	clearStores(t)
	flags, _ := walletFlags(t)
	real := []string{"-mysql-dsn", "root@tcp(127.0.0.1:3306)/x", "-redis-url", "redis://127.0.0.1:6379/0", "-jwt-secret", "0123456789abcdef",
		"-ticket-key-secret", "0123456789abcdef0123456789abcdef", "-payment-provider", "test"}
	for i := 0; i < 10; i += 2 {
		without := append(append([]string{}, flags[:i]...), flags[i+2:]...)
		setting := envName(strings.TrimPrefix(flags[i], "-"))
		for mode, base := range map[string][]string{"Real": real, "Embedded": nil} {
			t.Run(mode+"Without"+setting, func(t *testing.T) {
				_, _, err := ParseConfig("test", append(append([]string{}, base...), without...))
				if err == nil || !strings.Contains(err.Error(), setting) {
					t.Fatalf("err = %v, want a refusal naming %s", err, setting)
				}
			})
		}
	}
	t.Run("RealWithoutPublicURL", func(t *testing.T) {
		_, _, err := ParseConfig("test", append(append([]string{}, real...), flags[:10]...))
		if err == nil || !strings.Contains(err.Error(), "SEATFLOW_PUBLIC_URL") {
			t.Fatalf("err = %v, want a refusal naming SEATFLOW_PUBLIC_URL", err)
		}
	})
	t.Run("AllFive", func(t *testing.T) {
		if _, _, err := ParseConfig("test", append(append([]string{}, real...), flags...)); err != nil {
			t.Fatal(err)
		}
	})

	// A file that does not load: wire refuses the start, naming the setting.
	junk := filepath.Join(t.TempDir(), "junk.pem")
	if err := os.WriteFile(junk, []byte("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	other, _ := walletFlags(t)
	for _, c := range []struct {
		name, setting string
		replace       int // index of the flag's value replaced
		with          string
	}{
		{"CertDoesNotParse", "SEATFLOW_WALLET_APPLE_CERT", 1, junk},
		{"WWDRDoesNotParse", "SEATFLOW_WALLET_APPLE_WWDR", 5, junk},
		{"KeyIsACertificate", "SEATFLOW_WALLET_APPLE_KEY", 3, flags[1]},
		{"KeyOfAnotherCertificate", "SEATFLOW_WALLET_APPLE_KEY", 3, other[3]},
		{"WWDRDidNotIssueIt", "SEATFLOW_WALLET_APPLE_WWDR", 5, other[5]},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := append([]string{}, flags...)
			bad[c.replace] = c.with
			cfg, _, err := ParseConfig("test", append(append([]string{}, real...), bad...))
			if err != nil {
				t.Fatal(err)
			}
			a := &App{Config: cfg, Tickets: &tickets.Service{}}
			if err := a.wireWallet(); err == nil || !strings.Contains(err.Error(), c.setting) {
				t.Fatalf("wire: %v, want a refusal naming %s", err, c.setting)
			}
		})
	}

	t.Run("NoneSetIsOff", func(t *testing.T) {
		a := newTestApp(t)
		show, seats := a.onSaleShowtime()
		alice := a.token("alice", "customer")
		o := a.paid(alice, show, seats[:1], "k")
		r := a.do(alice, applePassQ, map[string]any{"id": o.ID})
		if r.Code() != "WALLET_UNAVAILABLE" {
			t.Fatalf("applePassUrl without Apple settings: %+v, want WALLET_UNAVAILABLE", r.Errors)
		}
		tk := a.tickets(alice, o.ID)[0]
		a.wantPassError("/tickets/"+tk.ID+"/pass.pkpass", alice, http.StatusNotImplemented, "WALLET_UNAVAILABLE")
		if strings.Contains(a.logBuf.String(), "DEMO PASSES") {
			t.Error("a real-mode instance without Apple settings speaks of demo passes")
		}
	})
}
