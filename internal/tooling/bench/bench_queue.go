package bench

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"seatflow"
	"seatflow/internal/keys"
	"seatflow/internal/nodeid"
	"seatflow/internal/tooling/gqlclient"
)

// The on-sale queue (docs/DESIGN.md "On-sale queue"): entrants join one showtime's queue
// before it opens, spread over queueJoinSpread, some follow their ticket on the one
// instance, then the queue opens at queueRate a minute on a 2,000-seat showtime.
const (
	queueJoinSpread = 10 * time.Second
	// queueSearchFor is how long each rate of the join target's search offers joins.
	queueSearchFor = 5 * time.Second
	queueRate      = 3000
	queueRows      = 40 // × queuePerRow: 2,000 seats
	queuePerRow    = 50
	// queueWatch is how long the section watches the open queue: past the inventory cap
	// (2,000 seats / 2.5 = 800 passes, 16 s at 50 a second) and one refresh push more.
	queueWatch = 25 * time.Second
	// Targets: what the section's verdicts (PASS or MISS) hold the queue to.
	queueJoinP99Target   = 50 * time.Millisecond
	queueTickTarget      = 5 * time.Millisecond
	queueStalenessTarget = 2 * time.Second
	queueRhoTarget       = 0.05
)

const (
	queueJoinQ      = `mutation($id: ID!) { joinQueue(showtimeId: $id) { id } }`
	queueSubscribeQ = `subscription($id: ID!) { queue(showtimeId: $id) { status position } }`
	queueSetQ       = `mutation($id: ID!, $in: OnSaleQueueInput!) { setOnSaleQueue(showtimeId: $id, input: $in) { phase } }`
	queueStatusQ    = `query($id: ID!) { showtime(id: $id) { queue { phase admitted drawCommitment drawSeed } } }`
)

// queueEvent is one published change of the queue, as the bench heard it.
type queueEvent struct {
	at       time.Time // when the bench received it
	phase    string
	admitted []string // ticket numbers
	us       int64    // the tick's time inside Redis
}

// queuePush is one ticket a subscriber received.
type queuePush struct {
	at       time.Time
	status   string
	position int // 0: none
}

// queueFollower is one subscriber and what it received.
type queueFollower struct {
	entrant int
	sub     *gqlclient.Subscription
	mu      sync.Mutex
	pushes  []queuePush
}

func benchQueue(ctx context.Context, b *benchEnv, w io.Writer) error {
	entrants, followers := b.Opt.QueueEntrants, b.Opt.QueueSubscribers
	if entrants < 100 || followers < 1 || followers > entrants {
		return fmt.Errorf("-queue-entrants must be at least 100 and -queue-subscribers 1 to it")
	}
	if capN := int(b.NoFile) - 600; followers > capN {
		b.note("On-sale queue: %d subscribers capped at %d by the open-file limit (%d per process).", followers, capN, b.NoFile)
		followers = capN
	}
	if load := loadAverage(); busyHost(load) {
		b.note("On-sale queue: the host was shared, load average %s at the section's start on %d cores: the server, its clients, MySQL and Redis ran beside other work, which the joins' tail and the staleness feel first.",
			load, runtime.NumCPU())
	}
	fixtures, err := b.openBenchApp(ctx)
	if err != nil {
		return err
	}
	shows, err := fixtures.createShows(ctx, 2, queueRows, queuePerRow, true, 10, false) // the measured queue, the rate search's
	if err != nil {
		fixtures.Close()
		return err
	}
	show := shows[0].ID
	_, parts, _ := nodeid.Decode(show)
	showID := parts[0]
	tokens := make([]string, entrants)
	for i := range tokens {
		tokens[i] = fixtures.token("queue-entrant-" + strconv.Itoa(i))
	}
	searchShow, searchToken := shows[1].ID, fixtures.token
	admin := fixtures.admin
	fixtures.Close() // its admission must not run beside the measured instance's

	child, err := b.startChildServer(ctx, "SEATFLOW_QUEUE_JOINS_PER_MINUTE=0") // every entrant comes from one address
	if err != nil {
		return err
	}
	defer child.Stop()
	c := newBenchClient(child.URL, 512)
	setQueueOf := func(show string, opensAt time.Time) error {
		return c.Do(ctx, admin, queueSetQ, map[string]any{"id": show, "in": map[string]any{
			"opensAt": opensAt.UTC().Format(time.RFC3339), "admitPerMinute": queueRate}}, nil)
	}
	setQueue := func(opensAt time.Time) error { return setQueueOf(show, opensAt) }
	for _, s := range []string{show, searchShow} {
		if err := setQueueOf(s, time.Now().Add(30*time.Minute)); err != nil {
			return fmt.Errorf("set the queue: %w", err)
		}
	}

	// The join target is judged at the rate that leaves the host at most hostBusyMax busy
	// (bench_busy.go), on a queue of its own: from the rate of the measured joins down.
	var search []joinRun
	_, _, searchWithin, err := rateAtBusy(entrants*int(time.Second)/int(queueJoinSpread), func(rate int) (float64, error) {
		n := rate * int(queueSearchFor/time.Second)
		toks := make([]string, n)
		for i := range toks {
			toks[i] = searchToken(fmt.Sprintf("queue-search-%d-%d", len(search), i))
		}
		cpu := readCPUTimes()
		run := joinOpenLoop(ctx, c, toks, searchShow, queueSearchFor)
		run.rate, run.busy = rate, cpu.busySince()
		search = append(search, run)
		progress("bench:   queue: joins at %d/s offered: p50 %s, p99 %s, %d failed, host %.0f %% busy", rate,
			ms(run.lat.pct(50)), ms(run.lat.pct(99)), run.failed, 100*run.busy)
		return run.busy, nil
	})
	if err != nil {
		return err
	}

	// The queue's events, heard as an instance hears them: the ticks' admissions and times.
	ps := b.RDB.Subscribe(ctx, keys.New(b.Prefix).QueueEvents(showID))
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		return err
	}
	var evMu sync.Mutex
	var events []queueEvent
	go func() {
		for m := range ps.Channel() {
			var ev struct {
				Phase    string      `json:"ph"`
				Admitted [][3]string `json:"a"`
				US       int64       `json:"us"`
			}
			if json.Unmarshal([]byte(m.Payload), &ev) != nil {
				continue
			}
			e := queueEvent{at: time.Now(), phase: ev.Phase, us: ev.US}
			for _, a := range ev.Admitted {
				e.admitted = append(e.admitted, a[0])
			}
			evMu.Lock()
			events = append(events, e)
			evMu.Unlock()
		}
	}()

	// Joins: open loop, spread evenly over queueJoinSpread.
	progress("bench:   queue: %d entrants join over %s …", entrants, queueJoinSpread)
	cpu0, client0, redis0 := child.cpuSeconds(), benchCPUSeconds(), redisCPUSeconds(ctx, b)
	joins := joinOpenLoop(ctx, c, tokens, show, queueJoinSpread)
	ids, joinLat, joinTook := joins.ids, joins.lat, joins.took
	joinCPU, joinClientCPU, joinRedisCPU := child.cpuSeconds()-cpu0, benchCPUSeconds()-client0, redisCPUSeconds(ctx, b)-redis0
	if joins.failed > 0 {
		return fmt.Errorf("%d joins failed: %v", joins.failed, joins.firstErr)
	}

	// Followers: every entrants/followers-th entrant follows its ticket.
	time.Sleep(time.Second)
	rss0 := child.rssBytes()
	progress("bench:   queue: %d joins in %s (p99 %s); %d subscribers connect …", entrants, joinTook.Round(time.Millisecond),
		ms(joinLat.pct(99)), followers)
	subCtx, stopSubs := context.WithCancel(ctx)
	defer stopSubs()
	fs := make([]*queueFollower, followers)
	step := entrants / followers
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	var dialErr atomic.Value
	for k := range fs {
		f := &queueFollower{entrant: k * step}
		fs[k] = f
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			sub, err := gqlclient.Subscribe(subCtx, child.URL, gqlclient.Request{Query: queueSubscribeQ, Variables: map[string]any{"id": show}},
				gqlclient.SubscribeOptions{DialTimeout: 20 * time.Second, ReadTimeout: 2 * time.Minute, Token: tokens[f.entrant]})
			if err != nil {
				dialErr.CompareAndSwap(nil, err.Error())
				return
			}
			f.sub = sub
			go f.read()
		}()
	}
	wg.Wait()
	if err := dialErr.Load(); err != nil {
		return fmt.Errorf("subscribe: %v", err)
	}
	defer func() {
		for _, f := range fs {
			f.sub.Close()
		}
	}()
	time.Sleep(3 * time.Second) // every first push in; the server settles before its memory is read
	rss1 := child.rssBytes()

	// Open: the queue moved to open in 3 s; watch it.
	opensAt := time.Now().Add(3 * time.Second).Truncate(time.Second).Add(time.Second)
	if err := setQueue(opensAt); err != nil {
		return fmt.Errorf("move opensAt: %w", err)
	}
	progress("bench:   queue: server RSS +%.1f MiB for %d subscribers; opening at %s, watching %s …",
		float64(rss1-rss0)/(1<<20), followers, opensAt.Format("15:04:05"), queueWatch)
	time.Sleep(time.Until(opensAt) + queueWatch)
	watchEnd := time.Now()

	// Close it (cancel the showtime): the seed is revealed, and the draw checked with it.
	if err := c.Do(ctx, admin, `mutation($id: ID!) { cancelShowtime(id: $id) { status } }`, map[string]any{"id": show}, nil); err != nil {
		return fmt.Errorf("cancel the showtime: %w", err)
	}
	var closed struct {
		Showtime struct {
			Queue struct {
				Phase, DrawCommitment string
				DrawSeed              *string
				Admitted              int
			}
		}
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if err := c.Do(ctx, "", queueStatusQ, map[string]any{"id": show}, &closed); err != nil {
			return err
		}
		if closed.Showtime.Queue.DrawSeed != nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the queue did not close: %+v", closed.Showtime.Queue)
		}
	}
	stopSubs()
	seed, err := hex.DecodeString(*closed.Showtime.Queue.DrawSeed)
	if err != nil || seatflow.DrawCommitment(seed) != closed.Showtime.Queue.DrawCommitment {
		return fmt.Errorf("the revealed seed does not match the commitment")
	}

	evMu.Lock()
	evs := slices.Clone(events)
	evMu.Unlock()
	r := analyseQueue(ids, seed, fs, evs, watchEnd)
	r.entrants, r.followers, r.joinTook, r.joinLat = entrants, followers, joinTook, joinLat
	r.search, r.searchWithin = search, searchWithin
	r.joinCPU, r.joinClientCPU, r.joinRedisCPU = joinCPU, joinClientCPU, joinRedisCPU
	r.rssPerFollower = float64(rss1-rss0) / float64(followers)
	r.admittedTotal = closed.Showtime.Queue.Admitted
	progress("bench:   queue: the ticks' Redis times: %v", r.tickTimes)
	writeQueue(w, r)
	return nil
}

// read records the subscriber's pushes until its subscription ends.
func (f *queueFollower) read() {
	for {
		raw, err := f.sub.Next()
		if err != nil {
			return
		}
		var p struct {
			Data struct {
				Queue struct {
					Status   string
					Position *int
				}
			}
		}
		if json.Unmarshal(raw, &p) != nil {
			continue
		}
		push := queuePush{at: time.Now(), status: p.Data.Queue.Status}
		if p.Data.Queue.Position != nil {
			push.position = *p.Data.Queue.Position
		}
		f.mu.Lock()
		f.pushes = append(f.pushes, push)
		f.mu.Unlock()
	}
}

// queueResult is what the section reports.
type queueResult struct {
	entrants, followers int
	joinTook            time.Duration
	joinLat             latencies
	// CPU seconds the server, the bench process (the clients) and Redis (every client of
	// it: the host's) used during the joins
	joinCPU, joinClientCPU, joinRedisCPU float64
	// the rate search's joins (the last judged) and whether it left the host within hostBusyMax
	search         []joinRun
	searchWithin   bool
	rssPerFollower float64
	admittedTotal  int
	// ticks that admitted: their Redis time and the entrants waiting at them
	tickTimes   latencies
	tickWaiting []int
	admitted    int
	openedAt    time.Time
	watchEnd    time.Time
	pushes      int // pushes received between the opening and the end of the watch
	staleness   latencies
	missed      int // (tick, subscriber) pairs never reflected by the end of the watch
	rho         float64
	drawOK      bool // every subscriber's first position matched the draw
}

// analyseQueue recomputes the draw from the revealed seed and measures the queue against
// it: fairness (join order against drawn place), each subscriber's staleness after each
// admission tick, the pushes, the ticks' Redis time.
func analyseQueue(ids []string, seed []byte, fs []*queueFollower, evs []queueEvent, watchEnd time.Time) *queueResult {
	r := &queueResult{watchEnd: watchEnd, drawOK: true}
	n := len(ids)
	// The draw: every entrant joined before opensAt, so its place is its key's rank.
	order := make([]int, n)
	keysOf := make([]string, n)
	for i, id := range ids {
		order[i] = i
		keysOf[i] = seatflow.DrawKey(seed, id)
	}
	sort.Slice(order, func(a, b int) bool { return keysOf[order[a]] < keysOf[order[b]] })
	rank := make([]int, n) // entrant → drawn place (0 first)
	for place, i := range order {
		rank[i] = place
	}
	r.rho = spearman(rank)
	byNumber := map[string]int{} // ticket number → entrant
	for i, id := range ids {
		if _, p, err := nodeid.Decode(id); err == nil && len(p) == 2 {
			byNumber[strconv.Itoa(p[1])] = i
		}
	}

	// The admission ticks, in order, and how many were admitted after each.
	var ticks []queueEvent
	var cum []int
	total := 0
	for _, e := range evs {
		if r.openedAt.IsZero() && e.phase == string(seatflow.QueueOpen) {
			r.openedAt = e.at
		}
		if len(e.admitted) == 0 {
			continue
		}
		for _, num := range e.admitted {
			if i, ok := byNumber[num]; !ok || rank[i] != total {
				r.drawOK = false // admitted out of the draw's order
			}
			total++
		}
		ticks = append(ticks, e)
		cum = append(cum, total)
		r.tickTimes = append(r.tickTimes, time.Duration(e.us)*time.Microsecond)
		r.tickWaiting = append(r.tickWaiting, n-total+len(e.admitted))
	}
	r.admitted = total

	for _, f := range fs {
		f.mu.Lock()
		pushes := slices.Clone(f.pushes)
		f.mu.Unlock()
		for _, p := range pushes {
			if !r.openedAt.IsZero() && !p.at.Before(r.openedAt) && !p.at.After(watchEnd) {
				r.pushes++
			}
		}
		place := rank[f.entrant]
		for k, e := range ticks {
			before := 0
			if k > 0 {
				before = cum[k-1]
			}
			if place < before {
				break // admitted at an earlier tick
			}
			admitted := place < cum[k]
			want := place + 1 - cum[k] // its true position after tick k
			seen := false
			for _, p := range pushes {
				if (admitted && p.status == string(seatflow.QueueAdmitted)) || (!admitted && p.status == string(seatflow.QueueWaiting) && p.position > 0 && p.position <= want) {
					r.staleness = append(r.staleness, max(0, p.at.Sub(e.at)))
					seen = true
					break
				}
			}
			if !seen {
				r.missed++
			}
		}
	}
	return r
}

// spearman is the rank correlation between the entrants' join order (their index) and
// rank, their drawn place: both permutations of 0..n-1.
func spearman(rank []int) float64 {
	n := float64(len(rank))
	var d2 float64
	for i, r := range rank {
		d := float64(i - r)
		d2 += d * d
	}
	return 1 - 6*d2/(n*(n*n-1))
}

func writeQueue(w io.Writer, r *queueResult) {
	fmt.Fprintf(w, "\n## 8. On-sale queue\n\n")
	fmt.Fprintf(w, "One instance (the server binary) runs a showtime's on-sale queue (docs/DESIGN.md \"On-sale queue\"): "+
		"%d entrants join before `opensAt`, spread evenly over %s (open loop, one request each from 256 clients, each "+
		"latency counted from the moment its join was due), %d of them (every %dth) follow their ticket over the `queue` "+
		"subscription, then the queue opens at %d a minute on a %d-seat showtime and is watched for %s; then the showtime "+
		"is cancelled, the queue closes and reveals its seed. The bench recomputes the draw from the seed "+
		"(`seatflow.DrawKey` of every ticket id), checks that the ticks admitted entrants in exactly that order, and holds "+
		"every subscriber's pushes to it: a subscriber's staleness after a tick is the time from the tick's event (heard "+
		"on the queue's Redis channel, as the instance hears it) to the first push showing a position at or below its "+
		"true one after the tick (or its admission), over every (tick, subscriber still waiting) pair. A tick's Redis time is "+
		"measured by the tick's own script (Redis' TIME at its start and at its publish). RSS per subscriber is the "+
		"server's resident memory after the subscribers connected less before, over their number. The joins' p99 target is "+
		"judged on a second showtime's queue at the offered rate that leaves the host at most %.0f %% busy (all its cores, "+
		"from /proc/stat: the server, its clients, MySQL and Redis share them; a latency measured on a saturated host is the "+
		"host's queue): joins offered for %s each, first at the rate above, then at a rate scaled by the busy share "+
		"measured, until one stays within it; the joins as offered above, and any rate over it, are figures.\n",
		r.entrants, queueJoinSpread, r.followers, max(1, r.entrants/max(1, r.followers)), queueRate, queueRows*queuePerRow, queueWatch,
		100*hostBusyMax, queueSearchFor)
	joinRate := float64(r.entrants) / r.joinTook.Seconds()
	tickP99 := r.tickTimes.pct(99)
	stale99 := r.staleness.pct(99)
	watch := r.watchEnd.Sub(r.openedAt).Seconds()
	perSecond := 0.0
	if watch > 0 {
		perSecond = float64(r.pushes) / watch
	}
	waitingAt := "–"
	if len(r.tickWaiting) > 0 {
		waitingAt = fmt.Sprintf("%d to %d", slices.Min(r.tickWaiting), slices.Max(r.tickWaiting))
	}
	rows := [][]string{
		{"joins, as offered", fmt.Sprintf("%d in %s: %.0f/s; p50 %s, p99 %s, max %s; server CPU %.1f s (%.2f cores), the clients' %.1f s, Redis' %.1f s",
			r.entrants, r.joinTook.Round(time.Millisecond), joinRate, ms(r.joinLat.pct(50)), ms(r.joinLat.pct(99)), ms(r.joinLat.max()),
			r.joinCPU, r.joinCPU/r.joinTook.Seconds(), r.joinClientCPU, r.joinRedisCPU), "(figure)", ""},
	}
	for i, s := range r.search {
		target, result := fmt.Sprintf("(figure: host over %.0f %% busy)", 100*hostBusyMax), ""
		if i == len(r.search)-1 {
			target = fmt.Sprintf("p99 ≤ %s, host ≤ %.0f %% busy", ms(queueJoinP99Target), 100*hostBusyMax)
			result = verdict(r.searchWithin && s.failed == 0 && s.lat.pct(99) <= queueJoinP99Target)
		}
		rows = append(rows, []string{fmt.Sprintf("joins at %d/s offered for %s (host %.0f %% busy)", s.rate, queueSearchFor, 100*s.busy),
			fmt.Sprintf("%d joins: p50 %s, p99 %s, max %s; %d failed", len(s.lat), ms(s.lat.pct(50)), ms(s.lat.pct(99)), ms(s.lat.max()), s.failed), target, result})
	}
	table(w, []string{"measure", "result", "target", "verdict"}, append(rows, [][]string{
		{"admission tick, Redis time", fmt.Sprintf("%d ticks that admitted (%d admitted; %s waiting at them): p50 %s, p99 %s, max %s",
			len(r.tickTimes), r.admitted, waitingAt, ms(r.tickTimes.pct(50)), ms(tickP99), ms(r.tickTimes.max())),
			"≤ " + ms(queueTickTarget) + " per tick at 50,000 waiting", verdict(len(r.tickTimes) > 0 && r.tickTimes.max() <= queueTickTarget)},
		{"position updates delivered", fmt.Sprintf("%d pushes in %.1f s after the opening: %.0f/s", r.pushes, watch, perSecond), "(figure)", ""},
		{"subscriber staleness", fmt.Sprintf("%d (tick, subscriber) pairs: p50 %s, p99 %s, max %s; %d never shown by the end of the watch",
			len(r.staleness), ms(r.staleness.pct(50)), ms(stale99), ms(r.staleness.max()), r.missed),
			"p99 ≤ " + queueStalenessTarget.String(), verdict(len(r.staleness) > 0 && stale99 <= queueStalenessTarget && r.missed == 0)},
		{"RSS per subscriber", fmt.Sprintf("%.1f KiB", r.rssPerFollower/1024), "(figure)", ""},
		{"fairness: Spearman ρ of join order and drawn place", fmt.Sprintf("%+.4f over %d pre-open entrants; admitted in the draw's order: %v",
			r.rho, r.entrants, r.drawOK), fmt.Sprintf("−%.2f ≤ ρ ≤ %.2f", queueRhoTarget, queueRhoTarget), verdict(math.Abs(r.rho) <= queueRhoTarget && r.drawOK)},
	}...))
}

// joinRun is one open loop of joins.
type joinRun struct {
	rate     int     // offered, per second (the rate search's)
	busy     float64 // the host's busy share over it (the rate search's)
	ids      []string
	lat      latencies
	took     time.Duration
	failed   int
	firstErr any
}

// joinOpenLoop has every token join show's queue, spread evenly over spread (open loop,
// from 256 clients), each join timed from when it was due.
func joinOpenLoop(ctx context.Context, c *gqlclient.Client, tokens []string, show string, spread time.Duration) joinRun {
	n := len(tokens)
	r := joinRun{ids: make([]string, n), lat: make(latencies, n)}
	var failed atomic.Int64
	var firstErr atomic.Value
	jobs := make(chan int, n)
	var wg sync.WaitGroup
	start := time.Now()
	interval := spread / time.Duration(n)
	for range 256 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				due := start.Add(time.Duration(i) * interval)
				var out struct{ JoinQueue struct{ ID string } }
				err := c.Do(ctx, tokens[i], queueJoinQ, map[string]any{"id": show}, &out)
				r.lat[i] = time.Since(due)
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				r.ids[i] = out.JoinQueue.ID
			}
		}()
	}
	for i := range n {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	r.took, r.failed, r.firstErr = time.Since(start), int(failed.Load()), firstErr.Load()
	return r
}

// redisCPUSeconds is the CPU time Redis has used (INFO cpu: user and system), whoever its
// clients are.
func redisCPUSeconds(ctx context.Context, b *benchEnv) float64 {
	info, err := b.RDB.Info(ctx, "cpu").Result()
	if err != nil {
		return 0
	}
	total := 0.0
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return total
}

// busyHost reports whether a load average ("1 5 15") says the machine's cores were busy
// with more than the bench: the one-minute load above the number of cores.
func busyHost(load string) bool {
	fields := strings.Fields(load)
	if len(fields) == 0 {
		return false
	}
	one, err := strconv.ParseFloat(fields[0], 64)
	return err == nil && one > float64(runtime.NumCPU())
}
