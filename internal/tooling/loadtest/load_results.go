package loadtest

import (
	"encoding/json"
	"fmt"
	"net/http"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"seatflow"
	"seatflow/internal/tooling/gqlclient"
)

// Codes that are business outcomes of a crowded premiere, not failures.
var expectedCodes = map[string]bool{
	seatflow.ESEATSUNAVAILABLE: true, seatflow.ESEATGAP: true, seatflow.ERATELIMITED: true, seatflow.ELIMIT: true,
	seatflow.EORDEREXPIRED: true, seatflow.EINVALIDSTATE: true, seatflow.EINPROGRESS: true,
}

// sample keeps the first two failing requests of each kind for the report.
func (l *loadRun) sample(kind, format string, a ...any) {
	if l.sampled == nil {
		l.sampled = map[string]int{}
	}
	if l.sampled[kind] < 2 && len(l.samples) < 40 {
		l.sampled[kind]++
		l.samples = append(l.samples, fmt.Sprintf(format, a...))
	}
}

// handle accounts one vegeta result (called by one goroutine only).
func (l *loadRun) handle(res *vegeta.Result) {
	seq, _ := seqOfURL(res.URL)
	v, _ := l.inflight.LoadAndDelete(seq)
	m, _ := v.(*reqMeta)
	if m == nil {
		m = &reqMeta{op: "unknown"}
		if l.stats[m.op] == nil {
			l.stats[m.op] = &opStats{codes: map[string]int{}}
		}
	}
	st := l.stats[m.op]
	st.metrics.Add(res)
	key := func(code string) string { return m.op + " " + code }
	if m.pend != nil && (res.Code == 0 || len(res.Body) == 0) {
		l.returnPending(m.pend) // the request may not have reached a server: try again later
	}
	if res.Code == 0 {
		code := "TRANSPORT"
		st.codes[code]++
		if l.o.Chaos && l.instanceDownAt(m.addr, res.Timestamp) {
			l.chaosExp[key("TRANSPORT (instance killed)")]++
			return
		}
		l.failed[key(code)]++
		l.sample(key(code), "%s to %s at %s: transport error: %s", m.op, m.addr, res.Timestamp.Format("15:04:05.000"), res.Error)
		return
	}
	r, err := gqlclient.Decode(res.Body)
	if err != nil {
		code := fmt.Sprintf("HTTP_%d", res.Code)
		st.codes[code]++
		l.failed[key(code)]++
		l.sample(key(code), "%s to %s: HTTP %d, body %.200q", m.op, m.addr, res.Code, res.Body)
		return
	}
	if len(r.Errors) > 0 {
		code := r.Code()
		st.codes[code]++
		switch {
		case expectedCodes[code]:
			l.expected[key(code)]++
		case code == seatflow.EUNAVAILABLE && l.o.Chaos && l.afterRedisRestart(res.Timestamp):
			l.chaosExp[key(code+" (Redis restarted)")]++
			if res.End().After(l.lastUnavail) {
				l.lastUnavail = res.End()
			}
			l.sample("chaos "+key(code), "(expected) %s to %s at %s: %s: %s", m.op, m.addr, res.Timestamp.Format("15:04:05.000"), code, r.Errors[0].Message)
		default:
			l.failed[key(code)]++
			l.sample(key(code), "%s to %s at %s (seq %d): %s: %s", m.op, m.addr, res.Timestamp.Format("15:04:05.000"), seq, code, r.Errors[0].Message)
		}
		if m.pend != nil && code == seatflow.EUNAVAILABLE {
			l.returnPending(m.pend)
		}
		return
	}
	if res.Code != http.StatusOK {
		code := fmt.Sprintf("HTTP_%d", res.Code)
		st.codes[code]++
		l.failed[key(code)]++
		l.sample(key(code), "%s to %s: HTTP %d, body %.200q", m.op, m.addr, res.Code, res.Body)
		return
	}
	st.ok++
	switch m.op {
	case opHold:
		var d struct {
			HoldSeats struct {
				ID     string
				Status string
			}
		}
		o := &d.HoldSeats
		if json.Unmarshal(r.Data, &d) == nil && o.ID != "" && o.Status == "PENDING_PAYMENT" {
			l.returnPending(&pendingOrder{id: o.ID, cust: m.cust, show: m.show, seats: m.seats})
		}
	case opPay:
		var d struct {
			PayOrder struct {
				ID     string
				Status string
				Seats  []struct{ ID string }
			}
		}
		o := &d.PayOrder
		if json.Unmarshal(r.Data, &d) == nil && o.Status == "PAID" {
			p := *m.pend
			p.seats = p.seats[:0:0]
			for _, s := range o.Seats {
				p.seats = append(p.seats, s.ID)
			}
			l.paid[o.ID] = &p
			for _, s := range p.seats {
				k := p.show + "|" + s
				if other, taken := l.paidSeat[k]; taken && other != o.ID {
					l.oversoldC++
					l.sample("oversold", "seat %s of showtime %s paid by order %s and by order %s", s, p.show, other, o.ID)
				}
				l.paidSeat[k] = o.ID
			}
		}
	}
}

func (l *loadRun) returnPending(p *pendingOrder) {
	l.pendMu.Lock()
	defer l.pendMu.Unlock()
	if len(l.pending) < 100000 {
		l.pending = append(l.pending, p)
	}
}
