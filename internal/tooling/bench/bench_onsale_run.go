package bench

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"seatflow/internal/tooling/gqlclient"
)

const (
	onsaleProbes  = 50              // watchers of a run that keep their own map
	onsaleWarmup  = 50              // holds that warm the server's code paths before the measures
	onsaleSettle  = 4 * time.Minute // longest wait for the watchers to catch up after a burst
	onsaleRows    = 20              // the on-sale hall: 20 rows of 25 seats
	onsalePerRow  = 25
	onsaleSeatMap = `query($id: ID!) { seatMap(showtimeId: $id) { version seats { seat { id } status } } }`
)

// onsaleShows are the showtimes of one run: one to warm up on, one for the burst with no
// watcher, one the watchers follow.
type onsaleShows struct{ warm, alone, watched benchShow }

// onsaleRun is what one run (a child server, one tick setting, N watchers) measured.
type onsaleRun struct {
	n        int
	tick     string // SEATFLOW_LIVE_TICK given to the child ("" = the server's default)
	withFrom bool   // the schema has fromVersion
	connect  time.Duration

	passes                passStats  // one pass alone over the watchers, before the burst
	alone, burst          burstStats // the same burst without watchers, and with them
	cpuAlone, cpu         float64    // server CPU-seconds of each, up to the watchers' catching up
	clickSeen, answerSeen latencies  // per (probe, held seat): from the hold sent, from its answer
	pairs, unseen         int
	frames                []int // next messages per watcher during the burst
	settle                time.Duration
	settled               bool

	rssIdle, rssPeak int64   // server RSS growth over the server before any watcher
	goIdle, goPeak   float64 // goroutines, the same way

	wrongMaps, behindMaps, gaps, resubscribed, ended, lost int
	endedBy                                                string
	clientCPU                                              float64 // the bench process's, over the same time as cpu
}

// holdBurst sends holds one-seat holds of show, seat order[i] by buyer i, at rate per second.
func holdBurst(ctx context.Context, hc *http.Client, url string, show benchShow, order []string, buyers []string, holds, rate int) []burstHit {
	bodies := make([][]byte, holds)
	headers := make([]http.Header, holds)
	for i := range holds {
		bodies[i] = gqlclient.Body(benchHoldQ, map[string]any{"in": map[string]any{"showtimeId": show.ID,
			"seatIds": []string{order[i]}, "idempotencyKey": fmt.Sprintf("onsale-%s-%d", show.ID, i)}})
		headers[i] = http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + buyers[i]}}
	}
	return pacedBurst(ctx, hc, holds, rate, func(i int, t *vegeta.Target) {
		*t = vegeta.Target{Method: http.MethodPost, URL: url + "/query", Body: bodies[i], Header: headers[i]}
	}, func(code int, body []byte) error {
		if code != http.StatusOK || bytes.Contains(body, []byte(`"errors"`)) || !bytes.Contains(body, []byte(`"holdSeats"`)) {
			return fmt.Errorf("HTTP %d: %.160s", code, body)
		}
		return nil
	})
}

// seatOrder is the order the buyers take show's seats in: shuffled, the same every run.
func seatOrder(show benchShow) []string {
	order := append([]string(nil), show.SeatIDs...)
	rand.New(rand.NewPCG(28, 500)).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	return order
}

// peakSampler follows a child's RSS (every 50 ms) and goroutines (every 500 ms) until
// stopped, and keeps the highest of each.
type peakSampler struct {
	stop chan struct{}
	done sync.WaitGroup
	rss  int64
	gor  float64
}

func samplePeaks(child *childServer) *peakSampler {
	s := &peakSampler{stop: make(chan struct{})}
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			s.rss = max(s.rss, child.rssBytes())
			if i%10 == 0 {
				s.gor = max(s.gor, child.metrics("go_goroutines")["go_goroutines"])
			}
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *peakSampler) Stop() (rss int64, goroutines float64) {
	close(s.stop)
	s.done.Wait()
	return s.rss, s.gor
}

// onsaleRun runs one row of the section: a child server with SEATFLOW_LIVE_TICK=tick,
// a warm-up, the burst with no watcher, n watchers of the watched showtime, the burst.
func (b *benchEnv) onsaleRun(ctx context.Context, n int, tick string, shows onsaleShows, admin string, buyers []string, holds, rate int) (*onsaleRun, error) {
	child, err := b.startChildServer(ctx, "SEATFLOW_LIVE_TICK="+tick)
	if err != nil {
		return nil, err
	}
	defer child.Stop()
	client := newBenchClient(child.URL, 4)
	r := &onsaleRun{n: n, tick: tick}
	if r.withFrom, err = hasFromVersion(ctx, client); err != nil {
		return nil, err
	}
	hc := newBurstClient()
	if s := statsOf(holdBurst(ctx, hc, child.URL, shows.warm, seatOrder(shows.warm), buyers, onsaleWarmup, rate), rate); s.failed > 0 {
		return nil, fmt.Errorf("warm-up holds: %d failed: %s", s.failed, s.firstErr)
	}
	cpu0 := child.cpuSeconds()
	r.alone = statsOf(holdBurst(ctx, hc, child.URL, shows.alone, seatOrder(shows.alone), buyers, holds, rate), rate)
	r.cpuAlone = child.cpuSeconds() - cpu0
	time.Sleep(time.Second)
	rss0, g0 := child.rssBytes(), child.metrics("go_goroutines")["go_goroutines"]

	var watchers crowd
	defer watchers.closeAll()
	t0 := time.Now()
	if err := watchers.grow(ctx, gqlclient.WebsocketURL(child.URL), seatMapSubscription(r.withFrom), shows.watched.ID, n, onsaleProbes); err != nil {
		return nil, err
	}
	r.connect = time.Since(t0)
	time.Sleep(time.Second) // let the server settle before reading its memory
	r.rssIdle, r.goIdle = child.rssBytes()-rss0, child.metrics("go_goroutines")["go_goroutines"]-g0
	progress("bench:   on-sale N=%d tick=%q: %d watchers in %s; server RSS +%.1f MiB, %+.0f goroutines; holding %d seats at %d/s …",
		n, tick, n, r.connect.Round(time.Millisecond), float64(r.rssIdle)/(1<<20), r.goIdle, holds, rate)

	watchers.clients.hold()
	r.passes, err = measurePasses(ctx, client, admin, shows.watched, &watchers, serverTick(tick))
	watchers.clients.release()
	if err != nil {
		return nil, err
	}
	progress("bench:   on-sale N=%d tick=%q: one pass alone: answer → last probe p50 %s (max %s), first → last probe p50 %s",
		n, tick, ms(r.passes.pass()), ms(r.passes.toLast.max()), ms(r.passes.spread.pct(50)))
	for deadline := time.Now().Add(onsaleSettle); ; time.Sleep(20 * time.Millisecond) { // every watcher past the passes
		if waiting, gone := watchers.behind(r.passes.version); waiting == 0 {
			break
		} else if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("after the passes: %d watchers behind, %d gone", waiting, gone)
		}
	}

	watchers.resetFrames()
	peaks := samplePeaks(child)
	cpu0, client0, start := child.cpuSeconds(), benchCPUSeconds(), time.Now()
	order := seatOrder(shows.watched)
	watchers.clients.hold() // the counting clients read what the burst sent them once it is answered
	hits := holdBurst(ctx, hc, child.URL, shows.watched, order, buyers, holds, rate)
	watchers.clients.release()
	r.burst = statsOf(hits, rate)

	// The real map once every hold is answered: no change comes after it.
	var real struct {
		SeatMap struct {
			Version int
			Seats   []struct {
				Seat   struct{ ID string }
				Status string
			}
		}
	}
	if err := client.Do(ctx, "", onsaleSeatMap, map[string]any{"id": shows.watched.ID}, &real); err != nil {
		peaks.Stop()
		return nil, err
	}
	deadline := time.Now().Add(onsaleSettle)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		if waiting, _ := watchers.behind(real.SeatMap.Version); waiting == 0 {
			r.settled = true
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.settle, r.cpu, r.clientCPU = time.Since(start), child.cpuSeconds()-cpu0, benchCPUSeconds()-client0
	rssPeak, goPeak := peaks.Stop()
	r.rssPeak, r.goPeak = rssPeak-rss0, goPeak-g0
	r.frames = watchers.frames()
	r.ended, r.lost, r.endedBy = watchers.ended()

	want := map[string]string{}
	for _, s := range real.SeatMap.Seats {
		want[s.Seat.ID] = s.Status
	}
	for _, p := range watchers.probes {
		p.mu.Lock()
		switch {
		case p.lost || !p.copy.synced || p.copy.version < real.SeatMap.Version:
			r.behindMaps++
			r.wrongMaps++
		case !sameMap(p.copy.seats, want):
			r.wrongMaps++
		}
		r.gaps += p.gaps
		r.resubscribed += p.resubbed
		for i, h := range hits {
			if h.err != "" || h.sent.IsZero() {
				continue
			}
			r.pairs++
			seen, ok := p.heldAt[order[i]]
			if !ok {
				r.unseen++
				continue
			}
			r.clickSeen = append(r.clickSeen, seen.Sub(h.sent))
			r.answerSeen = append(r.answerSeen, seen.Sub(h.answered))
		}
		p.mu.Unlock()
	}
	progress("bench:   on-sale N=%d tick=%q: holds %s, p99 %s (alone %s); click → seen p50 %s p99 %s max %s (%d of %d unseen); "+
		"frames/watcher max %d; CPU %.1fs; settled %v in %s; maps wrong %d; ended %d, lost %d",
		n, tick, r.burst.answeredCell(), ms(r.burst.lat.pct(99)), ms(r.alone.lat.pct(99)), ms(r.clickSeen.pct(50)), ms(r.clickSeen.pct(99)),
		ms(r.clickSeen.max()), r.unseen, r.pairs, maxOf(r.frames), r.cpu, r.settled, r.settle.Round(time.Millisecond), r.wrongMaps, r.ended, r.lost)
	return r, nil
}

func sameMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func maxOf(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
