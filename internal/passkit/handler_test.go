package passkit

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"seatflow"
	"seatflow/ent/passregistration"
	"seatflow/internal/nodeid"
	"seatflow/internal/wallet"
)

const token1 = "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"

// TestRegistration: a device registers for a pass with its token (201, then 200 and its
// new push token), a wrong or missing token is 401, malformed input 400, another pass type
// 404; the list names the pass until its tag, and unregistering forgets it.
func TestRegistration(t *testing.T) {
	e := newEnv(t)
	serial, _ := e.ticket()
	other, _ := e.ticket()
	good := wallet.AuthenticationToken(testKey, serial)
	if len(good) != 64 {
		t.Fatalf("token %q: want 64 hex digits", good)
	}
	body := `{"pushToken":"` + token1 + `"}`
	refused := []struct {
		name, method, path, token, body string
		status                          int
	}{
		{"NoToken", "POST", regPath("dev1", serial), "", body, http.StatusUnauthorized},
		{"WrongToken", "POST", regPath("dev1", serial), strings.Repeat("0", 64), body, http.StatusUnauthorized},
		{"OtherPassToken", "POST", regPath("dev1", serial), wallet.AuthenticationToken(testKey, other), body, http.StatusUnauthorized},
		{"OtherKeyToken", "POST", regPath("dev1", serial), wallet.AuthenticationToken([]byte("another key"), serial), body, http.StatusUnauthorized},
		{"LongDevice", "POST", regPath(strings.Repeat("d", 129), serial), good, body, http.StatusBadRequest},
		{"BadDevice", "POST", regPath("dev%20one", serial), good, body, http.StatusBadRequest},
		{"BadSerial", "POST", regPath("dev1", "not-a-serial"), good, body, http.StatusBadRequest},
		{"OtherTypeSerial", "POST", regPath("dev1", nodeid.Encode(nodeid.Order, 1)), good, body, http.StatusBadRequest},
		{"OtherPassType", "POST", "/passkit/v1/devices/dev1/registrations/pass.other/" + serial, good, body, http.StatusNotFound},
		{"NoBody", "POST", regPath("dev1", serial), good, "", http.StatusBadRequest},
		{"NotJSON", "POST", regPath("dev1", serial), good, "pushToken", http.StatusBadRequest},
		{"TrailingJSON", "POST", regPath("dev1", serial), good, body + "{}", http.StatusBadRequest},
		{"LongBody", "POST", regPath("dev1", serial), good, `{"pushToken":"` + token1 + `","x":"` + strings.Repeat("x", 2000) + `"}`, http.StatusBadRequest},
		{"EmptyPushToken", "POST", regPath("dev1", serial), good, `{"pushToken":""}`, http.StatusBadRequest},
		{"NotHexPushToken", "POST", regPath("dev1", serial), good, `{"pushToken":"../../x"}`, http.StatusBadRequest},
		{"LongPushToken", "POST", regPath("dev1", serial), good, `{"pushToken":"` + strings.Repeat("a", 201) + `"}`, http.StatusBadRequest},
		{"UnregisterNoToken", "DELETE", regPath("dev1", serial), "", "", http.StatusUnauthorized},
		{"UnregisterWrongToken", "DELETE", regPath("dev1", serial), wallet.AuthenticationToken(testKey, other), "", http.StatusUnauthorized},
		{"ListBadTag", "GET", "/passkit/v1/devices/dev1/registrations/" + passType + "?passesUpdatedSince=yesterday", "", "", http.StatusBadRequest},
		{"ListLongDevice", "GET", "/passkit/v1/devices/" + strings.Repeat("d", 129) + "/registrations/" + passType, "", "", http.StatusBadRequest},
	}
	for _, c := range refused {
		res, got := e.call(c.method, c.path, c.token, c.body)
		if res.StatusCode != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, res.StatusCode, got, c.status)
		}
		if c.status != http.StatusNotFound && res.StatusCode >= 400 && !strings.Contains(got, `"code"`) {
			t.Errorf("%s: body %q has no error code", c.name, got)
		}
	}
	if n := e.db.PassRegistration.Query().CountX(context.Background()); n != 0 {
		t.Fatalf("%d registrations after refused requests, want none", n)
	}

	e.register("dev1", serial, token1, http.StatusCreated)
	e.register("dev1", serial, "ff", http.StatusOK)
	e.register("dev2", serial, token1, http.StatusCreated)
	if r := e.db.PassRegistration.Query().Where(passregistration.DeviceLibraryID("dev1")).OnlyX(context.Background()); r.PushToken != "ff" {
		t.Fatalf("push token after registering again = %q, want the new one", r.PushToken)
	}

	status, serials, last := e.serials("dev1", "")
	if status != http.StatusOK || !slices.Equal(serials, []string{serial}) || last == "" {
		t.Fatalf("list without a tag: %d %v %q, want the pass", status, serials, last)
	}
	if status, serials, _ := e.serials("dev1", last); status != http.StatusNoContent {
		t.Fatalf("list since its own tag: %d %v, want 204", status, serials)
	}
	if status, _, _ := e.serials("dev-unknown", ""); status != http.StatusNoContent {
		t.Fatalf("list of an unknown device: %d, want 204", status)
	}
	e.touchShowtime()
	status, serials, last2 := e.serials("dev1", last)
	if status != http.StatusOK || !slices.Equal(serials, []string{serial}) || last2 <= last {
		t.Fatalf("list after the showtime changed: %d %v %q (before %q), want the pass and a later tag", status, serials, last2, last)
	}

	if res, got := e.call("DELETE", regPath("dev1", serial), good, ""); res.StatusCode != http.StatusOK {
		t.Fatalf("unregister: %d %s", res.StatusCode, got)
	}
	if status, _, _ := e.serials("dev1", ""); status != http.StatusNoContent {
		t.Fatalf("list after unregistering: %d, want 204", status)
	}
	if status, _, _ := e.serials("dev2", ""); status != http.StatusOK {
		t.Fatalf("the other device's list: %d, want 200", status)
	}
}

// TestPassServed: the latest pass with Last-Modified and ETag; 304 while the device's copy
// is current; 200 again once the showtime changed; 401 without the pass's token.
func TestPassServed(t *testing.T) {
	e := newEnv(t)
	serial, _ := e.ticket()
	path := "/passkit/v1/passes/" + passType + "/" + serial
	good := wallet.AuthenticationToken(testKey, serial)
	for _, tok := range []string{"", wallet.AuthenticationToken(testKey, serial+"x")} {
		if res, _ := e.call("GET", path, tok, ""); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("pass with token %q: %d, want 401", tok, res.StatusCode)
		}
	}
	if res, _ := e.call("GET", "/passkit/v1/passes/pass.other/"+serial, good, ""); res.StatusCode != http.StatusNotFound {
		t.Fatalf("another pass type: %d, want 404", res.StatusCode)
	}
	res, body := e.call("GET", path, good, "")
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/vnd.apple.pkpass" || !strings.Contains(body, serial) {
		t.Fatalf("pass: %d %s %s", res.StatusCode, res.Header.Get("Content-Type"), body)
	}
	lm, etag := res.Header.Get("Last-Modified"), res.Header.Get("ETag")
	if mod, err := http.ParseTime(lm); err != nil || !mod.Equal(e.clock.Now()) || etag == "" {
		t.Fatalf("Last-Modified %q (%v), ETag %q: want the ticket's creation", lm, err, etag)
	}
	if res, _ := e.call("GET", path, good, "", "If-Modified-Since", lm); res.StatusCode != http.StatusNotModified {
		t.Fatalf("If-Modified-Since its Last-Modified: %d, want 304", res.StatusCode)
	}
	if res, _ := e.call("GET", path, good, "", "If-None-Match", etag); res.StatusCode != http.StatusNotModified {
		t.Fatalf("If-None-Match its ETag: %d, want 304", res.StatusCode)
	}
	if res, _ := e.call("GET", path, good, "", "If-Modified-Since", e.clock.Now().Add(-time.Second).Format(http.TimeFormat)); res.StatusCode != http.StatusOK {
		t.Fatalf("If-Modified-Since a second before: %d, want 200", res.StatusCode)
	}
	e.touchShowtime()
	res, _ = e.call("GET", path, good, "", "If-Modified-Since", lm)
	if res.StatusCode != http.StatusOK || res.Header.Get("Last-Modified") == lm {
		t.Fatalf("after the showtime changed, If-Modified-Since the old time: %d Last-Modified %q, want 200 and a later time", res.StatusCode, res.Header.Get("Last-Modified"))
	}
	if res, _ := e.call("GET", path, good, "", "If-None-Match", etag); res.StatusCode != http.StatusOK {
		t.Fatalf("after the change, If-None-Match the old ETag: %d, want 200", res.StatusCode)
	}
	missing := nodeid.Encode(nodeid.Ticket, 999999)
	if res, _ := e.call("GET", "/passkit/v1/passes/"+passType+"/"+missing, wallet.AuthenticationToken(testKey, missing), ""); res.StatusCode != http.StatusNotFound {
		t.Fatalf("a ticket that does not exist: %d, want 404", res.StatusCode)
	}
	e.svc.Passes = nil
	if res, _ := e.call("GET", path, good, ""); res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("without a pass maker: %d, want 503", res.StatusCode)
	}
}

// TestLog: a device's messages are logged, cut to MaxPassKitLogLine; too many, too long or
// malformed is 400.
func TestLog(t *testing.T) {
	e := newEnv(t)
	if res, body := e.call("POST", "/passkit/v1/log", "", `{"logs":["web service error: 401 for pass X","`+strings.Repeat("y", 5000)+`"]}`); res.StatusCode != http.StatusOK {
		t.Fatalf("log: %d %s", res.StatusCode, body)
	}
	logged := e.logBuf.String()
	if !strings.Contains(logged, "web service error: 401 for pass X") || strings.Contains(logged, strings.Repeat("y", 1025)) {
		t.Fatalf("log lines: %s", logged)
	}
	// A flood is cut at logsPerMinute messages a minute, its remainder counted later.
	hundred := `{"logs":[` + strings.TrimSuffix(strings.Repeat(`"flood",`, 100), ",") + `]}`
	for range logsPerMinute/100 + 1 {
		if res, _ := e.call("POST", "/passkit/v1/log", "", hundred); res.StatusCode != http.StatusOK {
			t.Fatalf("flood: %d", res.StatusCode)
		}
	}
	if n := strings.Count(e.logBuf.String(), "message=flood"); n != logsPerMinute-2 {
		t.Fatalf("%d flood messages logged in a minute, want %d (two logged before)", n, logsPerMinute-2)
	}
	e.clock.Advance(time.Minute)
	e.call("POST", "/passkit/v1/log", "", `{"logs":[]}`)
	if !strings.Contains(e.logBuf.String(), "passkit device logs dropped") || !strings.Contains(e.logBuf.String(), "messages=102") {
		t.Fatalf("the dropped messages are not counted: %s", e.logBuf.String()[max(0, len(e.logBuf.String())-300):])
	}
	many := `{"logs":[` + strings.TrimSuffix(strings.Repeat(`"m",`, 101), ",") + `]}`
	for name, body := range map[string]string{"TooMany": many, "NotJSON": "logs", "TooLong": `{"logs":["` + strings.Repeat("z", 70<<10) + `"]}`} {
		if res, _ := e.call("POST", "/passkit/v1/log", "", body); res.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", name, res.StatusCode)
		}
	}
}

// TestDevicesPerPass: a pass takes seatflow.MaxPassDevices devices; one more is 429
// RATE_LIMITED (whoever holds a pass's token cannot register devices without end, each
// pushed at every change), while a device registered already may register again.
func TestDevicesPerPass(t *testing.T) {
	e := newEnv(t)
	serial, _ := e.ticket()
	for i := range seatflow.MaxPassDevices {
		e.register("device"+strconv.Itoa(i), serial, token1, http.StatusCreated)
	}
	e.register("device0", serial, token1, http.StatusOK)
	res, body := e.call("POST", regPath("one-more", serial), wallet.AuthenticationToken(testKey, serial), `{"pushToken":"`+token1+`"}`)
	if res.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, seatflow.ERATELIMITED) {
		t.Fatalf("one device more: %d %s, want 429 %s", res.StatusCode, body, seatflow.ERATELIMITED)
	}
	other, _ := e.ticket() // another pass is not held back
	e.register("one-more", other, token1, http.StatusCreated)
}
