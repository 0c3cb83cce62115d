package app

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"seatflow/internal/auth"
	"seatflow/internal/passkit"
	"seatflow/internal/wallet"
)

// passKitCall sends method path to the instance with the pass's ApplePass token ("" for
// none) and body, and returns the status and the body.
func (a *testApp) passKitCall(method, path, token, body string, header ...string) (int, string, http.Header) {
	a.t.Helper()
	req, err := http.NewRequest(method, a.srv.URL+path, strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "ApplePass "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), res.Header
}

// updatedSerials lists device's passes updated since tag ("" = all).
func (a *testApp) updatedSerials(device, since string) (int, []string, string) {
	a.t.Helper()
	path := "/passkit/v1/devices/" + device + "/registrations/" + a.PassKit.PassTypeID
	if since != "" {
		path += "?passesUpdatedSince=" + since
	}
	status, body, _ := a.passKitCall("GET", path, "", "")
	var out struct {
		SerialNumbers []string
		LastUpdated   string
	}
	if status == http.StatusOK {
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			a.t.Fatalf("%v in %s", err, body)
		}
	}
	return status, out.SerialNumbers, out.LastUpdated
}

// TestPassKitUpdates: a phone registers for its tickets' passes with their tokens (derived
// from the instance's secret); a rescheduled showtime (the admin's mutation) lists both
// passes as updated and pushes the device once; a refunded seat's pass is listed as updated
// alone, a cancelled showtime's both, each change pushed once; the pass route answers 304
// while the phone's copy is current.
func TestPassKitUpdates(t *testing.T) {
	flags, _ := walletFlags(t)
	passKitUpdates(t, newTestApp(t, flags...))
}

// TestPassKitUpdatesEmbedded: the same on the embedded stores, whose passes have the demo
// pass type.
func TestPassKitUpdatesEmbedded(t *testing.T) {
	a := startEmbeddedTestApp(t)
	if a.PassKit.PassTypeID != demoPassTypeID {
		t.Fatalf("embedded pass type %q, want %q", a.PassKit.PassTypeID, demoPassTypeID)
	}
	passKitUpdates(t, a)
}

func passKitUpdates(t *testing.T, a *testApp) {
	passType := a.PassKit.PassTypeID
	rec, ok := a.PassKit.Pusher.(*passkit.Recorder)
	if !ok {
		t.Fatalf("SEATFLOW_WALLET_APNS=off: pusher %T, want the recorder", a.PassKit.Pusher)
	}
	show, seats := a.onSaleShowtime()
	alice := a.token("alice", "customer")
	o := a.paid(alice, show, seats[:2], "passes")
	tks := a.tickets(alice, o.ID)
	key := auth.DeriveKey([]byte(a.Config.JWTSecret), "wallet-pass")
	const device, pushToken = "6b3f0e2a9c1d4e5f", "00aa11bb22cc33dd44ee55ff66778899aabbccddeeff00112233445566778899"
	for _, tk := range tks {
		path := "/passkit/v1/devices/" + device + "/registrations/" + passType + "/" + tk.ID
		body := `{"pushToken":"` + pushToken + `"}`
		if status, _, _ := a.passKitCall("POST", path, wallet.AuthenticationToken([]byte("another secret"), tk.ID), body); status != http.StatusUnauthorized {
			t.Fatalf("register with another instance's token: %d, want 401", status)
		}
		if status, got, _ := a.passKitCall("POST", path, wallet.AuthenticationToken(key, tk.ID), body); status != http.StatusCreated {
			t.Fatalf("register for %s: %d %s", tk.ID, status, got)
		}
	}
	status, serials, tag := a.updatedSerials(device, "")
	if status != http.StatusOK || len(serials) != 2 {
		t.Fatalf("passes of the device: %d %v", status, serials)
	}
	if status, _, _ := a.updatedSerials(device, tag); status != http.StatusNoContent {
		t.Fatalf("passes updated since their tag: %d, want 204", status)
	}
	passPath := "/passkit/v1/passes/" + passType + "/" + tks[0].ID
	token0 := wallet.AuthenticationToken(key, tks[0].ID)
	lastModified := time.UnixMicro(mustInt(t, tag)).UTC().Format(http.TimeFormat)
	if status, _, _ := a.passKitCall("GET", passPath, token0, "", "If-Modified-Since", lastModified); status != http.StatusNotModified {
		t.Fatalf("the pass If-Modified-Since its time: %d, want 304", status)
	}
	if status, _, _ := a.passKitCall("GET", passPath, "", "", "If-Modified-Since", lastModified); status != http.StatusUnauthorized {
		t.Fatalf("the pass without its token: %d, want 401", status)
	}
	if n, err := a.PassKit.PushDue(t.Context()); err != nil || n != 0 || len(rec.Pushes()) != 0 {
		t.Fatalf("pushes before any change: %d %v %v", n, err, rec.Pushes())
	}

	a.clock.Advance(time.Minute)
	a.must(a.admin, `mutation($id: ID!, $at: Time!) { rescheduleShowtime(id: $id, startsAt: $at) { id } }`,
		map[string]any{"id": show, "at": testNow.Add(32 * time.Hour).Format(time.RFC3339)}, nil)
	status, serials, tag2 := a.updatedSerials(device, tag)
	if status != http.StatusOK || !slices.Equal(sorted(serials), sorted([]string{tks[0].ID, tks[1].ID})) || tag2 <= tag {
		t.Fatalf("after the reschedule: %d %v %q (before %q), want both passes and a later tag", status, serials, tag2, tag)
	}
	// The pass itself when this instance makes passes (package wallet), else 503.
	status, _, h := a.passKitCall("GET", passPath, token0, "", "If-Modified-Since", lastModified)
	switch {
	case a.PassKit.Passes == nil && status != http.StatusServiceUnavailable,
		a.PassKit.Passes != nil && (status != http.StatusOK || h.Get("Content-Type") != "application/vnd.apple.pkpass" ||
			h.Get("Last-Modified") == lastModified):
		t.Fatalf("the rescheduled pass since its old time: %d %s Last-Modified %q", status, h.Get("Content-Type"), h.Get("Last-Modified"))
	}
	if _, err := a.PassKit.PushDue(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := a.PassKit.PushDue(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := rec.Pushes(); !slices.Equal(got, []string{pushToken}) {
		t.Fatalf("pushes after the reschedule: %v, want the device once", got)
	}

	a.clock.Advance(time.Minute)
	a.must(a.admin, `mutation($id: ID!, $seats: [ID!]!) { refundSeats(orderId: $id, seatIds: $seats) { id } }`,
		map[string]any{"id": o.ID, "seats": []string{tks[1].Seat.ID}}, nil)
	status, serials, tag3 := a.updatedSerials(device, tag2)
	if status != http.StatusOK || !slices.Equal(serials, []string{tks[1].ID}) || tag3 <= tag2 {
		t.Fatalf("after refunding a seat: %d %v %q, want its pass alone", status, serials, tag3)
	}
	if _, err := a.PassKit.PushDue(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := rec.Pushes(); len(got) != 2 {
		t.Fatalf("pushes after the refund: %v, want a second one", got)
	}
	if status, _, _ := a.updatedSerials(device, tag3); status != http.StatusNoContent {
		t.Fatalf("nothing changed since the refund: %d, want 204", status)
	}

	a.clock.Advance(time.Minute)
	a.must(a.admin, `mutation($id: ID!) { cancelShowtime(id: $id) { status } }`, map[string]any{"id": show}, nil)
	if status, serials, _ := a.updatedSerials(device, tag3); status != http.StatusOK || len(serials) != 2 {
		t.Fatalf("after the showtime was cancelled: %d %v, want both passes", status, serials)
	}
	if _, err := a.PassKit.PushDue(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := rec.Pushes(); len(got) != 3 {
		t.Fatalf("pushes after the cancellation: %v, want a third one", got)
	}
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	if err := json.Unmarshal([]byte(s), &n); err != nil {
		t.Fatalf("tag %q: %v", s, err)
	}
	return n
}

// TestWalletAPNsSettings: pushing through APNs needs a key (with its id and team) or a
// certificate, named in the refusal.
func TestWalletAPNsSettings(t *testing.T) {
	clearStores(t)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	keyFile := filepath.Join(t.TempDir(), "AuthKey.p8")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		flags []string
		err   string // "" = valid
	}{
		{[]string{"-wallet-apns", "production"}, "SEATFLOW_WALLET_APNS_KEY"},
		{[]string{"-wallet-apns", "development", "-wallet-apns-key", "/nonexistent-dir/AuthKey.p8"}, "no such file"},
		{[]string{"-wallet-apns", "development", "-wallet-apns-key", "/dev/null"}, "SEATFLOW_WALLET_APNS_KEY"},
		{[]string{"-wallet-apns", "production", "-wallet-apns-key", keyFile}, "SEATFLOW_WALLET_APNS_KEY_ID"},
		{[]string{"-wallet-apns", "production", "-wallet-apns-key", keyFile, "-wallet-apns-key-id", "KEY1234567",
			"-wallet-apns-team-id", "TEAM123456"}, ""},
	} {
		if c.err == "" {
			if _, _, err := ParseConfig("test", c.flags); err != nil {
				t.Errorf("%v: %v, want none", c.flags, err)
			}
			continue
		}
		_, _, err := ParseConfig("test", c.flags)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%v: %v, want one naming %s", c.flags, err, c.err)
		}
	}
}
