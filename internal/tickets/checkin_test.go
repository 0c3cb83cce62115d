package tickets_test

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

	"seatflow"
	"seatflow/ent"
	"seatflow/internal/tooling/testenv"
)

// TestCheckIn: the door's answers to online scans. A ticket opens it once, from
// seatflow.TicketValidBefore before its showtime to the showtime's end; a later scan is
// ALREADY_CHECKED_IN with the first time, except a retry with the admitting scan's nonce
// (ADMITTED again, nothing written); a revoked ticket is REVOKED; a code that is not one we
// signed, unchanged, is INVALID without a ticket; another showtime's ticket is
// WRONG_SHOWTIME. A bad nonce is BAD_USER_INPUT.
func TestCheckIn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, tks := e.paid("alice", e.seats[:3]...)
	code := e.code(tks[0])

	if r := e.checkIn(e.svc, "door-1", code, "early"); r.Status != seatflow.CheckInNotYetValid || r.Ticket == nil || r.Ticket.ID != tks[0].ID {
		t.Fatalf("a scan 30 h before the showtime: %+v, want NOT_YET_VALID naming the ticket", r)
	}
	if row := e.row(tks[0].ID); row.CheckedInAt != nil || row.Admissions != 0 {
		t.Fatalf("a refused scan wrote the ticket: %+v", row)
	}
	e.openDoor()
	first := e.checkIn(e.svc, "door-1", code, "scan-1")
	admittedAt := e.clock.Now()
	if first.Status != seatflow.CheckInAdmitted || first.FirstCheckedInAt == nil || !first.FirstCheckedInAt.Equal(admittedAt) {
		t.Fatalf("first scan: %+v, want ADMITTED at %s", first, admittedAt)
	}
	e.clock.Advance(time.Minute)
	for _, nonce := range []string{"scan-2", ""} {
		r := e.checkIn(e.svc, "door-1", code, nonce)
		if r.Status != seatflow.CheckInAlreadyCheckedIn || r.FirstCheckedInAt == nil || !r.FirstCheckedInAt.Equal(admittedAt) {
			t.Fatalf("a later scan (nonce %q): %+v, want ALREADY_CHECKED_IN at %s", nonce, r, admittedAt)
		}
	}
	r := e.checkIn(e.svc, "door-2", code, "scan-1")
	if r.Status != seatflow.CheckInAdmitted || !r.FirstCheckedInAt.Equal(admittedAt) {
		t.Fatalf("a retry of the admitting scan: %+v, want ADMITTED at %s", r, admittedAt)
	}
	if row := e.row(tks[0].ID); row.Admissions != 1 || *row.CheckedInBy != "door-1" || *row.CheckInNonce != "scan-1" || !row.CheckedInAt.Equal(admittedAt) {
		t.Fatalf("the ticket after the retry: %d admissions by %s (nonce %s) at %s, want 1 by door-1 (scan-1) at %s",
			row.Admissions, *row.CheckedInBy, *row.CheckInNonce, row.CheckedInAt, admittedAt)
	}
	if c := e.count(); c != (seatflow.CheckInCount{ShowtimeID: e.show.ID, CheckedIn: 1, Sold: 3}) {
		t.Fatalf("count = %+v, want 1 checked in of 3 sold", c)
	}

	t.Run("BadNonce", func(t *testing.T) {
		for _, n := range []string{"", strings.Repeat("n", seatflow.MaxScanNonce+1)} {
			_, err := e.svc.CheckIn(context.Background(), "door-1", e.show.ID, code, &n)
			wantCode(t, err, seatflow.EINVALID)
		}
	})
	t.Run("TamperedOrForeignIsInvalid", func(t *testing.T) {
		other := e.code(tks[1])
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
			"UnknownKid":           foreignCode(t, "no-such-kid", parts[1]),
		} {
			if r := e.checkIn(e.svc, "door-1", bad, ""); r.Status != seatflow.CheckInInvalid || r.Ticket != nil {
				t.Errorf("%s: %+v, want INVALID without a ticket", name, r)
			}
		}
		if row := e.row(tks[1].ID); row.CheckedInAt != nil {
			t.Fatal("a tampered code admitted its ticket")
		}
		if r := e.checkIn(e.svc, "door-1", other, ""); r.Status != seatflow.CheckInAdmitted {
			t.Fatalf("the untouched code after the tampered ones: %s", r.Status)
		}
	})
	t.Run("WrongShowtime", func(t *testing.T) {
		later, _ := e.showtime(31 * time.Hour)
		r, err := e.svc.CheckIn(context.Background(), "door-1", later.ID, e.code(tks[2]), nil)
		if err != nil || r.Status != seatflow.CheckInWrongShowtime || r.Ticket == nil || r.Ticket.ShowtimeID != e.show.ID {
			t.Fatalf("a scan at another showtime's door: %+v (%v), want WRONG_SHOWTIME naming %d", r, err, e.show.ID)
		}
		if row := e.row(tks[2].ID); row.CheckedInAt != nil {
			t.Fatal("a scan at the wrong door admitted the ticket")
		}
	})
	t.Run("Revoked", func(t *testing.T) {
		o, tks := e.paid("bob", e.seats[5])
		e.inTx(func(tx *ent.Tx) error { return e.svc.RevokeOrderIn(context.Background(), tx, o.ID) })
		if r := e.checkIn(e.svc, "door-1", e.code(tks[0]), ""); r.Status != seatflow.CheckInRevoked {
			t.Fatalf("a scan of a refunded order's ticket: %s, want REVOKED", r.Status)
		}
	})
	t.Run("Expired", func(t *testing.T) {
		_, tks := e.paid("carol", e.seats[6])
		c := e.code(tks[0])
		e.clock.Advance(e.show.EndsAt.Sub(e.clock.Now()) + time.Second)
		if r := e.checkIn(e.svc, "door-1", c, ""); r.Status != seatflow.CheckInExpired {
			t.Fatalf("a scan after the showtime's end: %s, want EXPIRED", r.Status)
		}
	})
}

func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

// TestConcurrentScansAdmitOnce: 40 scans of one ticket at once, on two instances, each
// with its own nonce: exactly one is ADMITTED and the ticket counts one admission.
func TestConcurrentScansAdmitOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, tks := e.paid("alice", e.seats[0])
	code := e.code(tks[0])
	e.openDoor()
	other := e.instance(e.keys)
	var mu sync.Mutex
	got := map[seatflow.CheckInStatus]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			svc := e.svc
			if i%2 == 1 {
				svc = other
			}
			n := testenv.RandomName("n")
			r, err := svc.CheckIn(context.Background(), "door", e.show.ID, code, &n)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				got["error: "+seatflow.CheckInStatus(err.Error())]++
				return
			}
			got[r.Status]++
		}()
	}
	close(start)
	wg.Wait()
	if got[seatflow.CheckInAdmitted] != 1 || got[seatflow.CheckInAlreadyCheckedIn] != 39 {
		t.Fatalf("40 simultaneous scans: %v, want 1 ADMITTED and 39 ALREADY_CHECKED_IN", got)
	}
	if row := e.row(tks[0].ID); row.Admissions != 1 || row.CheckedInAt == nil {
		t.Fatalf("the ticket after 40 scans: %d admissions, checked in at %v; want 1", row.Admissions, row.CheckedInAt)
	}
}

// TestUpload: offline scanners' uploads. Uploaded in any order, the earliest scan of a
// ticket is its admission and every later one ALREADY_CHECKED_IN, counted as a duplicate
// scan; a scan uploaded again (by its nonce) changes nothing; a revoked ticket's scan is
// REVOKED and not recorded; a scan from a clock running ahead counts as made now; results
// come in the order sent. Over MaxUploadScans scans, or a scan without a nonce, is
// BAD_USER_INPUT and applies nothing.
func TestUpload(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	refunded, gone := e.paid("alice", e.seats[0])
	e.inTx(func(tx *ent.Tx) error { return e.svc.RevokeOrderIn(context.Background(), tx, refunded.ID) })
	_, tks := e.paid("alice", e.seats[1], e.seats[2])
	e.openDoor()
	ctx := context.Background()
	t1 := e.clock.Now().Add(-20 * time.Minute).Truncate(time.Second)
	t2 := t1.Add(5 * time.Minute)
	upload := func(staff string, scans ...seatflow.OfflineScan) []*seatflow.CheckInResult {
		t.Helper()
		r, err := e.svc.Upload(ctx, staff, e.show.ID, scans)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	scan := func(tk *seatflow.Ticket, at time.Time, nonce string) seatflow.OfflineScan {
		return seatflow.OfflineScan{Code: e.code(tk), ScannedAt: at, Nonce: nonce}
	}
	// The later scan uploaded first is the admission while nothing earlier is known.
	if r := upload("scanner-2", scan(tks[0], t2, "s2-a")); r[0].Status != seatflow.CheckInAdmitted || !r[0].FirstCheckedInAt.Equal(t2) {
		t.Fatalf("first upload: %+v", r[0])
	}
	r := upload("scanner-1", scan(gone[0], t1, "s1-r"), scan(tks[0], t1, "s1-a"),
		seatflow.OfflineScan{Code: "nonsense", ScannedAt: t1, Nonce: "s1-x"}, scan(tks[1], t1.Add(time.Minute), "s1-b"))
	if r[0].Status != seatflow.CheckInRevoked || r[1].Status != seatflow.CheckInAdmitted || !r[1].FirstCheckedInAt.Equal(t1) ||
		r[2].Status != seatflow.CheckInInvalid || r[3].Status != seatflow.CheckInAdmitted {
		t.Fatalf("second upload: %s %s %s %s, want REVOKED, ADMITTED (at %s), INVALID, ADMITTED",
			r[0].Status, r[1].Status, r[2].Status, r[3].Status, t1)
	}
	if r := upload("scanner-2", scan(tks[0], t2, "s2-a")); r[0].Status != seatflow.CheckInAlreadyCheckedIn || !r[0].FirstCheckedInAt.Equal(t1) {
		t.Fatalf("the later scan uploaded again: %+v, want ALREADY_CHECKED_IN at %s", r[0], t1)
	}
	want := seatflow.CheckInCount{ShowtimeID: e.show.ID, CheckedIn: 2, Sold: 2, DuplicateScans: 1}
	if c := e.count(); c != want {
		t.Fatalf("count = %+v, want %+v", c, want)
	}
	upload("scanner-1", scan(tks[0], t1, "s1-a"), scan(tks[0], t2, "s2-a"), scan(tks[1], t1.Add(time.Minute), "s1-b"))
	if c := e.count(); c != want {
		t.Fatalf("count after uploading everything again = %+v, want %+v", c, want)
	}
	if n := e.db.OfflineScan.Query().CountX(ctx); n != 3 {
		t.Fatalf("%d offline scans recorded, want 3 (the revoked ticket's is not)", n)
	}
	if r := e.checkIn(e.svc, "door", e.code(tks[0]), ""); r.Status != seatflow.CheckInAlreadyCheckedIn || !r.FirstCheckedInAt.Equal(t1) {
		t.Fatalf("an online scan after the uploads: %+v, want ALREADY_CHECKED_IN at %s", r, t1)
	}

	t.Run("ScanFromTheFutureCountsAsNow", func(t *testing.T) {
		_, tks := e.paid("dan", e.seats[3])
		r := upload("scanner-2", scan(tks[0], e.clock.Now().Add(time.Hour), "future"))
		if r[0].Status != seatflow.CheckInAdmitted || !r[0].FirstCheckedInAt.Equal(e.clock.Now()) {
			t.Fatalf("a scan an hour ahead: %+v, want ADMITTED at %s", r[0], e.clock.Now())
		}
	})
	t.Run("BadUploads", func(t *testing.T) {
		_, tks := e.paid("erin", e.seats[4])
		_, err := e.svc.Upload(ctx, "scanner-1", e.show.ID, []seatflow.OfflineScan{scan(tks[0], t1, "ok"), scan(tks[0], t1, "")})
		wantCode(t, err, seatflow.EINVALID)
		many := make([]seatflow.OfflineScan, seatflow.MaxUploadScans+1)
		for i := range many {
			many[i] = scan(tks[0], t1, "n")
		}
		_, err = e.svc.Upload(ctx, "scanner-1", e.show.ID, many)
		wantCode(t, err, seatflow.EINVALID)
		if row := e.row(tks[0].ID); row.CheckedInAt != nil {
			t.Fatal("a refused upload admitted its ticket")
		}
	})
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

// kidOf reads the kid of a code's header.
func kidOf(t *testing.T, code string) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(strings.Split(code, ".")[0])
	if err != nil {
		t.Fatal(err)
	}
	var h struct{ Kid string }
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatal(err)
	}
	return h.Kid
}
