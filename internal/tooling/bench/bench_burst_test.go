package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// TestPacedBurstIsOpenLoop: a server slower than the interval between requests does not
// slow the sending (each request goes out on its schedule), every answer is matched with
// the request it answers, and a bad answer is counted as a failure.
func TestPacedBurstIsOpenLoop(t *testing.T) {
	const n, rate, slow = 40, 100, 150 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		time.Sleep(slow)
		io.WriteString(w, "echo "+string(body))
	}))
	defer srv.Close()
	hits := pacedBurst(context.Background(), newBurstClient(), n, rate, func(i int, t *vegeta.Target) {
		*t = vegeta.Target{Method: http.MethodPost, URL: srv.URL + "/x", Body: []byte(strconv.Itoa(i))}
	}, func(code int, body []byte) error {
		if string(body) == "echo 7" {
			return io.ErrUnexpectedEOF // the check's verdict, whatever the status
		}
		return nil
	})
	first := hits[0].sent
	for i, h := range hits {
		if due := first.Add(time.Duration(i) * time.Second / rate); h.sent.Sub(due).Abs() > 40*time.Millisecond {
			t.Errorf("request %d sent %s after the first, due at %s: not open loop", i, h.sent.Sub(first), due.Sub(first))
		}
		if lat := h.answered.Sub(h.sent); lat < slow {
			t.Errorf("request %d answered in %s, faster than the server (%s)", i, lat, slow)
		}
		if wantErr := i == 7; (h.err != "") != wantErr {
			t.Errorf("request %d: error %q, want one: %v", i, h.err, wantErr)
		}
	}
	s := statsOf(hits, rate)
	if s.answered != n-1 || s.failed != 1 || !strings.Contains(s.firstErr, "unexpected EOF") {
		t.Errorf("stats %+v: want %d answered, 1 failed", s, n-1)
	}
	if r := s.perSecond(); r < 0.9*rate || r > 1.1*rate {
		t.Errorf("answered at %.0f/s, want about %d/s", r, rate)
	}
}
