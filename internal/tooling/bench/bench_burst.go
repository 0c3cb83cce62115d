package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// burstConns bounds the connections a burst sends over. At 19,900 watchers the open-file
// limit (20,000 per process) leaves the server about a hundred descriptors besides its
// websockets; a request that waits for a connection counts the wait in its latency.
const burstConns = 32

// burstHit is one request of a paced burst: when it was due and sent, when its answer
// arrived, and why it failed ("" when it did not).
type burstHit struct {
	sent, answered time.Time
	err            string
}

// newBurstClient is the HTTP client of a burst: burstConns keep-alive connections.
func newBurstClient() *http.Client {
	return &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
		DialContext:     (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxConnsPerHost: burstConns, MaxIdleConnsPerHost: burstConns, IdleConnTimeout: 90 * time.Second}}
}

// countPacer is a vegeta pacer that stops after n hits.
type countPacer struct {
	vegeta.Pacer
	n uint64
}

func (p countPacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	if hits >= p.n {
		return 0, true
	}
	return p.Pacer.Pace(elapsed, hits)
}

// pacedBurst sends n requests at rate per second through hc, open loop: vegeta sends
// each on its schedule whatever the ones before it are doing (a slow server gets more
// requests in flight, not fewer sent), so a latency is the whole wait a client sees.
// target fills request i; check tells a good answer from a bad one. The hits are
// returned by index.
func pacedBurst(ctx context.Context, hc *http.Client, n, rate int, target func(i int, t *vegeta.Target),
	check func(code int, body []byte) error) []burstHit {
	hits := make([]burstHit, n)
	var next atomic.Int64
	// Request i is tagged ?burst=i so its result can be matched with what was sent (the
	// servers ignore the query string of a POST).
	targeter := func(t *vegeta.Target) error {
		i := int(next.Add(1) - 1)
		if i >= n {
			return vegeta.ErrNoTargets
		}
		target(i, t)
		t.URL += "?burst=" + strconv.Itoa(i)
		return nil
	}
	atk := vegeta.NewAttacker(vegeta.Client(hc), vegeta.Workers(burstConns))
	results := atk.Attack(targeter, countPacer{Pacer: vegeta.Rate{Freq: rate, Per: time.Second}, n: uint64(n)}, 0, "burst")
	for {
		select {
		case <-ctx.Done():
			atk.Stop()
		case res, ok := <-results:
			if !ok {
				return hits
			}
			u, err := url.Parse(res.URL)
			if err != nil {
				continue
			}
			i, err := strconv.Atoi(u.Query().Get("burst"))
			if err != nil || i < 0 || i >= n {
				continue
			}
			h := burstHit{sent: res.Timestamp, answered: res.End(), err: res.Error}
			if h.err == "" {
				if err := check(int(res.Code), res.Body); err != nil {
					h.err = err.Error()
				}
			}
			hits[i] = h
		}
	}
}

// burstStats sums up a burst: how many were asked and answered well, at what rate,
// and the latencies of the good answers.
type burstStats struct {
	asked, rate int
	answered    int
	failed      int
	firstErr    string
	first, last time.Time // the first request sent, the last good answer
	firstAnswer time.Time // the first good answer
	lat         latencies
}

func statsOf(hits []burstHit, rate int) burstStats {
	s := burstStats{asked: len(hits), rate: rate}
	for _, h := range hits {
		if h.sent.IsZero() || h.err != "" {
			s.failed++
			if s.firstErr == "" {
				s.firstErr = h.err
				if h.sent.IsZero() {
					s.firstErr = "never sent"
				}
			}
			continue
		}
		s.answered++
		s.lat = append(s.lat, h.answered.Sub(h.sent))
		if s.first.IsZero() || h.sent.Before(s.first) {
			s.first = h.sent
		}
		if h.answered.After(s.last) {
			s.last = h.answered
		}
		if s.firstAnswer.IsZero() || h.answered.Before(s.firstAnswer) {
			s.firstAnswer = h.answered
		}
	}
	return s
}

// took is the burst's length: from the first request sent to the last good answer.
func (s burstStats) took() time.Duration { return s.last.Sub(s.first) }

// perSecond is the rate of good answers: the answers after the first over the time
// between the first and the last (a server that keeps up answers at the rate asked, one
// that falls behind spreads its answers out).
func (s burstStats) perSecond() float64 {
	span := s.last.Sub(s.firstAnswer)
	if s.answered < 2 || span <= 0 {
		return 0
	}
	return float64(s.answered-1) / span.Seconds()
}

// atRate says whether every request was answered well at (95 % of) the rate asked.
func (s burstStats) atRate() bool {
	return s.failed == 0 && s.perSecond() >= 0.95*float64(s.rate)
}

// answeredCell is "196/s of 200/s asked (500 in 2.55 s)", with the failures.
func (s burstStats) answeredCell() string {
	out := fmt.Sprintf("%.0f/s of %d/s (%d in %.2f s)", s.perSecond(), s.rate, s.answered, s.took().Seconds())
	if s.failed > 0 {
		out += fmt.Sprintf("; %d failed: %.100s", s.failed, s.firstErr)
	}
	return out
}
