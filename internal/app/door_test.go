package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/makiuchi-d/gozxing"
	gozxingqr "github.com/makiuchi-d/gozxing/qrcode"
)

// TestDoorBrowser drives the demo in real headless Chromium: a customer pays and the page
// shows the ticket's QR code, which a QR reader decodes from the browser's own rendering
// to the ticket's code, with "Save to Google Wallet" (a link whose JWT verifies and whose
// barcode is that code) and "Add to Apple Wallet" (the ticket's applePassUrl) beside it;
// the door page (staff) admits the code scanned from the Google pass once, answers
// ALREADY_CHECKED_IN the second time, and shows the live count. Nothing is fetched from
// outside the server.
func TestDoorBrowser(t *testing.T) {
	browser := newBrowser(t)
	keyPath, googlePub := googleKeyFile(t)
	a := newTestApp(t, "-wallet-google-key", keyPath, "-wallet-google-issuer-id", "3388000000012345678",
		"-public-url", "https://tickets.example")
	show, seat := demoShowtime(a)
	date := testNow.Add(30 * time.Hour).Format("2006-01-02")

	customer := openTab(t, browser, "customer")
	customer.open(a.srv.URL, date, show, a.token("demo-alice", "customer"))
	customer.do("hold D1 and pay",
		chromedp.Click(seatSel(seat["D1"], "")),
		chromedp.Click(chromedp.CSS(`#hold-btn`)),
		chromedp.WaitVisible(chromedp.CSS(`#order-status[data-status="PENDING_PAYMENT"]`)),
		chromedp.Click(chromedp.CSS(`#pay-btn`)),
		chromedp.WaitReady(chromedp.CSS(`#message[data-code="PAID"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#tickets .ticket[data-status="VALID"] img.qr`)),
	)
	if got := customer.text(`#tickets .ticket strong`); got != "Row D, seat 1" {
		t.Errorf("ticket seat = %q", got)
	}
	code := strings.TrimSpace(customer.text(`#tickets .ticket-code`))
	if strings.Count(code, ".") != 2 {
		t.Fatalf("ticket code on the page = %q", code)
	}
	ctx, cancel := context.WithTimeout(customer.ctx, browserWait)
	shot, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(`#tickets .ticket img.qr`)))
	cancel()
	if err != nil {
		t.Fatalf("screenshot of the QR code: %v", err)
	}
	if got := decodePNG(t, shot); got != code {
		t.Fatalf("the QR code the browser shows decodes to %q, want the ticket's code %q", got, code)
	}
	code = walletButtons(t, a, customer, code, googlePub)

	a.clock.Advance(29 * time.Hour) // an hour before the showtime: the door is open
	door := openTab(t, customer.ctx, "door")
	door.do("open the door page",
		chromedp.Navigate(fmt.Sprintf("%s/demo/door?date=%s&showtime=%s", a.srv.URL, date, show)),
		chromedp.WaitVisible(chromedp.CSS(`#token-form`)),
		chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)),
		chromedp.SendKeys(chromedp.CSS(`#token-input`), a.token("door-1", "staff")),
		chromedp.Click(chromedp.CSS(`#token-save`)),
		chromedp.WaitReady(chromedp.CSS(`#auth-status[data-state="signed-in"]`)),
		chromedp.WaitReady(chromedp.CSS(`#count[data-checked-in="0"][data-sold="1"]`)),
	)
	scan := func(status string) {
		t.Helper()
		door.do("scan: "+status,
			chromedp.SetValue(chromedp.CSS(`#code-input`), code),
			chromedp.Click(chromedp.CSS(`#check-btn`)),
			chromedp.WaitReady(chromedp.CSS(fmt.Sprintf(`#door-result[data-status="%s"]`, status))))
	}
	scan("ADMITTED")
	if got := door.text(`#door-result`); !strings.Contains(got, "ADMITTED") {
		t.Errorf("door shows %q", got)
	}
	door.do("live count", chromedp.WaitReady(chromedp.CSS(`#count[data-checked-in="1"][data-sold="1"]`)))
	scan("ALREADY_CHECKED_IN")
	if got := door.text(`#door-detail`); !strings.Contains(got, "Row D, seat 1") || !strings.Contains(got, "first at") {
		t.Errorf("door detail after the second scan: %q", got)
	}
	path := filepath.Join(os.TempDir(), "seatflow-door.png")
	door.screenshot(path)
	t.Logf("screenshot of the door page: %s", path)
	customer.screenshot(filepath.Join(os.TempDir(), "seatflow-tickets.png"))
	customer.assertOffline(a.srv.URL)
	door.assertOffline(a.srv.URL)
}

// walletButtons checks the wallet buttons beside the ticket whose code the page shows: the
// Google link's JWT verifies with the service account's key and its barcode is the code,
// which it returns (what a scanner reads from the Google pass); the Apple button links to
// the ticket's applePassUrl, or stays hidden on a server without that field.
func walletButtons(t *testing.T, a *testApp, customer *tab, code string, googlePub jwk.Key) string {
	t.Helper()
	customer.do("the Google Wallet button", chromedp.WaitVisible(chromedp.CSS(`#tickets .ticket a.wallet-google`)))
	ctx, cancel := context.WithTimeout(customer.ctx, browserWait)
	defer cancel()
	href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#tickets .ticket a.wallet-google').getAttribute('href')`))
	if err != nil {
		t.Fatalf("the Google Wallet button's href: %v", err)
	}
	if got := customer.text(`#tickets .ticket a.wallet-google`); got != "Save to Google Wallet" {
		t.Errorf("Google button says %q", got)
	}
	c, err := walletClaims(t, href, googlePub)
	if err != nil {
		t.Fatalf("the Google Wallet button's JWT does not verify: %v", err)
	}
	objs := c.Payload.EventTicketObjects
	if len(objs) != 1 || objs[0].Barcode.Value != code {
		t.Fatalf("the Google pass's barcode is not the ticket's code: %+v", objs)
	}
	var tickets struct {
		MyOrders []struct {
			Tickets []struct {
				ApplePassURL string `json:"applePassUrl"`
			}
		}
	}
	r := a.do(a.token("demo-alice", "customer"), `{ myOrders { tickets { applePassUrl } } }`, nil)
	visible, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!document.querySelector('#tickets .ticket a.wallet-apple').hidden`))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Errors) > 0 { // a server without Apple Wallet's field: the button stays hidden
		if visible {
			t.Errorf("the Apple Wallet button shows though the server refused applePassUrl: %+v", r.Errors)
		}
		return objs[0].Barcode.Value
	}
	if err := json.Unmarshal(r.Data, &tickets); err != nil || len(tickets.MyOrders) != 1 || len(tickets.MyOrders[0].Tickets) != 1 {
		t.Fatalf("applePassUrl: %s %v", r.Data, err)
	}
	want := tickets.MyOrders[0].Tickets[0].ApplePassURL
	customer.do("the Apple Wallet button", chromedp.WaitVisible(chromedp.CSS(`#tickets .ticket a.wallet-apple`)))
	appleHref, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#tickets .ticket a.wallet-apple').getAttribute('href')`))
	if err != nil {
		t.Fatal(err)
	}
	// The link is signed with an expiry, so two reads may differ in exp and sig only.
	if path := func(u string) string { p, _, _ := strings.Cut(u, "?"); return p }; appleHref == "" || path(appleHref) != path(want) {
		t.Errorf("Apple Wallet button links to %q, want the ticket's applePassUrl %q", appleHref, want)
	}
	return objs[0].Barcode.Value
}

// decodePNG reads the QR code in a PNG image.
func decodePNG(t *testing.T, raw []byte) string {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	if err != nil {
		t.Fatal(err)
	}
	res, err := gozxingqr.NewQRCodeReader().Decode(bmp, nil)
	if err != nil {
		t.Fatalf("no QR code read in the screenshot: %v", err)
	}
	return res.GetText()
}

// TestDoorPageAndStaffDemoToken: /demo/door is served under the demo's policy, and embedded
// mode hands the door page a staff token (customers' tokens stay customers').
func TestDoorPageAndStaffDemoToken(t *testing.T) {
	cfg, _, err := ParseConfig("test", nil) // embedded mode
	if err != nil {
		t.Fatal(err)
	}
	a := &App{Config: cfg, Auth: NewAuthenticator(cfg)}
	h := a.Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/demo/door", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `id="door-result"`) ||
		!strings.Contains(rec.Header().Get("Content-Security-Policy"), "script-src 'self'") {
		t.Fatalf("GET /demo/door: %d %.200s", rec.Code, rec.Body)
	}
	for query, role := range map[string]string{"?role=staff": "staff", "": "customer", "?role=admin": "customer"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/demo/token"+query, nil))
		var out struct{ Token string }
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("GET /demo/token%s: %d %s", query, rec.Code, rec.Body)
		}
		if u, err := a.Auth.Verify(out.Token); err != nil || u.Role != role {
			t.Errorf("GET /demo/token%s: user %+v (%v), want role %s", query, u, err, role)
		}
	}
}
