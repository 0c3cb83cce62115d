package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/build"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// The peer of the on-sale burst: Centrifugo, a real-time messaging server built for
// fan-out (centrifugal/centrifugo, installed by scripts/centrifugo.sh), run beside
// SeatFlow with its default settings but for what the bench needs: an HTTP API key,
// anonymous clients, and anonymous subscriptions to channels without a namespace.
const (
	centrifugoVersion = "v6.9.1"
	centrifugoChannel = "seats"
	centrifugoKey     = "bench-api-key"
)

// centrifugoBinary is the Centrifugo the bench runs: -centrifugo, else on PATH, else
// where `go install` puts it.
func centrifugoBinary(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if p, err := exec.LookPath("centrifugo"); err == nil {
		return p, nil
	}
	p := filepath.Join(build.Default.GOPATH, "bin", "centrifugo")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("centrifugo not found on PATH nor in %s (bash scripts/centrifugo.sh installs it)", filepath.Dir(p))
	}
	return p, nil
}

// startCentrifugo runs Centrifugo on a free loopback port with the bench's configuration.
func startCentrifugo(ctx context.Context, bin string) (*childServer, func(), error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, nil, err
	}
	host, port, _ := strings.Cut(addr, ":")
	dir, err := os.MkdirTemp("", "seatflow-centrifugo-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	config, _ := json.Marshal(map[string]any{
		"http_server": map[string]any{"address": host, "port": json.Number(port)},
		"http_api":    map[string]any{"key": centrifugoKey},
		"client":      map[string]any{"allow_anonymous_connect_without_token": true},
		"channel": map[string]any{"without_namespace": map[string]any{
			"allow_subscribe_for_anonymous": true, "allow_subscribe_for_client": true}},
		"log": map[string]any{"level": "error"},
	})
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, config, 0o600); err != nil {
		cleanup()
		return nil, nil, err
	}
	url := "http://" + addr
	cmd := exec.Command(bin, "--config", path)
	cmd.Dir = dir
	child, err := startChild(ctx, cmd, url, func() bool {
		_, err := centrifugoAPI(url, "info", []byte(`{}`))
		return err == nil
	})
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return child, cleanup, nil
}

// centrifugoAPI calls method of Centrifugo's HTTP server API and returns its answer.
func centrifugoAPI(base, method string, body []byte) ([]byte, error) {
	req, err := http.NewRequest(http.MethodPost, base+"/api/"+method, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-API-Key", centrifugoKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err == nil && (resp.StatusCode != http.StatusOK || bytes.Contains(out, []byte(`"error"`))) {
		err = fmt.Errorf("centrifugo %s: HTTP %d: %.200s", method, resp.StatusCode, out)
	}
	return out, err
}

// centrifugoSubscriber is one client of Centrifugo's JSON protocol over a websocket
// (/connection/websocket): a connect command, a subscribe command, then publications
// pushed. A probe decodes each publication and notes when each of its seats arrived; the
// others count publications by the first bytes of each reply (replies in one frame are
// separated by newlines). Both count the frames that carried publications, and answer
// the server's pings (an empty reply `{}`).
type centrifugoSubscriber struct {
	conn   *websocket.Conn // a probe's
	raw    *rawClient      // a counter's (bench_rawws.go)
	probe  bool
	pubs   atomic.Int32 // publications received
	frames atomic.Int32 // websocket messages that carried publications
	lost   atomic.Bool
	mu     sync.Mutex
	seenAt map[string]time.Time // probes only
	failed string               // a counter's refused subscription
}

// isLost reports whether the subscriber's connection ended before the bench closed it.
func (s *centrifugoSubscriber) isLost() bool {
	if s.raw != nil {
		return s.raw.lost.Load()
	}
	return s.lost.Load()
}

func (s *centrifugoSubscriber) Close() {
	if s.raw != nil {
		s.raw.Close()
		return
	}
	s.conn.Close()
}

// centrifugoCommands connect and subscribe, in one message.
const centrifugoCommands = `{"id":1,"connect":{}}` + "\n" + `{"id":2,"subscribe":{"channel":"` + centrifugoChannel + `"}}`

// dialCentrifugo connects and subscribes one subscriber; it returns once the
// subscription is confirmed. A counter is read with the others by clients.
func dialCentrifugo(ctx context.Context, clients *rawClients, base string, probe bool) (*centrifugoSubscriber, error) {
	if !probe {
		return dialCentrifugoCounter(ctx, clients, base)
	}
	d := websocket.Dialer{HandshakeTimeout: 30 * time.Second, ReadBufferSize: 1024, WriteBufferSize: 1024}
	conn, _, err := d.DialContext(ctx, "ws"+strings.TrimPrefix(base, "http")+"/connection/websocket", nil)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*centrifugoSubscriber, error) { conn.Close(); return nil, err }
	conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	if err := conn.WriteMessage(websocket.TextMessage, []byte(centrifugoCommands)); err != nil {
		return fail(err)
	}
	for subscribed := false; !subscribed; {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			return fail(err)
		}
		for _, line := range bytes.Split(msg, []byte("\n")) {
			switch {
			case bytes.Contains(line, []byte(`"error"`)):
				return fail(fmt.Errorf("centrifugo: %.200s", line))
			case bytes.HasPrefix(line, []byte(`{"id":2,`)):
				subscribed = true
			}
		}
	}
	conn.SetReadDeadline(time.Time{})
	s := &centrifugoSubscriber{conn: conn, probe: true, seenAt: map[string]time.Time{}}
	go s.read()
	return s, nil
}

// dialCentrifugoCounter connects and subscribes a subscriber that counts publications.
func dialCentrifugoCounter(ctx context.Context, clients *rawClients, base string) (*centrifugoSubscriber, error) {
	c, first, err := dialRaw(ctx, "ws"+strings.TrimPrefix(base, "http")+"/connection/websocket", "")
	if err != nil {
		return nil, err
	}
	s := &centrifugoSubscriber{raw: c}
	c.onText = s.count
	if err := clients.start(c, first); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.send(centrifugoCommands); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.waitReady(ctx); err != nil {
		c.Close()
		return nil, err
	}
	if s.failed != "" {
		c.Close()
		return nil, fmt.Errorf("centrifugo: %s", s.failed)
	}
	return s, nil
}

// count reads a counter's message: replies separated by newlines, each publication
// counted by its first bytes, pings answered.
func (s *centrifugoSubscriber) count(c *rawClient, msg []byte) {
	ping, pubs := false, int32(0)
	for len(msg) > 0 {
		line := msg
		if i := bytes.IndexByte(msg, '\n'); i >= 0 {
			line, msg = msg[:i], msg[i+1:]
		} else {
			msg = nil
		}
		switch {
		case bytes.HasPrefix(line, []byte(`{"push"`)):
			pubs++
		case string(line) == "{}":
			ping = true
		case bytes.HasPrefix(line, []byte(`{"id":2,`)):
			if bytes.Contains(line, []byte(`"error"`)) {
				s.failed = string(line[:min(len(line), 200)])
			}
			c.markReady()
		case bytes.Contains(line, []byte(`"error"`)):
			s.failed = string(line[:min(len(line), 200)])
			c.markReady()
		}
	}
	s.received(pubs)
	if ping {
		_ = c.send(`{}`)
	}
}

// received counts a message's publications, and the message when it had any.
func (s *centrifugoSubscriber) received(pubs int32) {
	if pubs > 0 {
		s.pubs.Add(pubs)
		s.frames.Add(1)
	}
}

// read reads a probe's messages until its connection ends.
func (s *centrifugoSubscriber) read() {
	for {
		_, msg, err := s.conn.ReadMessage()
		if err != nil {
			s.lost.Store(true)
			return
		}
		if s.decode(msg, time.Now()) {
			_ = s.conn.WriteMessage(websocket.TextMessage, []byte(`{}`))
		}
	}
}

// decode reads a probe's message: each publication's seats, the first arrival of each
// noted at now. It reports whether the message carried a ping (to be answered).
func (s *centrifugoSubscriber) decode(msg []byte, now time.Time) (ping bool) {
	pubs := int32(0)
	for _, line := range bytes.Split(msg, []byte("\n")) {
		if string(line) == "{}" {
			ping = true
			continue
		}
		var reply struct {
			Push *struct {
				Pub *struct {
					Data struct{ Seats []struct{ ID string } }
				}
			}
		}
		if json.Unmarshal(line, &reply) != nil || reply.Push == nil || reply.Push.Pub == nil {
			continue
		}
		pubs++
		s.mu.Lock()
		for _, seat := range reply.Push.Pub.Data.Seats {
			if _, ok := s.seenAt[seat.ID]; !ok {
				s.seenAt[seat.ID] = now
			}
		}
		s.mu.Unlock()
	}
	s.received(pubs)
	return ping
}

// peerStressMax is the most subscribers the per-change stress row runs with. One
// publication per change is 500 pushes per subscriber, and Centrifugo, on the two cores it
// shares with the bench's clients, drains them long after the burst while it answers the
// publisher slowly. At 3,040 that took 4.5 s (docs/BENCHMARKS.md, quiet host) to 11 s
// (a busy one); at 10,000, 48 s, and on a busy host 62 s with 256 of the 500 publications
// dropped (EOF, answers past Centrifugo's write timeout): a minute of the bench for a row
// that no longer measures. 19,880 would take about twice as long.
const peerStressMax = 3040

// peerTicks are the publishers Centrifugo runs with at n subscribers: merged at SeatFlow's
// default tick, and one publication per change (a tick of 0) up to peerStressMax.
func peerTicks(n int) []time.Duration {
	if n <= peerStressMax {
		return []time.Duration{peerTick, 0}
	}
	return []time.Duration{peerTick}
}

// peerLabel names a publisher in the report.
func peerLabel(tick time.Duration) string {
	if tick == 0 {
		return "per-change stress"
	}
	return fmt.Sprintf("merged per %d ms tick", tick.Milliseconds())
}

// peerRun is what one Centrifugo run (n subscribers, one publisher) measured.
type peerRun struct {
	n                int
	tick             time.Duration // the publisher's (0: one publication per change)
	connect          time.Duration
	pub              burstStats // the publications
	changes          burstStats // the changes, each sent and answered with its publication
	seen, answerSeen latencies  // per (probe, change): from the change due, from its publication's answer
	pairs, unseen    int
	pubs, frames     []int   // publications and the frames carrying them, per subscriber
	cpu, clientCPU   float64 // Centrifugo's, and the bench process's over the same time
	rssIdle, rssPeak int64
	settle           time.Duration
	settled          bool
	lost             int
}

// centrifugoRun publishes the changes of holds holds (seat order[i] the i-th, due at rate
// per second) to n subscribers of one channel (onsaleProbes of them decoding each), merged
// per tick (0: one publication per change).
func centrifugoRun(ctx context.Context, bin string, n int, order []string, holds, rate int, tick time.Duration) (*peerRun, error) {
	child, cleanup, err := startCentrifugo(ctx, bin)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	defer child.Stop()
	hc := newBurstClient()
	_, warm := publishSchedule(ctx, hc, child.URL, order, mergeSchedule(onsaleWarmup, rate, 0))
	if s := statsOf(warm, rate); s.failed > 0 {
		return nil, fmt.Errorf("centrifugo warm-up: %d failed: %s", s.failed, s.firstErr)
	}
	time.Sleep(time.Second)
	rss0 := child.rssBytes()
	r := &peerRun{n: n, tick: tick}
	var mu sync.Mutex
	var subs []*centrifugoSubscriber
	t0 := time.Now()
	var probes atomic.Int64
	var clients rawClients
	defer clients.Close()
	err = dialMany(ctx, n, fanoutDialers, func(ctx context.Context) error {
		s, err := dialCentrifugo(ctx, &clients, child.URL, probes.Add(1) <= onsaleProbes)
		if err == nil {
			mu.Lock()
			subs = append(subs, s)
			mu.Unlock()
		}
		return err
	})
	defer func() {
		for _, s := range subs {
			s.Close()
		}
	}()
	if err != nil {
		return nil, err
	}
	r.connect = time.Since(t0)
	time.Sleep(time.Second)
	r.rssIdle = child.rssBytes() - rss0
	pubs := mergeSchedule(holds, rate, tick)
	progress("bench:   centrifugo: %d subscribers in %s; RSS +%.1f MiB; publishing %d changes at %d/s in %d publications (%s) …", n,
		r.connect.Round(time.Millisecond), float64(r.rssIdle)/(1<<20), holds, rate, len(pubs), peerLabel(tick))
	for _, s := range subs {
		s.pubs.Store(0)
		s.frames.Store(0)
	}
	peaks := samplePeaks(child)
	cpu0, client0 := child.cpuSeconds(), benchCPUSeconds()
	clients.hold() // as SeatFlow's counters are during its burst (rawClients.hold)
	start, hits := publishSchedule(ctx, hc, child.URL, order, pubs)
	clients.release()
	r.pub, r.changes = statsOf(hits, publicationRate(rate, tick)), statsOf(changeHits(pubs, hits), rate)
	deadline := time.Now().Add(onsaleSettle)
	for ctx.Err() == nil && time.Now().Before(deadline) && !r.settled {
		r.settled = true
		for _, s := range subs {
			if !s.isLost() && int(s.pubs.Load()) < r.pub.answered {
				r.settled = false
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.settle, r.cpu, r.clientCPU = time.Since(start), child.cpuSeconds()-cpu0, benchCPUSeconds()-client0
	rssPeak, _ := peaks.Stop()
	r.rssPeak = rssPeak - rss0
	for _, s := range subs {
		r.pubs = append(r.pubs, int(s.pubs.Load()))
		r.frames = append(r.frames, int(s.frames.Load()))
		if s.isLost() {
			r.lost++
		}
		if !s.probe {
			continue
		}
		s.mu.Lock()
		seen, answerSeen, pairs, unseen := seenDelays(start, rate, order, pubs, hits, s.seenAt)
		s.mu.Unlock()
		r.seen, r.answerSeen = append(r.seen, seen...), append(r.answerSeen, answerSeen...)
		r.pairs, r.unseen = r.pairs+pairs, r.unseen+unseen
	}
	progress("bench:   centrifugo N=%d %s: changes %s in %d publications, p99 %s; publish → seen p50 %s p99 %s max %s (%d of %d unseen); "+
		"frames/subscriber max %d; CPU %.1fs, clients %.1fs; settled %v in %s; lost %d",
		n, peerLabel(tick), r.changes.answeredCell(), r.pub.answered, ms(r.pub.lat.pct(99)), ms(r.seen.pct(50)), ms(r.seen.pct(99)), ms(r.seen.max()),
		r.unseen, r.pairs, maxOf(r.frames), r.cpu, r.clientCPU, r.settled, r.settle.Round(time.Millisecond), r.lost)
	return r, nil
}
