package app

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"seatflow/internal/tooling/testenv"
)

const checkInQ = `mutation($show: ID!, $code: String!, $nonce: String) { checkIn(showtimeId: $show, code: $code, nonce: $nonce) {
	status firstCheckedInAt ticket { id status checkedInAt seat { row number } showtime { id } } } }`

type checkInOut struct {
	Status           string
	FirstCheckedInAt *time.Time
	Ticket           *struct {
		ID, Status  string
		CheckedInAt *time.Time
		Showtime    struct{ ID string }
	}
}

// checkIn scans code at show's door as token's holder (nonce "" sends none).
func (a *testApp) checkIn(token, show, code, nonce string) checkInOut {
	a.t.Helper()
	vars := map[string]any{"show": show, "code": code}
	if nonce != "" {
		vars["nonce"] = nonce
	}
	var out struct{ CheckIn checkInOut }
	a.must(token, checkInQ, vars, &out)
	return out.CheckIn
}

type countOut struct{ CheckedIn, Sold, DuplicateScans int }

// count reads a showtime's door as staff.
func (a *testApp) count(staff, show string) countOut {
	a.t.Helper()
	var out struct {
		Showtime struct {
			CheckedIn    int
			CheckInCount countOut
		}
	}
	a.must(staff, `query($id: ID!) { showtime(id: $id) { checkedIn checkInCount { checkedIn sold duplicateScans } } }`,
		map[string]any{"id": show}, &out)
	if out.Showtime.CheckedIn != out.Showtime.CheckInCount.CheckedIn {
		a.t.Fatalf("checkedIn %d, checkInCount.checkedIn %d", out.Showtime.CheckedIn, out.Showtime.CheckInCount.CheckedIn)
	}
	return out.Showtime.CheckInCount
}

// TestCheckIn: the door's answers, staff only: a ticket opens it once, a retry with the
// same nonce changes nothing, a tampered code, another showtime's ticket and one scanned
// outside its window (the injected clock) are refused. The door's rules themselves are
// shown in internal/tickets (TestCheckIn); this test holds the API and its roles to them.
func TestCheckIn(t *testing.T) {
	a := newTestApp(t)
	show, seats := a.onSaleShowtime()
	alice, staff := a.token("alice", "customer"), a.token("door-1", "staff")
	o := a.paid(alice, show, seats[:2], "k")
	tks := a.tickets(alice, o.ID)
	code := tks[0].Code

	t.Run("CustomersAndAnonymousMayNot", func(t *testing.T) {
		a.wantCode(alice, checkInQ, map[string]any{"show": show, "code": code}, "FORBIDDEN")
		a.wantCode("", checkInQ, map[string]any{"show": show, "code": code}, "UNAUTHENTICATED")
		a.wantCode(alice, `query($id: ID!) { showtime(id: $id) { checkedIn } }`, map[string]any{"id": show}, "FORBIDDEN")
	})
	t.Run("NotYetValid", func(t *testing.T) { // the showtime starts in 30 h; the door opens 3 h before
		if r := a.checkIn(staff, show, code, "early"); r.Status != "NOT_YET_VALID" || r.Ticket == nil || r.Ticket.ID != tks[0].ID {
			t.Fatalf("scan 30 h before: %+v", r)
		}
	})
	a.doorOpen()
	var first checkInOut
	t.Run("AdmittedOnce", func(t *testing.T) {
		first = a.checkIn(staff, show, code, "scan-1")
		if first.Status != "ADMITTED" || first.FirstCheckedInAt == nil || !first.FirstCheckedInAt.Equal(a.clock.Now().Truncate(time.Second)) {
			t.Fatalf("first scan: %+v at %s", first, a.clock.Now())
		}
		a.clock.Advance(time.Minute)
		again := a.checkIn(staff, show, code, "scan-2")
		if again.Status != "ALREADY_CHECKED_IN" || again.FirstCheckedInAt == nil || !again.FirstCheckedInAt.Equal(*first.FirstCheckedInAt) {
			t.Fatalf("second scan: %+v, want ALREADY_CHECKED_IN at %s", again, first.FirstCheckedInAt)
		}
		if r := a.checkIn(staff, show, code, ""); r.Status != "ALREADY_CHECKED_IN" {
			t.Fatalf("a scan without nonce: %s", r.Status)
		}
		if got := a.tickets(alice, o.ID)[0]; got.Status != "CHECKED_IN" || got.CheckedInAt == nil {
			t.Fatalf("ticket after admission: %+v", got)
		}
	})
	t.Run("RetryWithTheSameNonceChangesNothing", func(t *testing.T) {
		before := a.DB.Ticket.GetX(context.Background(), idOf(t, tks[0].ID))
		r := a.checkIn(a.token("door-2", "staff"), show, code, "scan-1")
		if r.Status != "ADMITTED" || !r.FirstCheckedInAt.Equal(*first.FirstCheckedInAt) {
			t.Fatalf("retry of the admitting scan: %+v, want ADMITTED at %s", r, first.FirstCheckedInAt)
		}
		after := a.DB.Ticket.GetX(context.Background(), idOf(t, tks[0].ID))
		if after.Admissions != 1 || *after.CheckedInBy != "door-1" || *after.CheckInNonce != "scan-1" || !after.CheckedInAt.Equal(*before.CheckedInAt) {
			t.Fatalf("ticket after the retry: %d admissions by %s (nonce %s) at %s, want 1 by door-1 at %s", after.Admissions,
				*after.CheckedInBy, *after.CheckInNonce, after.CheckedInAt, before.CheckedInAt)
		}
		if c := a.count(staff, show); c != (countOut{CheckedIn: 1, Sold: 2}) {
			t.Fatalf("count = %+v", c)
		}
	})
	t.Run("TamperedOrForeignIsInvalid", func(t *testing.T) {
		other := tks[1].Code
		parts := strings.Split(other, ".")
		for name, bad := range map[string]string{
			"FlippedSignatureByte": other[:len(other)-5] + flip(other[len(other)-5]) + other[len(other)-4:],
			"FlippedPayloadByte":   parts[0] + "." + parts[1][:10] + flip(parts[1][10]) + parts[1][11:] + "." + parts[2],
			"OtherTicketsPayload":  parts[0] + "." + strings.Split(code, ".")[1] + "." + parts[2],
			"NotAJWS":              "hello",
			"Empty":                "",
			"Huge":                 strings.Repeat("a", 5000),
			"Unsigned":             "eyJhbGciOiJub25lIn0." + parts[1] + ".",
			"ForeignKeySameKid":    foreignCode(t, kidOf(t, other), parts[1]),
		} {
			if r := a.checkIn(staff, show, bad, ""); r.Status != "INVALID" || r.Ticket != nil {
				t.Errorf("%s: %+v, want INVALID without a ticket", name, r)
			}
		}
		if r := a.checkIn(staff, show, other, ""); r.Status != "ADMITTED" {
			t.Fatalf("the untouched code after the tampered ones: %s", r.Status)
		}
	})
	t.Run("WrongShowtime", func(t *testing.T) {
		hall := a.createHall("Hall 2", 1, 4)
		later := a.createShowtime(a.createMovie("Heat", 170), hall, a.clock.Now().Add(3*time.Hour))
		if r := a.checkIn(staff, later, code, ""); r.Status != "WRONG_SHOWTIME" || r.Ticket == nil || r.Ticket.Showtime.ID != show {
			t.Fatalf("scan at another showtime's door: %+v, want WRONG_SHOWTIME naming %s", r, show)
		}
	})
	t.Run("BadNonce", func(t *testing.T) {
		a.wantCode(staff, checkInQ, map[string]any{"show": show, "code": code, "nonce": strings.Repeat("n", 65)}, "BAD_USER_INPUT")
		a.wantCode(staff, checkInQ, map[string]any{"show": show, "code": code, "nonce": ""}, "BAD_USER_INPUT")
	})
	t.Run("Expired", func(t *testing.T) {
		p := a.paid(a.token("carol", "customer"), show, seats[5:6], "carol")
		c := a.tickets(a.token("carol", "customer"), p.ID)[0].Code
		a.clock.Advance(5 * time.Hour) // the showtime (155 min from testNow + 30 h) has ended
		if r := a.checkIn(staff, show, c, ""); r.Status != "EXPIRED" {
			t.Fatalf("scan after the end: %s, want EXPIRED", r.Status)
		}
	})
}

func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

// TestConcurrentScansAdmitOnce: 50 scans of one ticket at once, on two instances, each
// with its own nonce: exactly one is ADMITTED (through the API; the rule is shown in
// internal/tickets, TestConcurrentScansAdmitOnce).
func TestConcurrentScansAdmitOnce(t *testing.T) {
	a := newTestApp(t)
	b := a.sibling()
	show, seats := a.onSaleShowtime()
	alice := a.token("alice", "customer")
	o := a.paid(alice, show, seats[:1], "k")
	code := a.tickets(alice, o.ID)[0].Code
	a.doorOpen()
	b.clock.Advance(a.clock.Now().Sub(b.clock.Now()))
	staff := a.token("door", "staff")
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inst := []*testApp{a, b}[i%2]
			<-start
			r := inst.do(staff, checkInQ, map[string]any{"show": show, "code": code, "nonce": testenv.RandomName("n")})
			var out struct{ CheckIn checkInOut }
			status := r.Code()
			if status == "" && json.Unmarshal(r.Data, &out) == nil {
				status = out.CheckIn.Status
			}
			mu.Lock()
			got[status]++
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	if got["ADMITTED"] != 1 || got["ALREADY_CHECKED_IN"] != 49 {
		t.Fatalf("50 simultaneous scans: %v, want 1 ADMITTED and 49 ALREADY_CHECKED_IN", got)
	}
	if tk := a.DB.Ticket.Query().OnlyX(context.Background()); tk.Admissions != 1 || tk.CheckedInAt == nil {
		t.Fatalf("the ticket after 50 scans: %d admissions, checked in at %v; want 1", tk.Admissions, tk.CheckedInAt)
	}
}

// TestOfflineScannersUpload: two offline scanners let the same ticket in; uploaded in any
// order, the earlier scan is the admission and the later one ALREADY_CHECKED_IN, counted as
// a duplicate; uploading again changes nothing (through the API; the rules are shown in
// internal/tickets, TestUpload).
func TestOfflineScannersUpload(t *testing.T) {
	a := newTestApp(t)
	show, seats := a.onSaleShowtime()
	alice := a.token("alice", "customer")
	o := a.paid(alice, show, seats[:3], "k")
	tks := a.tickets(alice, o.ID)
	a.must(a.admin, `mutation($id: ID!) { refundOrder(orderId: $id) { status } }`, map[string]any{"id": o.ID}, nil)
	// After the refund, one more order whose tickets the scanners see.
	p := a.paid(alice, show, seats[4:6], "p")
	valid := a.tickets(alice, p.ID)
	a.doorOpen()
	s1, s2 := a.token("scanner-1", "staff"), a.token("scanner-2", "staff")
	t1 := a.clock.Now().Add(-20 * time.Minute).Truncate(time.Second)
	t2 := t1.Add(5 * time.Minute)
	uploadQ := `mutation($show: ID!, $scans: [OfflineScanInput!]!) { uploadCheckIns(showtimeId: $show, scans: $scans) {
		status firstCheckedInAt ticket { id } } }`
	upload := func(tok string, scans ...map[string]any) []checkInOut {
		t.Helper()
		var out struct{ UploadCheckIns []checkInOut }
		a.must(tok, uploadQ, map[string]any{"show": show, "scans": scans}, &out)
		return out.UploadCheckIns
	}
	scan := func(code string, at time.Time, nonce string) map[string]any {
		return map[string]any{"code": code, "scannedAt": at.Format(time.RFC3339), "nonce": nonce}
	}
	// Scanner 2 (the later scan) uploads first: nothing is known yet, so it is the admission.
	if r := upload(s2, scan(valid[0].Code, t2, "s2-a")); r[0].Status != "ADMITTED" || !r[0].FirstCheckedInAt.Equal(t2) {
		t.Fatalf("first upload: %+v", r)
	}
	// Scanner 1 scanned it earlier: its scan becomes the admission; the revoked ticket is
	// refused; a code that is not ours is INVALID. Results come in the order sent.
	r := upload(s1, scan(tks[0].Code, t1, "s1-r"), scan(valid[0].Code, t1, "s1-a"), scan("nonsense", t1, "s1-x"),
		scan(valid[1].Code, t1.Add(time.Minute), "s1-b"))
	if r[0].Status != "REVOKED" || r[1].Status != "ADMITTED" || !r[1].FirstCheckedInAt.Equal(t1) || r[2].Status != "INVALID" || r[3].Status != "ADMITTED" {
		t.Fatalf("second upload: %+v", r)
	}
	// Scanner 2 uploads again (it lost the answer): its scan is now the later one.
	if r := upload(s2, scan(valid[0].Code, t2, "s2-a")); r[0].Status != "ALREADY_CHECKED_IN" || !r[0].FirstCheckedInAt.Equal(t1) {
		t.Fatalf("re-upload of the later scan: %+v", r)
	}
	want := countOut{CheckedIn: 2, Sold: 2, DuplicateScans: 1}
	if c := a.count(s1, show); c != want {
		t.Fatalf("count = %+v, want %+v", c, want)
	}
	// Everything again, in one upload: nothing changes.
	upload(s1, scan(valid[0].Code, t1, "s1-a"), scan(valid[0].Code, t2, "s2-a"), scan(valid[1].Code, t1.Add(time.Minute), "s1-b"))
	if c := a.count(s1, show); c != want {
		t.Fatalf("count after uploading again = %+v, want %+v", c, want)
	}
	if n := a.DB.OfflineScan.Query().CountX(context.Background()); n != 3 {
		t.Fatalf("%d offline scans recorded, want 3", n)
	}
	// Online, the ticket is used.
	if r := a.checkIn(s1, show, valid[0].Code, ""); r.Status != "ALREADY_CHECKED_IN" || !r.FirstCheckedInAt.Equal(t1) {
		t.Fatalf("online scan after the uploads: %+v", r)
	}
	t.Run("BadUploads", func(t *testing.T) {
		a.wantCode(s1, uploadQ, map[string]any{"show": show, "scans": []map[string]any{scan(valid[0].Code, t1, "")}}, "BAD_USER_INPUT")
		many := make([]map[string]any, 501)
		for i := range many {
			many[i] = scan("x", t1, "n")
		}
		a.wantCode(s1, uploadQ, map[string]any{"show": show, "scans": many}, "BAD_USER_INPUT")
		a.wantCode(alice, uploadQ, map[string]any{"show": show, "scans": []map[string]any{}}, "FORBIDDEN")
	})
	t.Run("ScanFromTheFutureCountsAsNow", func(t *testing.T) {
		q := a.paid(a.token("dan", "customer"), show, seats[6:8], "dan")
		code := a.tickets(a.token("dan", "customer"), q.ID)[0].Code
		r := upload(s2, scan(code, a.clock.Now().Add(time.Hour), "future"))
		if r[0].Status != "ADMITTED" || r[0].FirstCheckedInAt.After(a.clock.Now()) {
			t.Fatalf("a scan an hour ahead: %+v (now %s)", r, a.clock.Now())
		}
	})
}

// TestCheckInsSubscription: the door watches its count live: the count at once, then a
// new one pushed after an admission at another instance; customers may not watch.
func TestCheckInsSubscription(t *testing.T) {
	a := newTestApp(t)
	b := a.sibling()
	show, seats := a.onSaleShowtime()
	alice, staff := a.token("alice", "customer"), a.token("door", "staff")
	o := a.paid(alice, show, seats[:2], "k")
	tks := a.tickets(alice, o.ID)
	a.doorOpen()
	b.clock.Advance(a.clock.Now().Sub(b.clock.Now()))
	sub := func(c *wsClient) {
		c.send(map[string]any{"id": "door", "type": "subscribe", "payload": map[string]any{
			"query":     `subscription($id: ID!) { checkIns(showtimeId: $id) { showtimeId checkedIn sold duplicateScans } }`,
			"variables": map[string]any{"id": show}}})
	}
	next := func(c *wsClient) countOut {
		t.Helper()
		m := c.next()
		raw, _ := json.Marshal(m["payload"])
		var p struct {
			Data struct {
				CheckIns struct {
					ShowtimeID string
					countOut
				}
			}
			Errors []any
		}
		if m["type"] != "next" || json.Unmarshal(raw, &p) != nil || len(p.Errors) > 0 || p.Data.CheckIns.ShowtimeID != show {
			t.Fatalf("want a count, got %v", m)
		}
		return p.Data.CheckIns.countOut
	}
	door := dialWS(t, a, "graphql-transport-ws", staff)
	sub(door)
	if c := next(door); c != (countOut{Sold: 2}) {
		t.Fatalf("first count = %+v", c)
	}
	began := time.Now()
	if r := b.checkIn(staff, show, tks[0].Code, ""); r.Status != "ADMITTED" {
		t.Fatal(r.Status)
	}
	if c := next(door); c != (countOut{CheckedIn: 1, Sold: 2}) {
		t.Fatalf("count after an admission = %+v", c)
	}
	t.Logf("pushed %s after the admission at the other instance", time.Since(began).Round(time.Millisecond))
	// Two quick admissions come as few pushes, the last one right.
	b.checkIn(staff, show, tks[1].Code, "")
	if c := next(door); c != (countOut{CheckedIn: 2, Sold: 2}) {
		t.Fatalf("count after the second admission = %+v", c)
	}
	t.Run("CustomersMayNotWatch", func(t *testing.T) {
		c := dialWS(t, a, "graphql-transport-ws", alice)
		sub(c)
		m := c.next()
		raw, _ := json.Marshal(m)
		if !strings.Contains(string(raw), "FORBIDDEN") {
			t.Fatalf("a customer's checkIns subscription: %s, want FORBIDDEN", raw)
		}
	})
	door.send(map[string]any{"id": "door", "type": "complete"})
}

// foreignCode signs payload (base64url) with a key of its own under kid: a code another
// cinema, or an attacker, could make.
func foreignCode(t *testing.T, kid, payload string) string {
	t.Helper()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: jose.JSONWebKey{Key: priv, KeyID: kid}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(payload)
	obj, err := signer.Sign(raw)
	if err != nil {
		t.Fatal(err)
	}
	code, _ := obj.CompactSerialize()
	return code
}
