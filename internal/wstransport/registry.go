package wstransport

import (
	"encoding/json"
	"net"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"seatflow"
)

// Defaults of a Registry's work.
const (
	defaultTick  = 250 * time.Millisecond // how often keep-alives and expiries are looked at
	readyBacklog = 1 << 16                // connections waiting for a writer before enqueuers spill
)

// Registry is the set of an instance's open websocket connections: it admits them
// (caps), writes their queued messages with a small pool of writers shared by every
// connection, sends their keep-alives from one ticker, and closes them all on shutdown.
// The zero Registry (no caps) is ready to use; Close stops its goroutines.
type Registry struct {
	// MaxConns and MaxConnsPerClient cap the open connections of the instance and of one
	// client address (0 = no cap): a connection over a cap is refused before its upgrade
	// (503, 429). The per-address cap is the backstop for a crowd behind one address.
	MaxConns, MaxConnsPerClient int
	// MaxConnsPerSession caps the open connections of one session (Config.Session: a
	// user, a guest session, an address without a token), counted when connection_init
	// names it (0 = no cap): one more is closed with 1013 (try again later).
	MaxConnsPerSession int
	// ClientAddr names the client of a request for the per-client cap (default: the
	// remote address' host).
	ClientAddr func(*http.Request) string
	// Writers is how many connections are written to at once (default: half the
	// processors Go runs on, at least one). A writer never waits for a client (write.go),
	// so a few keep up with the fan-out; each gets a processor of its own (share.go), so
	// the requests keep every processor they had (docs/DESIGN.md, "Live seat map").
	Writers int
	// Requests are the instance's requests under way, which the writers give way to, and
	// Share the least part of their time the writers take meanwhile (share.go; 0 or 1:
	// they never give way).
	Requests *Requests
	Share    float64
	// Tick is how often keep-alives, pong timeouts and token expiries are looked at
	// (default 250 ms).
	Tick time.Duration

	mu        sync.Mutex
	conns     map[*conn]struct{}
	admitted  int // connections admitted and not yet ended (upgrading or open)
	byClient  map[string]int
	bySession map[string]int
	closed    bool

	start  sync.Once
	procs  int     // processors added for the writers (share.go)
	poller *poller // nil where there is none: every connection has a read loop
	ready  chan *conn
	stop   chan struct{}
	wg     sync.WaitGroup
}

var (
	connectionsOpen = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: "seatflow", Subsystem: "websocket", Name: "connections",
		Help: "Open GraphQL websocket connections.",
	})
	connectionsRefused = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "seatflow", Subsystem: "websocket", Name: "connections_refused_total",
		Help: "Websocket connections refused before the upgrade, by cap.",
	}, []string{"cap"})
	queueOverflows = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "seatflow", Subsystem: "websocket", Name: "queue_overflows_total",
		Help: "Websocket connections closed (1008) because more than their queued-bytes bound waited to be sent: clients that do not read.",
	})
)

// refusal is why a connection is refused before its upgrade: an HTTP status and a
// GraphQL error code.
type refusal struct {
	status  int
	code    string
	message string
}

var (
	refusedShuttingDown = &refusal{http.StatusServiceUnavailable, seatflow.EUNAVAILABLE, "the server is shutting down"}
	refusedInstanceCap  = &refusal{http.StatusServiceUnavailable, seatflow.EUNAVAILABLE, "the server has as many live connections as it takes; try again in a moment"}
	refusedClientCap    = &refusal{http.StatusTooManyRequests, seatflow.ERATELIMITED, "too many live connections from this client; close one first"}
)

// sessionCapReason is the close reason of a connection over its session's cap.
const sessionCapReason = "too many live connections of this session; close one first"

// write answers the refused request: JSON with the error's code, Retry-After when a
// retry may succeed.
func (f *refusal) write(w http.ResponseWriter) {
	body, _ := json.Marshal(map[string]any{"errors": []any{map[string]any{"message": f.message,
		"extensions": map[string]any{"code": f.code}}}})
	w.Header().Set("Content-Type", "application/json")
	if f.status == http.StatusTooManyRequests || f.status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "5")
	}
	w.WriteHeader(f.status)
	_, _ = w.Write(body)
}

func (r *Registry) clientOf(req *http.Request) string {
	if r.ClientAddr != nil {
		return r.ClientAddr(req)
	}
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		return req.RemoteAddr
	}
	return host
}

// admit counts a connection about to be upgraded against the caps; leave gives the
// count back for one that was not.
func (r *Registry) admit(req *http.Request) *refusal {
	client := r.clientOf(req)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return refusedShuttingDown
	case r.MaxConns > 0 && r.admitted >= r.MaxConns:
		connectionsRefused.WithLabelValues("instance").Inc()
		return refusedInstanceCap
	case r.MaxConnsPerClient > 0 && r.byClient[client] >= r.MaxConnsPerClient:
		connectionsRefused.WithLabelValues("client").Inc()
		return refusedClientCap
	}
	if r.byClient == nil {
		r.byClient = map[string]int{}
	}
	r.admitted++
	r.byClient[client]++
	return nil
}

func (r *Registry) leave(req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.release(r.clientOf(req))
}

// release gives back an admitted connection of client; r.mu is held.
func (r *Registry) release(client string) {
	r.admitted--
	if r.byClient[client]--; r.byClient[client] <= 0 {
		delete(r.byClient, client)
	}
}

// join counts a connection whose connection_init named its session against the
// session's cap; false when the session has as many as it may.
func (r *Registry) join(c *conn, session string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if session == "" || session == c.session {
		return true
	}
	if r.MaxConnsPerSession > 0 && r.bySession[session] >= r.MaxConnsPerSession {
		connectionsRefused.WithLabelValues("session").Inc()
		return false
	}
	r.quit(c)
	if r.bySession == nil {
		r.bySession = map[string]int{}
	}
	r.bySession[session]++
	c.session = session
	return true
}

// quit gives back c's place in its session's count; r.mu is held.
func (r *Registry) quit(c *conn) {
	if c.session == "" {
		return
	}
	if r.bySession[c.session]--; r.bySession[c.session] <= 0 {
		delete(r.bySession, c.session)
	}
	c.session = ""
}

// Start starts the writers and the ticker now (otherwise the first connection does).
func (r *Registry) Start() { r.start.Do(r.run) }

// add registers an upgraded connection and starts the shared work on the first one.
func (r *Registry) add(c *conn) {
	r.start.Do(r.run)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conns == nil {
		r.conns = map[*conn]struct{}{}
	}
	r.conns[c] = struct{}{}
	connectionsOpen.Inc()
}

// remove unregisters a connection that ended.
func (r *Registry) remove(c *conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.conns[c]; !ok {
		return
	}
	delete(r.conns, c)
	r.poller.forget(c)
	r.release(c.client)
	r.quit(c)
	connectionsOpen.Dec()
}

func (r *Registry) list() []*conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*conn, 0, len(r.conns))
	for c := range r.conns {
		out = append(out, c)
	}
	return out
}

// run starts the writers and the ticker.
func (r *Registry) run() {
	writers, tick := r.Writers, r.Tick
	if writers <= 0 {
		writers = max(1, runtime.GOMAXPROCS(0)/2)
	}
	r.procs = writers
	addProcessors(writers)
	if tick <= 0 {
		tick = defaultTick
	}
	r.ready = make(chan *conn, readyBacklog)
	r.stop = make(chan struct{})
	if r.poller = newPoller(); r.poller != nil {
		r.wg.Add(1)
		go func() { defer r.wg.Done(); r.poller.run() }()
	}
	r.wg.Add(writers + 1)
	for range writers {
		go func() {
			defer r.wg.Done()
			var b batch
			var g giveWay
			for {
				select {
				case c := <-r.ready:
					c.flush(&b)
					g.after(r.Requests, r.Share)
				case <-r.stop:
					return
				}
			}
		}()
	}
	go func() {
		defer r.wg.Done()
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case now := <-t.C:
				for _, c := range r.list() {
					c.tick(now)
				}
			case <-r.stop:
				return
			}
		}
	}()
}

// schedule hands a connection with queued messages to a writer; it never blocks.
func (r *Registry) schedule(c *conn) {
	select {
	case r.ready <- c:
	default: // a backlog this deep is rare: wait for a writer off the caller's goroutine
		go func() {
			select {
			case r.ready <- c:
			case <-r.stop:
			}
		}()
	}
}

// CloseAll refuses new connections, sends every open one a close frame with code and
// reason, waits up to grace for the clients to answer, and drops the rest.
func (r *Registry) CloseAll(code int, reason string, grace time.Duration) {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	for _, c := range r.list() {
		c.sendClose(code, reason)
	}
	deadline := time.Now().Add(grace)
	for len(r.list()) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	for _, c := range r.list() {
		c.drop()
	}
}

// Close drops every connection (no close frame) and stops the writers and the ticker.
func (r *Registry) Close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	for _, c := range r.list() {
		c.drop()
	}
	r.start.Do(func() {}) // never started: nothing to stop
	if r.stop != nil {
		select {
		case <-r.stop:
		default:
			close(r.stop)
			if r.poller != nil {
				r.poller.stop()
			}
		}
		r.wg.Wait()
		addProcessors(-r.procs)
	}
}

// writeBuffers is shared by every connection's writes.
var writeBuffers = &sync.Pool{}
