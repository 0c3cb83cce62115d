package loadtest

import (
	"fmt"
	"net/http"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"seatflow/internal/tooling/gqlclient"
)

// Operations of the mix.
const (
	opShowtimes = "showtimes"
	opShowtime  = "showtime"
	opMovies    = "movies"
	opSeatMap   = "seatMap"
	opHold      = "holdSeats"
	opPay       = "payOrder"
	opCancel    = "cancelOrder"
)

// mixEntry is one operation of the premiere-night mix: its share per mille of the
// requests, and how one request of it is made. Adding an operation (the queue, tickets)
// is one entry.
type mixEntry struct {
	op       string
	perMille int
	// request fills m (and hdr's token) and returns the body; nil when it cannot be sent
	// now (a payment with no pending order): the targeter browses instead.
	request func(l *loadRun, m *reqMeta, hdr http.Header, seq uint64) []byte
}

// mix is 90% browsing, 8% holds, 2% payments (65%) or cancels of a pending order.
var mix = []mixEntry{
	{opShowtimes, 270, (*loadRun).showtimesRequest},
	{opShowtime, 230, func(l *loadRun, _ *reqMeta, _ http.Header, _ uint64) []byte {
		id := l.showIDs[l.intn(len(l.showIDs))]
		return l.staticBody("s|"+id, func() []byte { return gqlBody("LoadShowtime", qShowtime, map[string]any{"id": id}) })
	}},
	{opMovies, 150, func(l *loadRun, _ *reqMeta, _ http.Header, _ uint64) []byte {
		return l.staticBody("m", func() []byte { return gqlBody("LoadMovies", qMovies, nil) })
	}},
	{opSeatMap, 250, func(l *loadRun, _ *reqMeta, _ http.Header, _ uint64) []byte {
		id := l.hot[l.intn(len(l.hot))].id
		if l.intn(4) == 0 {
			id = l.showIDs[l.intn(len(l.showIDs))]
		}
		return l.staticBody("sm|"+id, func() []byte { return gqlBody("LoadSeatMap", qSeatMap, map[string]any{"id": id}) })
	}},
	{opHold, 80, (*loadRun).holdRequest},
	{opPay, 13, func(l *loadRun, m *reqMeta, hdr http.Header, seq uint64) []byte {
		if m.pend = l.takePending(); m.pend == nil {
			return nil
		}
		hdr.Set("Authorization", "Bearer "+l.tokens[m.pend.cust])
		return gqlBody("LoadPay", qPay, map[string]any{"id": m.pend.id, "ref": fmt.Sprintf("pay-%s-%d", l.runTag, seq)})
	}},
	{opCancel, 7, func(l *loadRun, m *reqMeta, hdr http.Header, _ uint64) []byte {
		if m.pend = l.takePending(); m.pend == nil {
			return nil
		}
		hdr.Set("Authorization", "Bearer "+l.tokens[m.pend.cust])
		return gqlBody("LoadCancel", qCancel, map[string]any{"id": m.pend.id})
	}},
}

// loadOps are the mix's operations, in its order.
var loadOps = func() []string {
	ops := make([]string, len(mix))
	for i, e := range mix {
		ops[i] = e.op
	}
	return ops
}()

const (
	qShowtimes = `query LoadShowtimes($date: Date!, $movieId: ID) { showtimes(date: $date, movieId: $movieId) { id startsAt endsAt status movie { id title durationMinutes rating } hall { id name } } }`
	qShowtime  = `query LoadShowtime($id: ID!) { showtime(id: $id) { id startsAt endsAt status currency purchaseLimit prices { kind amountCents } movie { id title } hall { id name seats { id row number x y kind sellable } } } }`
	qMovies    = `query LoadMovies { movies(first: 10) { totalCount edges { cursor node { id title genres durationMinutes showtimes { id startsAt status } } } } }`
	qSeatMap   = `query LoadSeatMap($id: ID!) { seatMap(showtimeId: $id) { showtimeId version available seats { seat { id } status } } }`
	qHold      = `mutation LoadHold($in: HoldSeatsInput!) { holdSeats(input: $in) { id status amountCents expiresAt seats { id } } }`
	qPay       = `mutation LoadPay($id: ID!, $ref: String!) { payOrder(orderId: $id, paymentRef: $ref) { id status paidAt refundRequired seats { id } } }`
	qCancel    = `mutation LoadCancel($id: ID!) { cancelOrder(orderId: $id) { id status } }`
	qWatch     = `subscription LoadWatch($id: ID!) { seatMap(showtimeId: $id) { kind fromVersion version seats { seat { id } status } } }`
)

// gqlBody is the body of one request of the mix, named so the server's logs and metrics
// tell the operations apart.
func gqlBody(opName, query string, vars map[string]any) []byte {
	return gqlclient.Request{OperationName: opName, Query: query, Variables: vars}.Body()
}

// staticBody caches the bodies of browsing requests (a handful of distinct ones).
func (l *loadRun) staticBody(key string, build func() []byte) []byte {
	l.staticMu.Lock()
	defer l.staticMu.Unlock()
	b, ok := l.static[key]
	if !ok {
		b = build()
		l.static[key] = b
	}
	return b
}

// pickInstance round-robins over the instances a load balancer would consider healthy.
func (l *loadRun) pickInstance() string {
	n := len(l.o.Instances)
	start := int(l.rr.Add(1) % uint64(n))
	for k := 0; k < n; k++ {
		i := (start + k) % n
		if l.healthy[i].Load() {
			return l.o.Instances[i]
		}
	}
	return l.o.Instances[start]
}

func (l *loadRun) takePending() *pendingOrder {
	l.pendMu.Lock()
	defer l.pendMu.Unlock()
	if len(l.pending) == 0 {
		return nil
	}
	i := l.intn(len(l.pending))
	p := l.pending[i]
	l.pending[i] = l.pending[len(l.pending)-1]
	l.pending = l.pending[:len(l.pending)-1]
	return p
}

// targeter picks the next request by the mix. It never fails (an error would stop vegeta).
func (l *loadRun) targeter(t *vegeta.Target) error {
	seq := l.seq.Add(1)
	m := &reqMeta{addr: l.pickInstance()}
	hdr := http.Header{"Content-Type": []string{"application/json"}}
	roll := l.intn(1000)
	e := mix[0]
	for _, x := range mix {
		if roll -= x.perMille; roll < 0 {
			e = x
			break
		}
	}
	body := e.request(l, m, hdr, seq)
	if body == nil { // nothing to pay yet: browse instead
		e = mix[0]
		body = e.request(l, m, hdr, seq)
	}
	m.op = e.op
	l.inflight.Store(seq, m)
	t.Method, t.URL, t.Body, t.Header = http.MethodPost, gqlURL(m.addr, seq), body, hdr
	return nil
}

func (l *loadRun) showtimesRequest(_ *reqMeta, _ http.Header, _ uint64) []byte {
	date := l.dates[l.intn(len(l.dates))]
	movie := ""
	if l.intn(3) == 0 {
		movie = l.movieIDs[l.intn(len(l.movieIDs))]
	}
	return l.staticBody("st|"+date+"|"+movie, func() []byte {
		vars := map[string]any{"date": date}
		if movie != "" {
			vars["movieId"] = movie
		}
		return gqlBody("LoadShowtimes", qShowtimes, vars)
	})
}

// holdRequest holds 1–4 adjacent seats of a hot showtime's row for a random customer.
func (l *loadRun) holdRequest(m *reqMeta, hdr http.Header, seq uint64) []byte {
	m.cust = l.intn(len(l.tokens))
	hs := l.hot[l.intn(len(l.hot))]
	row := hs.rows[l.intn(len(hs.rows))]
	n := min(1+l.intn(4), len(row))
	start := l.intn(len(row) - n + 1)
	m.show, m.seats = hs.id, append([]string(nil), row[start:start+n]...)
	hdr.Set("Authorization", "Bearer "+l.tokens[m.cust])
	return gqlBody("LoadHold", qHold, map[string]any{"in": map[string]any{"showtimeId": m.show, "seatIds": m.seats,
		"idempotencyKey": fmt.Sprintf("load-%s-%d", l.runTag, seq)}})
}
