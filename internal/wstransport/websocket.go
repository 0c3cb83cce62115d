// Package wstransport is GraphQL's websocket transport: gqlgen's graphql-transport-ws and
// graphql-ws protocols over gorilla/websocket, with connection_init authentication (4403 on
// a rejected token), the origin check, keep-alives, limits, and a registry of open
// connections that the server closes with a close frame on shutdown.
package wstransport

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"seatflow/internal/live"
)

// closeForbidden is the close code for a connection_init with a rejected token: clients
// (graphql-ws, Apollo) treat 4403 as final instead of reconnecting forever as after 1000.
const closeForbidden = 4403

const (
	websocketWriteTimeout = 10 * time.Second
)

// Config configures the GraphQL websocket transport (graphql-transport-ws and
// graphql-ws over gorilla/websocket). Zero durations and limits take the defaults noted.
type Config struct {
	// AllowedOrigins are the browser origins that may open a websocket, e.g.
	// "https://tickets.example.com"; "*" allows any; empty allows the same origin only.
	// Requests without an Origin header (non-browser clients) are always allowed.
	AllowedOrigins []string
	// Auth checks the bearer token of connection_init and returns the context carrying
	// the caller's identity. A connection without a token stays anonymous; one whose token
	// Auth rejects (or any token when Auth is nil) is closed with 4403.
	Auth func(ctx context.Context, token string) (context.Context, error)
	// InitTimeout is how long a client has to send connection_init (default 10s).
	InitTimeout time.Duration
	// KeepAlive is the graphql-ws "ka" interval (default 15s).
	KeepAlive time.Duration
	// PingPong is the graphql-transport-ws ping interval; a client that has not answered
	// within two intervals is dropped (default 15s).
	PingPong time.Duration
	// ReadLimit is the largest message accepted from a client in bytes (default 64 KiB).
	ReadLimit int64
	// MaxSubscriptions caps the subscriptions open at once on one connection (default 10).
	MaxSubscriptions int
	// Registry keeps the open connections, for shutdown; required.
	Registry *Registry
}

// New returns gqlgen's websocket transport over gorilla/websocket with
// authentication, timeouts, keep-alives for both protocols, the origin check, a read
// limit and the per-connection subscription cap.
func New(cfg Config) graphql.Transport {
	if cfg.InitTimeout <= 0 {
		cfg.InitTimeout = 10 * time.Second
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 15 * time.Second
	}
	if cfg.PingPong <= 0 {
		cfg.PingPong = 15 * time.Second
	}
	if cfg.ReadLimit <= 0 {
		cfg.ReadLimit = 64 << 10
	}
	if cfg.MaxSubscriptions <= 0 {
		cfg.MaxSubscriptions = 10
	}
	readLimit := cfg.ReadLimit
	return detachedWebsocket{transport.Websocket{
		Implementation: gorillaWebsocket{checkOrigin: originChecker(cfg.AllowedOrigins), conns: cfg.Registry,
			initTimeout: cfg.InitTimeout},
		InitFunc:    websocketInit(cfg.Auth, cfg.MaxSubscriptions),
		InitTimeout: cfg.InitTimeout,
		// gqlgen runs each for its own protocol only: ka for graphql-ws, ping for
		// graphql-transport-ws.
		KeepAlivePingInterval: cfg.KeepAlive,
		PingPongInterval:      cfg.PingPong,
		PayloadReadLimit:      &readLimit,
	}}
}

// detachedWebsocket is gqlgen's websocket transport, run off net/http's goroutine.
type detachedWebsocket struct{ transport.Websocket }

var _ graphql.Transport = detachedWebsocket{}

// Do serves the connection on a goroutine of its own and returns once it is upgraded, so
// the goroutine net/http served the handshake on ends and takes its buffers (8 KiB) and
// its stack with it: a watcher that stays for hours costs only what the websocket needs.
// The connection's context keeps the request's values but not its cancellation, which
// net/http triggers when this handler returns; closing the socket (the client, the
// server's shutdown through the connection registry, a failed write) is what ends it.
func (t detachedWebsocket) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	upgraded := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(upgraded) }) }
	var panicked atomic.Bool
	ctx := context.WithValue(context.WithoutCancel(r.Context()), upgradedKey{}, release)
	go func() {
		defer release() // a refused handshake was answered on w before this
		defer func() {
			// net/http recovered the handler's panics; this goroutine is no longer its.
			if p := recover(); p != nil {
				panicked.Store(true)
				slog.Error("websocket connection panicked", "panic", p, "stack", string(debug.Stack()))
			}
		}()
		t.Websocket.Do(w, r.WithContext(ctx), exec)
	}()
	<-upgraded
	if panicked.Load() {
		panic(http.ErrAbortHandler) // before the upgrade: net/http drops the connection
	}
}

type upgradedKey struct{}

// websocketInit authenticates connection_init and caps the connection's subscriptions.
// gqlgen closes with the code set by transport.WithWebsocketCloseCode on the context
// returned with an error (1000 otherwise), which is how a rejected token gets 4403.
func websocketInit(auth func(context.Context, string) (context.Context, error), maxSubs int) transport.WebsocketInitFunc {
	return func(ctx context.Context, payload transport.InitPayload) (context.Context, *transport.InitPayload, error) {
		ctx = live.LimitSubscriptions(ctx, maxSubs)
		value, present := authorization(payload)
		if !present {
			return ctx, nil, nil // anonymous: the public seat map needs no token
		}
		if token, ok := bearerToken(value); ok && auth != nil {
			if authed, err := auth(ctx, token); err == nil {
				return authed, nil, nil
			}
		}
		ctx = transport.WithWebsocketCloseCode(ctx, closeForbidden)
		ctx = transport.AppendCloseReason(ctx, "forbidden: invalid token")
		return ctx, nil, errors.New("invalid or expired token")
	}
}

// authorization finds the Authorization entry of a connection_init payload, whatever
// the case of its key. An empty string counts as no token.
func authorization(payload transport.InitPayload) (any, bool) {
	for k, v := range payload {
		if strings.EqualFold(k, "Authorization") {
			if s, ok := v.(string); ok && strings.TrimSpace(s) == "" {
				return nil, false
			}
			return v, v != nil
		}
	}
	return nil, false
}

// bearerToken extracts the token of "Bearer <token>" (scheme case-insensitive).
func bearerToken(v any) (string, bool) {
	s, _ := v.(string)
	scheme, token, ok := strings.Cut(strings.TrimSpace(s), " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "Bearer") && token != ""
}

// originChecker allows requests without an Origin header, any origin when allowed
// contains "*", the listed origins, and with an empty list the same origin only.
func originChecker(allowed []string) func(*http.Request) bool {
	anyOrigin := false
	set := map[string]bool{}
	for _, o := range allowed {
		o = strings.TrimRight(strings.TrimSpace(o), "/")
		if o == "*" {
			anyOrigin = true
		} else if o != "" {
			set[strings.ToLower(o)] = true
		}
	}
	return func(r *http.Request) bool {
		origin := r.Header.Get("Origin")
		if origin == "" || anyOrigin {
			return true
		}
		if len(set) > 0 {
			return set[strings.ToLower(origin)]
		}
		u, err := url.Parse(origin)
		return err == nil && strings.EqualFold(u.Host, r.Host)
	}
}

var websocketConnections = promauto.NewGauge(prometheus.GaugeOpts{
	Namespace: "seatflow", Subsystem: "websocket", Name: "connections",
	Help: "Open GraphQL websocket connections.",
})

// gorillaWebsocket implements gqlgen's websocket interface with gorilla/websocket.
type gorillaWebsocket struct {
	checkOrigin func(*http.Request) bool
	conns       *Registry
	initTimeout time.Duration
}

var _ transport.WebsocketImplementation = gorillaWebsocket{}

// Accept upgrades the request, negotiating one of gqlgen's subprotocols. On failure
// gorilla has already answered (403 for a refused origin, 400 for a bad handshake).
func (g gorillaWebsocket) Accept(w http.ResponseWriter, r *http.Request, opts transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	up := websocket.Upgrader{
		HandshakeTimeout: 10 * time.Second,
		Subprotocols:     opts.Subprotocols,
		CheckOrigin:      g.checkOrigin,
		// Watchers are mostly idle: small read buffers, and write buffers borrowed from a
		// pool only while a message is written, keep thousands of connections cheap.
		ReadBufferSize:  1024,
		WriteBufferSize: 4096,
		WriteBufferPool: websocketWriteBuffers,
	}
	ws, err := up.Upgrade(w, r, opts.ResponseHeader)
	if err != nil {
		return nil, err
	}
	// The handshake is done: the handler may return (websocketByProtocol.Do).
	if release, ok := r.Context().Value(upgradedKey{}).(func()); ok {
		release()
	}
	c := &gorillaConn{ws: ws, conns: g.conns}
	// Answer a client's close frame once, and not after our own.
	ws.SetCloseHandler(func(code int, _ string) error {
		return c.WriteClose(code, "")
	})
	// gqlgen v0.17.98 returns without closing when connection_init carries a payload that
	// is not a JSON object; a connection that has not been answered shortly after the init
	// timeout is dropped so it cannot linger.
	c.initWatchdog.Store(time.AfterFunc(g.initTimeout+time.Second, func() {
		c.mu.Lock()
		answered := c.answered
		c.mu.Unlock()
		if !answered {
			_ = c.Close()
		}
	}))
	g.conns.add(c)
	websocketConnections.Inc()
	return c, nil
}

// gorillaConn is one websocket connection. gorilla allows one writer at a time, and gqlgen
// writes from several goroutines (responses, keep-alives, close), so writes are serialized.
type gorillaConn struct {
	ws    *websocket.Conn
	conns *Registry

	mu        sync.Mutex // serializes writes
	closeSent bool
	answered  bool // a message was written: gqlgen accepted connection_init

	initWatchdog atomic.Pointer[time.Timer]

	closeOnce sync.Once
}

var (
	_ transport.WebsocketConn          = (*gorillaConn)(nil)
	_ transport.WebsocketReadLimiter   = (*gorillaConn)(nil)
	_ transport.WebsocketReadDeadliner = (*gorillaConn)(nil)
)

// NextReader returns the next message; a normal close by the peer is
// transport.ErrWebsocketClosed, as gqlgen expects.
func (c *gorillaConn) NextReader() (int, io.Reader, error) {
	t, r, err := c.ws.NextReader()
	if websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway, websocket.CloseNoStatusReceived) {
		return t, nil, transport.ErrWebsocketClosed
	}
	return t, r, err
}

// WriteJSON sends one message. A failed or timed-out write drops the connection, so a
// stuck client ends its subscriptions instead of holding them open.
func (c *gorillaConn) WriteJSON(v any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closeSent {
		return websocket.ErrCloseSent
	}
	c.answered = true
	_ = c.ws.SetWriteDeadline(time.Now().Add(websocketWriteTimeout))
	err := c.ws.WriteJSON(v)
	if err != nil {
		_ = c.ws.Close()
	}
	return err
}

// WriteClose sends a close frame with code and message, once; later calls do nothing.
func (c *gorillaConn) WriteClose(code int, message string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closeSent {
		return nil
	}
	c.closeSent = true
	if len(message) > 123 { // a control frame carries at most 125 bytes, 2 are the code
		message = message[:123]
	}
	return c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, message),
		time.Now().Add(time.Second))
}

// Close drops the network connection (after WriteClose, if the caller wanted a frame).
func (c *gorillaConn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		if t := c.initWatchdog.Load(); t != nil {
			t.Stop()
		}
		c.conns.remove(c)
		websocketConnections.Dec()
		err = c.ws.Close()
	})
	return err
}

// Subprotocol is the negotiated subprotocol ("" when the client asked for none).
func (c *gorillaConn) Subprotocol() string { return c.ws.Subprotocol() }

// SetReadLimit caps the size of a client message.
func (c *gorillaConn) SetReadLimit(limit int64) { c.ws.SetReadLimit(limit) }

// SetReadDeadline makes reads fail after t (gqlgen's missing-pong check).
func (c *gorillaConn) SetReadDeadline(t time.Time) error { return c.ws.SetReadDeadline(t) }

// websocketWriteBuffers is shared by every connection's writes.
var websocketWriteBuffers = &sync.Pool{}

// Registry is the set of an instance's open websocket connections, for shutdown.
type Registry struct {
	mu    sync.Mutex
	conns map[*gorillaConn]struct{}
}

func (r *Registry) add(c *gorillaConn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conns == nil {
		r.conns = map[*gorillaConn]struct{}{}
	}
	r.conns[c] = struct{}{}
}

func (r *Registry) remove(c *gorillaConn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.conns, c)
}

func (r *Registry) list() []*gorillaConn {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*gorillaConn, 0, len(r.conns))
	for c := range r.conns {
		out = append(out, c)
	}
	return out
}

// CloseAll sends every open connection a close frame, waits up to grace for the clients
// to answer (gqlgen then ends the connection and its subscriptions), and drops the rest.
func (r *Registry) CloseAll(code int, reason string, grace time.Duration) {
	for _, c := range r.list() {
		_ = c.WriteClose(code, reason)
	}
	deadline := time.Now().Add(grace)
	for len(r.list()) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	for _, c := range r.list() {
		_ = c.Close()
	}
}
