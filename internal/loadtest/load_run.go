package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"seatflow"
	"seatflow/ent/order"
	"seatflow/ent/orderseat"
	"seatflow/internal/app"
	"seatflow/internal/reconcile"
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

// Codes that are business outcomes of a crowded premiere, not failures.
var expectedCodes = map[string]bool{
	"SEATS_UNAVAILABLE": true, "SEAT_GAP": true, "RATE_LIMITED": true, "PURCHASE_LIMIT_EXCEEDED": true,
	"ORDER_EXPIRED": true, "INVALID_STATE": true, "IN_PROGRESS": true,
}

type hotShow struct {
	id   string
	rows [][]string // sellable seat ids per row, in seat order
}

type pendingOrder struct {
	id    string
	cust  int
	show  string
	seats []string
}

type reqMeta struct {
	op    string
	addr  string
	cust  int
	show  string
	seats []string
	pend  *pendingOrder
}

type opStats struct {
	metrics vegeta.Metrics
	ok      int
	codes   map[string]int
}

type window struct{ from, to time.Time } // to zero: still open

type chaosPlan struct {
	kill, restart         func(i int) error
	stopRedis, startRedis func() error
}

type loadRun struct {
	o    *loadOptions
	app  *app.App
	logf func(string, ...any)

	rndMu sync.Mutex
	rnd   *rand.Rand

	admin     string
	tokens    []string
	dates     []string
	movieIDs  []string
	showIDs   []string
	hot       []hotShow
	runTag    string
	staticMu  sync.Mutex
	static    map[string][]byte
	healthy   []atomic.Bool
	rr        atomic.Uint64
	seq       atomic.Uint64
	inflight  sync.Map // seq → *reqMeta
	pendMu    sync.Mutex
	pending   []*pendingOrder
	chaos     *chaosPlan
	chaosMu   sync.Mutex
	downWin   map[string][]window
	redisDown time.Time
	events    []string
	chaosErrs []string

	// touched only by the result loop
	stats    map[string]*opStats
	expected map[string]int // "op code" → count (business outcomes)
	chaosExp map[string]int // "op code" → count (expected because of chaos)
	failed   map[string]int // "op code" → count (failures)
	samples  []string       // a few failing requests, for the report
	sampled  map[string]int
	// end of the last SERVICE_UNAVAILABLE answer after the Redis restart
	lastUnavail time.Time
	paid        map[string]*pendingOrder
	paidSeat    map[string]string
	oversoldC   int

	watch watchStats
}

type watchStats struct {
	connects, disconnects, snapshots, deltas, gaps, regressions, dialErrors atomic.Int64
	connected                                                               atomic.Int64
}

func newLoadRun(o *loadOptions, inst *app.App, logf func(string, ...any)) (*loadRun, error) {
	seed := o.Seed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	l := &loadRun{o: o, app: inst, logf: logf, rnd: rand.New(rand.NewPCG(uint64(seed), 0x5eaf10)),
		static: map[string][]byte{}, healthy: make([]atomic.Bool, len(o.Instances)),
		downWin: map[string][]window{}, stats: map[string]*opStats{}, expected: map[string]int{},
		chaosExp: map[string]int{}, failed: map[string]int{}, paid: map[string]*pendingOrder{},
		paidSeat: map[string]string{}, runTag: strconv.FormatInt(time.Now().UnixNano(), 36)}
	for i := range l.healthy {
		l.healthy[i].Store(true)
	}
	for _, op := range loadOps {
		l.stats[op] = &opStats{codes: map[string]int{}}
	}
	var err error
	if l.admin, err = inst.Auth.Issue("load-admin", "admin", 6*time.Hour); err != nil {
		return nil, err
	}
	for i := 0; i < o.Customers; i++ {
		tok, err := inst.Auth.Issue(fmt.Sprintf("load-%s-customer-%d", l.runTag, i), "customer", 6*time.Hour)
		if err != nil {
			return nil, err
		}
		l.tokens = append(l.tokens, tok)
	}
	return l, nil
}

func (l *loadRun) intn(n int) int {
	l.rndMu.Lock()
	defer l.rndMu.Unlock()
	return l.rnd.IntN(n)
}

// ---- setup -------------------------------------------------------------------------

type gqlError struct {
	Message    string         `json:"message"`
	Extensions map[string]any `json:"extensions"`
}

type gqlResponse struct {
	Data   json.RawMessage `json:"data"`
	Errors []gqlError      `json:"errors"`
}

func (e gqlError) code() string {
	if c, ok := e.Extensions["code"].(string); ok && c != "" {
		return c
	}
	return "NO_CODE"
}

// call is a plain GraphQL request for setup and the final reconciles (not load traffic).
func (l *loadRun) call(ctx context.Context, addr, token, query string, vars map[string]any, out any) error {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/query", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r gqlResponse
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return fmt.Errorf("HTTP %d: %w", resp.StatusCode, err)
	}
	if len(r.Errors) > 0 {
		return fmt.Errorf("%s: %s", r.Errors[0].code(), r.Errors[0].Message)
	}
	if out != nil {
		return json.Unmarshal(r.Data, out)
	}
	return nil
}

// setupCatalog creates the premiere's catalog through the admin API: movies, halls of 200
// seats, showtimes tomorrow and the day after, all on sale. The 18:00 shows are hot.
func (l *loadRun) setupCatalog(ctx context.Context) error {
	addr := l.o.Instances[0]
	movies := []struct {
		title string
		dur   int
	}{{"Premiere: The Last Reel", 150}, {"Night Owls", 110}, {"Paper Moons", 95}}
	for i, m := range movies {
		var out struct{ CreateMovie struct{ ID string } }
		err := l.call(ctx, addr, l.admin, `mutation($in: MovieInput!) { createMovie(input: $in) { id } }`,
			map[string]any{"in": map[string]any{"title": fmt.Sprintf("%s (%s)", m.title, l.runTag), "durationMinutes": m.dur,
				"genres": []string{"Drama"}, "rating": "PG-13", "synopsis": fmt.Sprintf("load test movie %d", i)}}, &out)
		if err != nil {
			return fmt.Errorf("createMovie: %w", err)
		}
		l.movieIDs = append(l.movieIDs, out.CreateMovie.ID)
	}
	const halls = 4
	type seat struct {
		ID       string
		Row      string
		Number   int
		Sellable bool
	}
	var hallSeats [][]seat
	var hallIDs []string
	for h := 0; h < halls; h++ {
		rows := []map[string]any{}
		for r := 0; r < 10; r++ {
			row := map[string]any{"label": string(rune('A' + r)), "seats": 20}
			switch {
			case r == 0:
				row["kind"] = "ACCESSIBLE"
				row["unsellable"] = []int{10, 11}
			case r >= 8:
				row["kind"] = "PREMIUM"
			}
			rows = append(rows, row)
		}
		var out struct {
			CreateHall struct {
				ID    string
				Seats []seat
			}
		}
		err := l.call(ctx, addr, l.admin, `mutation($in: HallInput!) { createHall(input: $in) { id seats { id row number sellable } } }`,
			map[string]any{"in": map[string]any{"name": fmt.Sprintf("Load hall %d (%s)", h+1, l.runTag), "rows": rows}}, &out)
		if err != nil {
			return fmt.Errorf("createHall: %w", err)
		}
		hallIDs = append(hallIDs, out.CreateHall.ID)
		hallSeats = append(hallSeats, out.CreateHall.Seats)
	}
	tomorrow := time.Now().UTC().AddDate(0, 0, 1)
	day := func(d time.Time, hour int) time.Time {
		return time.Date(d.Year(), d.Month(), d.Day(), hour, 0, 0, 0, time.UTC)
	}
	l.dates = []string{tomorrow.Format("2006-01-02"), tomorrow.AddDate(0, 0, 1).Format("2006-01-02")}
	prices := []map[string]any{{"kind": "STANDARD", "amountCents": 1200}, {"kind": "PREMIUM", "amountCents": 1800},
		{"kind": "ACCESSIBLE", "amountCents": 1000}}
	for h := 0; h < halls; h++ {
		for _, slot := range []struct {
			at  time.Time
			hot bool
		}{{day(tomorrow, 18), true}, {day(tomorrow, 13), false}, {day(tomorrow.AddDate(0, 0, 1), 18), false}} {
			var out struct{ CreateShowtime struct{ ID string } }
			err := l.call(ctx, addr, l.admin, `mutation($in: ShowtimeInput!) { createShowtime(input: $in) { id } }`,
				map[string]any{"in": map[string]any{"movieId": l.movieIDs[h%len(l.movieIDs)], "hallId": hallIDs[h],
					"startsAt": slot.at.Format(time.RFC3339), "prices": prices, "purchaseLimit": 6}}, &out)
			if err != nil {
				return fmt.Errorf("createShowtime: %w", err)
			}
			id := out.CreateShowtime.ID
			if err := l.call(ctx, addr, l.admin, `mutation($id: ID!) { openSales(showtimeId: $id) { id status } }`,
				map[string]any{"id": id}, nil); err != nil {
				return fmt.Errorf("openSales: %w", err)
			}
			l.showIDs = append(l.showIDs, id)
			if slot.hot {
				hs := hotShow{id: id}
				byRow := map[string][]seat{}
				for _, s := range hallSeats[h] {
					if s.Sellable {
						byRow[s.Row] = append(byRow[s.Row], s)
					}
				}
				labels := make([]string, 0, len(byRow))
				for r := range byRow {
					labels = append(labels, r)
				}
				sort.Strings(labels)
				for _, r := range labels {
					ss := byRow[r]
					sort.Slice(ss, func(i, j int) bool { return ss[i].Number < ss[j].Number })
					ids := make([]string, len(ss))
					for i, s := range ss {
						ids[i] = s.ID
					}
					hs.rows = append(hs.rows, ids)
				}
				l.hot = append(l.hot, hs)
			}
		}
	}
	l.logf("catalog: %d movies, %d halls of 200 seats, %d showtimes on sale (%d hot)", len(l.movieIDs), halls, len(l.showIDs), len(l.hot))
	return nil
}

// ---- the targeter --------------------------------------------------------------------

func gqlBody(opName, query string, vars map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"operationName": opName, "query": query, "variables": vars})
	return b
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

// ---- results ---------------------------------------------------------------------------

func (l *loadRun) instanceDownAt(addr string, at time.Time) bool {
	l.chaosMu.Lock()
	defer l.chaosMu.Unlock()
	for _, w := range l.downWin[addr] {
		if !at.Before(w.from.Add(-time.Second)) && (w.to.IsZero() || at.Before(w.to)) {
			return true
		}
	}
	return false
}

func (l *loadRun) afterRedisRestart(at time.Time) bool {
	l.chaosMu.Lock()
	defer l.chaosMu.Unlock()
	return !l.redisDown.IsZero() && !at.Before(l.redisDown.Add(-time.Second))
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
	var r struct {
		Data   map[string]json.RawMessage `json:"data"`
		Errors []gqlError                 `json:"errors"`
	}
	if err := json.Unmarshal(res.Body, &r); err != nil {
		code := fmt.Sprintf("HTTP_%d", res.Code)
		st.codes[code]++
		l.failed[key(code)]++
		l.sample(key(code), "%s to %s: HTTP %d, body %.200q", m.op, m.addr, res.Code, res.Body)
		return
	}
	if len(r.Errors) > 0 {
		code := r.Errors[0].code()
		st.codes[code]++
		switch {
		case expectedCodes[code]:
			l.expected[key(code)]++
		case code == "SERVICE_UNAVAILABLE" && l.o.Chaos && l.afterRedisRestart(res.Timestamp):
			l.chaosExp[key(code+" (Redis restarted)")]++
			if res.End().After(l.lastUnavail) {
				l.lastUnavail = res.End()
			}
			l.sample("chaos "+key(code), "(expected) %s to %s at %s: %s: %s", m.op, m.addr, res.Timestamp.Format("15:04:05.000"), code, r.Errors[0].Message)
		default:
			l.failed[key(code)]++
			l.sample(key(code), "%s to %s at %s (seq %d): %s: %s", m.op, m.addr, res.Timestamp.Format("15:04:05.000"), seq, code, r.Errors[0].Message)
		}
		if m.pend != nil && code == "SERVICE_UNAVAILABLE" {
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
		var o struct {
			ID     string
			Status string
		}
		if json.Unmarshal(r.Data["holdSeats"], &o) == nil && o.ID != "" && o.Status == "PENDING_PAYMENT" {
			l.returnPending(&pendingOrder{id: o.ID, cust: m.cust, show: m.show, seats: m.seats})
		}
	case opPay:
		var o struct {
			ID     string
			Status string
			Seats  []struct{ ID string }
		}
		if json.Unmarshal(r.Data["payOrder"], &o) == nil && o.Status == "PAID" {
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

// ---- the run -------------------------------------------------------------------------

// loadReport is everything the run measured.
type loadReport struct {
	duration, attackTook time.Duration
	rate                 int
	instances            int
	stats                map[string]*opStats
	expected, chaosExp   map[string]int
	failed               map[string]int
	samples              []string
	watchersWanted       int
	watchersAtStart      int64
	watch                *watchStats
	events, chaosErrs    []string
	reconciles           []string
	converged            bool
	verifyFirst          []string
	verifyFinal          []string
	verifyErr            error
	verifyAttempts       int
	oversoldClient       int
	oversoldDB           int
	paidOrders           int
	paidLost             []string
	internal             int
}

func (l *loadRun) execute(ctx context.Context) (*loadReport, error) {
	o := l.o
	rep := &loadReport{duration: o.Duration, rate: o.Rate, instances: len(o.Instances), watchersWanted: o.Watchers, watch: &l.watch}

	// Watchers first, ramped up, so the attack starts with every one of them subscribed.
	wctx, stopWatchers := context.WithCancel(ctx)
	defer stopWatchers()
	var wwg sync.WaitGroup
	if o.Watchers > 0 {
		l.logf("connecting %d websocket watchers over %d hot showtimes and %d instances", o.Watchers, len(l.hot), len(o.Instances))
		for i := 0; i < o.Watchers; i++ {
			wwg.Add(1)
			go func() { defer wwg.Done(); l.watcher(wctx, i) }()
			if i%50 == 49 {
				time.Sleep(100 * time.Millisecond)
			}
		}
		deadline := time.Now().Add(60 * time.Second)
		for l.watch.connected.Load() < int64(o.Watchers) && time.Now().Before(deadline) && ctx.Err() == nil {
			time.Sleep(200 * time.Millisecond)
		}
	}
	rep.watchersAtStart = l.watch.connected.Load()
	if o.Watchers > 0 {
		time.Sleep(3 * time.Second) // let the instances finish sending the snapshots
	}
	l.logf("%d watchers subscribed; attacking at %d req/s for %s%s", rep.watchersAtStart, o.Rate, o.Duration,
		map[bool]string{true: " with chaos", false: ""}[o.Chaos])

	atk := vegeta.NewAttacker(vegeta.Timeout(30*time.Second), vegeta.KeepAlive(true), vegeta.Workers(32),
		vegeta.MaxWorkers(o.MaxWorkers), vegeta.Connections(1000), vegeta.HTTP2(false), vegeta.Redirects(0))
	began := time.Now()
	var chaosWG sync.WaitGroup
	if l.chaos != nil {
		chaosWG.Add(1)
		go func() { defer chaosWG.Done(); l.runChaos(ctx, began) }()
	}
	results := atk.Attack(l.targeter, vegeta.Rate{Freq: o.Rate, Per: time.Second}, o.Duration, "premiere")
	progress := time.NewTicker(10 * time.Second)
	defer progress.Stop()
	n := 0
loop:
	for {
		select {
		case res, ok := <-results:
			if !ok {
				break loop
			}
			l.handle(res)
			n++
		case <-progress.C:
			l.logf("%s: %d responses, %d failures so far, %d deltas delivered, %d watchers connected",
				time.Since(began).Round(time.Second), n, sum(l.failed), l.watch.deltas.Load(), l.watch.connected.Load())
		case <-ctx.Done():
			atk.Stop()
		}
	}
	rep.attackTook = time.Since(began)
	chaosWG.Wait()
	stopWatchers()
	waitOrTimeout(&wwg, 20*time.Second)
	for _, s := range l.stats {
		s.metrics.Close()
	}
	l.chaosMu.Lock()
	rep.events, rep.chaosErrs = l.events, l.chaosErrs
	if !l.redisDown.IsZero() && !l.lastUnavail.IsZero() {
		rep.events = append(rep.events, fmt.Sprintf("%s last SERVICE_UNAVAILABLE answer, %.1fs after the Redis shutdown (seat hashes are rebuilt by the reconciler)",
			l.lastUnavail.Format("15:04:05.000"), l.lastUnavail.Sub(l.redisDown).Seconds()))
	}
	l.chaosMu.Unlock()
	rep.stats, rep.expected, rep.chaosExp, rep.failed, rep.samples = l.stats, l.expected, l.chaosExp, l.failed, l.samples
	rep.oversoldClient, rep.paidOrders = l.oversoldC, len(l.paid)
	for k, v := range l.failed {
		if len(k) > 9 && k[len(k)-9:] == " INTERNAL" {
			rep.internal += v
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	l.converge(ctx, rep)
	l.verify(ctx, rep)
	return rep, nil
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func waitOrTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

func (l *loadRun) event(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	l.logf("chaos: %s", msg)
	l.chaosMu.Lock()
	l.events = append(l.events, time.Now().Format("15:04:05.000")+" "+msg)
	l.chaosMu.Unlock()
}

func (l *loadRun) chaosFailed(err error) {
	l.logf("chaos: FAILED: %v", err)
	l.chaosMu.Lock()
	l.chaosErrs = append(l.chaosErrs, err.Error())
	l.chaosMu.Unlock()
}

// runChaos kill -9s one instance at 1/3 of the run (restarted on the same port a few
// seconds later) and restarts Redis without saving at 2/3 (every seat hash is lost).
func (l *loadRun) runChaos(ctx context.Context, began time.Time) {
	sleepUntil := func(t time.Time) bool {
		select {
		case <-time.After(time.Until(t)):
			return true
		case <-ctx.Done():
			return false
		}
	}
	victim := 1 % len(l.o.Instances)
	addr := l.o.Instances[victim]
	if !sleepUntil(began.Add(l.o.Duration / 3)) {
		return
	}
	l.chaosMu.Lock()
	l.downWin[addr] = append(l.downWin[addr], window{from: time.Now()})
	l.chaosMu.Unlock()
	l.healthy[victim].Store(false)
	if err := l.chaos.kill(victim); err != nil {
		l.chaosFailed(fmt.Errorf("kill -9 %s: %w", addr, err))
	} else {
		l.event("kill -9 instance %s", addr)
	}
	time.Sleep(3 * time.Second)
	if err := l.chaos.restart(victim); err != nil {
		l.chaosFailed(fmt.Errorf("restart %s: %w", addr, err))
	} else {
		l.event("instance %s restarted and ready", addr)
	}
	l.healthy[victim].Store(true)
	l.chaosMu.Lock()
	w := l.downWin[addr]
	w[len(w)-1].to = time.Now().Add(2 * time.Second)
	l.chaosMu.Unlock()

	if !sleepUntil(began.Add(2 * l.o.Duration / 3)) {
		return
	}
	l.chaosMu.Lock()
	l.redisDown = time.Now()
	l.chaosMu.Unlock()
	if err := l.chaos.stopRedis(); err != nil {
		l.chaosFailed(fmt.Errorf("stop redis: %w", err))
		return
	}
	l.event("redis-cli -p %d shutdown nosave", l.o.RedisPort)
	time.Sleep(3 * time.Second)
	if err := l.chaos.startRedis(); err != nil {
		l.chaosFailed(fmt.Errorf("start redis: %w", err))
		return
	}
	l.event("redis-server restarted empty on %d", l.o.RedisPort)
}

// converge runs runReconcile as admin until a run repairs nothing (bounded).
func (l *loadRun) converge(ctx context.Context, rep *loadReport) {
	type report struct {
		ExpiredCancelled, PaidSeatsFixed, HashesRebuilt, OrphanHoldsReleased, SoldOrphansReleased, LimitsRecounted int
	}
	q := `mutation { runReconcile { expiredCancelled paidSeatsFixed hashesRebuilt orphanHoldsReleased soldOrphansReleased limitsRecounted } }`
	quiet := 0
	for i := 0; i < 30 && ctx.Err() == nil; i++ {
		var out struct{ RunReconcile report }
		err := l.call(ctx, l.o.Instances[i%len(l.o.Instances)], l.admin, q, nil, &out)
		if err != nil {
			rep.reconciles = append(rep.reconciles, "error: "+err.Error())
			time.Sleep(time.Second)
			continue
		}
		r := out.RunReconcile
		rep.reconciles = append(rep.reconciles, fmt.Sprintf("%+v", r))
		if r == (report{}) {
			quiet++
			if quiet >= 2 {
				rep.converged = true
				return
			}
		} else {
			quiet = 0
		}
		time.Sleep(time.Second)
	}
}

// verify runs reconcile.Verify over the instances' stores (retrying a few times with a
// reconcile in between, since holds keep expiring in the background), checks that no
// seat is in two active orders and that every order the load test paid is still PAID.
func (l *loadRun) verify(ctx context.Context, rep *loadReport) {
	for attempt := 1; attempt <= 4; attempt++ {
		rep.verifyAttempts = attempt
		vs, err := reconcile.Verify(ctx, l.app.DB, l.app.Seats)
		rep.verifyErr = err
		rep.verifyFinal = rep.verifyFinal[:0]
		for _, v := range vs {
			rep.verifyFinal = append(rep.verifyFinal, v.String())
		}
		if attempt == 1 {
			rep.verifyFirst = append([]string(nil), rep.verifyFinal...)
		}
		if err == nil && len(vs) == 0 {
			break
		}
		time.Sleep(2 * time.Second)
		l.converge(ctx, &loadReport{})
	}
	// Seats in two active orders, straight from MySQL.
	active, err := l.app.DB.Order.Query().Where(order.StatusIn(seatflow.OrderPending, seatflow.OrderPaid)).All(ctx)
	if err != nil {
		rep.verifyErr = errors.Join(rep.verifyErr, err)
		return
	}
	showOf := map[int]int{}
	ids := make([]int, 0, len(active))
	for _, o := range active {
		showOf[o.ID] = o.ShowtimeID
		ids = append(ids, o.ID)
	}
	seatsOf, err := l.app.DB.OrderSeat.Query().Where(orderseat.OrderIDIn(ids...)).All(ctx)
	if err != nil {
		rep.verifyErr = errors.Join(rep.verifyErr, err)
		return
	}
	count := map[[2]int]int{}
	for _, s := range seatsOf {
		k := [2]int{showOf[s.OrderID], s.SeatID}
		count[k]++
		if count[k] == 2 {
			rep.oversoldDB++
		}
	}
	// Every order the load test saw PAID must still be PAID.
	paidIDs := make([]int, 0, len(l.paid))
	for id := range l.paid {
		if n, err := strconv.Atoi(id); err == nil {
			paidIDs = append(paidIDs, n)
		}
	}
	stillPaid := map[int]bool{}
	for i := 0; i < len(paidIDs); i += 500 {
		chunk := paidIDs[i:min(i+500, len(paidIDs))]
		os, err := l.app.DB.Order.Query().Where(order.IDIn(chunk...), order.StatusEQ(seatflow.OrderPaid)).All(ctx)
		if err != nil {
			rep.verifyErr = errors.Join(rep.verifyErr, err)
			return
		}
		for _, o := range os {
			stillPaid[o.ID] = true
		}
	}
	for _, id := range paidIDs {
		if !stillPaid[id] {
			rep.paidLost = append(rep.paidLost, strconv.Itoa(id))
		}
	}
}
