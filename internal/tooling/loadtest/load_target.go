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

var loadOps = []string{opShowtimes, opShowtime, opMovies, opSeatMap, opHold, opPay, opCancel}

// The mix per mille: 90% browsing, 8% holds, 2% pays or cancels.
const (
	mixShowtimes = 270
	mixShowtime  = 230
	mixMovies    = 150
	mixSeatMap   = 250 // 900 browsing
	mixHold      = 80  // 980
	// the remaining 20: pay (65%) or cancel (35%) of a pending order
)

const (
	qShowtimes = `query LoadShowtimes($date: Date!, $movieId: ID) { showtimes(date: $date, movieId: $movieId) { id startsAt endsAt status movie { id title durationMinutes rating } hall { id name } } }`
	qShowtime  = `query LoadShowtime($id: ID!) { showtime(id: $id) { id startsAt endsAt status currency purchaseLimit prices { kind amountCents } movie { id title } hall { id name seats { id row number x y kind sellable } } } }`
	qMovies    = `query LoadMovies { movies(first: 10) { totalCount edges { cursor node { id title genres durationMinutes showtimes { id startsAt status } } } } }`
	qSeatMap   = `query LoadSeatMap($id: ID!) { seatMap(showtimeId: $id) { showtimeId version available seats { seat { id } status } } }`
	qHold      = `mutation LoadHold($in: HoldSeatsInput!) { holdSeats(input: $in) { id status amountCents expiresAt seats { id } } }`
	qPay       = `mutation LoadPay($id: ID!, $ref: String!) { payOrder(orderId: $id, paymentRef: $ref) { id status paidAt refundRequired seats { id } } }`
	qCancel    = `mutation LoadCancel($id: ID!) { cancelOrder(orderId: $id) { id status } }`
	qWatch     = `subscription LoadWatch($id: ID!) { seatMap(showtimeId: $id) { kind version seats { seat { id } status } } }`
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
	var body []byte
	roll := l.intn(1000)
	var pend *pendingOrder
	if roll >= mixHold+900 {
		if pend = l.takePending(); pend == nil {
			roll = 0 // nothing to pay yet: browse instead
		}
	}
	switch {
	case roll < mixShowtimes:
		m.op = opShowtimes
		date := l.dates[l.intn(len(l.dates))]
		movie := ""
		if l.intn(3) == 0 {
			movie = l.movieIDs[l.intn(len(l.movieIDs))]
		}
		body = l.staticBody("st|"+date+"|"+movie, func() []byte {
			vars := map[string]any{"date": date}
			if movie != "" {
				vars["movieId"] = movie
			}
			return gqlBody("LoadShowtimes", qShowtimes, vars)
		})
	case roll < mixShowtimes+mixShowtime:
		m.op = opShowtime
		id := l.showIDs[l.intn(len(l.showIDs))]
		body = l.staticBody("s|"+id, func() []byte { return gqlBody("LoadShowtime", qShowtime, map[string]any{"id": id}) })
	case roll < mixShowtimes+mixShowtime+mixMovies:
		m.op = opMovies
		body = l.staticBody("m", func() []byte { return gqlBody("LoadMovies", qMovies, nil) })
	case roll < 900:
		m.op = opSeatMap
		id := l.hot[l.intn(len(l.hot))].id
		if l.intn(4) == 0 {
			id = l.showIDs[l.intn(len(l.showIDs))]
		}
		body = l.staticBody("sm|"+id, func() []byte { return gqlBody("LoadSeatMap", qSeatMap, map[string]any{"id": id}) })
	case roll < 900+mixHold:
		m.op = opHold
		m.cust = l.intn(len(l.tokens))
		hs := l.hot[l.intn(len(l.hot))]
		row := hs.rows[l.intn(len(hs.rows))]
		n := 1 + l.intn(4)
		if n > len(row) {
			n = len(row)
		}
		start := l.intn(len(row) - n + 1)
		m.show, m.seats = hs.id, append([]string(nil), row[start:start+n]...)
		hdr.Set("Authorization", "Bearer "+l.tokens[m.cust])
		body = gqlBody("LoadHold", qHold, map[string]any{"in": map[string]any{"showtimeId": m.show, "seatIds": m.seats,
			"idempotencyKey": fmt.Sprintf("load-%s-%d", l.runTag, seq)}})
	default:
		m.pend = pend
		hdr.Set("Authorization", "Bearer "+l.tokens[pend.cust])
		if l.intn(100) < 65 {
			m.op = opPay
			body = gqlBody("LoadPay", qPay, map[string]any{"id": pend.id, "ref": fmt.Sprintf("pay-%s-%d", l.runTag, seq)})
		} else {
			m.op = opCancel
			body = gqlBody("LoadCancel", qCancel, map[string]any{"id": pend.id})
		}
	}
	l.inflight.Store(seq, m)
	t.Method, t.URL, t.Body, t.Header = http.MethodPost, gqlURL(m.addr, seq), body, hdr
	return nil
}
