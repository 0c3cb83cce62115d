package passkit

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"seatflow/ent"
	"seatflow/ent/seat"
	"seatflow/internal/nodeid"
	"seatflow/internal/tickets"
	"seatflow/internal/tooling/testenv"
	"seatflow/internal/wallet"
)

const passType = "pass.dev.seatflow.test"

var testKey = []byte("passkit-test-key-0123456789abcdef")

// env is one test's web service over its own database, served by a real HTTP server,
// with a showtime and tickets of it.
type env struct {
	t      *testing.T
	db     *ent.Client
	clock  *testenv.Clock
	svc    *Service
	pushes *Recorder
	srv    *httptest.Server
	logBuf *testenv.SyncBuffer
	show   int
	keyID  int
	seats  []int
	n      int
}

func newEnv(t *testing.T) *env {
	t.Helper()
	db := testenv.MySQL(t).Client
	clk := testenv.NewClock(time.Date(2030, 3, 10, 9, 0, 0, 0, time.UTC))
	kr, err := tickets.NewKeyring(db, strings.Repeat("s", tickets.MinSecretBytes), clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	if err := kr.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, db: db, clock: clk, logBuf: &testenv.SyncBuffer{}}
	e.keyID = db.TicketKey.Query().OnlyX(context.Background()).ID
	show, hall := testenv.Showtime(t, db, clk.Now(), testenv.ShowtimeSpec{Rows: 1, PerRow: 8, StartsIn: 30 * time.Hour})
	e.show = show
	e.seats = db.Seat.Query().Where(seat.HallID(hall)).Order(ent.Asc(seat.FieldID)).IDsX(context.Background())
	e.svc, e.pushes = e.instance()
	e.svc.Passes = storedPasses{e.svc}
	mux := http.NewServeMux()
	e.svc.Register(mux)
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	return e
}

// instance is another instance's service over the same database, with its own recorder.
func (e *env) instance() (*Service, *Recorder) {
	rec := &Recorder{}
	return New(e.db, nil, rec, Config{PassTypeID: passType, Key: testKey, PushLease: time.Minute, Now: e.clock.Now,
		Log: slog.New(slog.NewTextHandler(e.logBuf, nil))}), rec
}

// ticket writes a ticket of the env's showtime, made now, and returns its serial number.
func (e *env) ticket() (serial string, id int) {
	e.t.Helper()
	e.n++
	tk := e.db.Ticket.Create().SetOrderID(e.n).SetShowtimeID(e.show).SetSeatID(e.seats[e.n-1]).SetKeyID(e.keyID).
		SetCreatedAt(e.clock.Now()).SaveX(context.Background())
	return nodeid.Encode(nodeid.Ticket, tk.ID), tk.ID
}

// touchShowtime writes the showtime's updated_at as a change of it does, a second later.
func (e *env) touchShowtime() {
	e.clock.Advance(time.Second)
	e.db.Showtime.UpdateOneID(e.show).SetUpdatedAt(e.clock.Now()).ExecX(context.Background())
}

// call sends method path with body and the pass's token (none when token is ""), and
// returns the response and its body.
func (e *env) call(method, path, token, body string, header ...string) (*http.Response, string) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "ApplePass "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// register registers device for serial's pass with pushToken, wanting status.
func (e *env) register(device, serial, pushToken string, status int) {
	e.t.Helper()
	res, body := e.call("POST", regPath(device, serial), wallet.AuthenticationToken(testKey, serial), `{"pushToken":"`+pushToken+`"}`)
	if res.StatusCode != status {
		e.t.Fatalf("register %s for %s: %d %s, want %d", device, serial, res.StatusCode, body, status)
	}
}

func regPath(device, serial string) string {
	return "/passkit/v1/devices/" + device + "/registrations/" + passType + "/" + serial
}

// serials lists device's passes updated since tag ("" = all): the status, the serials
// and the lastUpdated tag.
func (e *env) serials(device, since string) (int, []string, string) {
	e.t.Helper()
	path := "/passkit/v1/devices/" + device + "/registrations/" + passType
	if since != "" {
		path += "?passesUpdatedSince=" + since
	}
	res, body := e.call("GET", path, "", "")
	var out struct {
		SerialNumbers []string
		LastUpdated   string
	}
	if res.StatusCode == http.StatusOK {
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			e.t.Fatalf("serials: %v in %s", err, body)
		}
	}
	return res.StatusCode, out.SerialNumbers, out.LastUpdated
}

// storedPasses stands for package wallet's pass maker in this package's tests: the
// "pass" is the JSON of its PassInfo, read from the database like a real one.
type storedPasses struct{ s *Service }

func (p storedPasses) Pass(ctx context.Context, ticketID int) ([]byte, *PassInfo, error) {
	tags, err := p.s.passTags(ctx, []int{ticketID})
	if err != nil {
		return nil, nil, err
	}
	serial := nodeid.Encode(nodeid.Ticket, ticketID)
	info := &PassInfo{SerialNumber: serial, PassTypeID: passType, AuthenticationToken: wallet.AuthenticationToken(testKey, serial),
		LastUpdated: time.UnixMicro(tags[ticketID]).UTC()}
	b, err := json.Marshal(info)
	return b, info, err
}
