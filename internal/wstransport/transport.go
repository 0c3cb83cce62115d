// Package wstransport is GraphQL's websocket transport, our own, on gorilla/websocket: the
// graphql-transport-ws protocol and the legacy graphql-ws one (subscriptions-transport-ws),
// with connection_init authentication (4403 on a rejected or expired token), the origin
// check, keep-alives, per-connection and per-address limits, and a registry of open
// connections that the server closes with 1001 on shutdown.
//
// It is built for tens of thousands of idle watchers per instance: a connection costs one
// goroutine (its read loop) and no more; writes go through a bounded per-connection queue
// flushed by a small pool shared by every connection, with a write deadline; keep-alives
// come from one ticker for all connections; a seat-map subscription costs no goroutine
// at all: the live hub puts its events into the connection's queue, rendered once per
// event and selection (package seatrender) and shared by every watcher asking the same.
// Other operations run through gqlgen's executor.
package wstransport

import (
	"context"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/gorilla/websocket"

	"seatflow"
	"seatflow/internal/live"
)

// Subprotocols, in the order the server prefers them.
const (
	protoTransportWS = "graphql-transport-ws"
	protoGraphQLWS   = "graphql-ws"
)

// Close codes besides the standard ones.
const (
	// closeForbidden answers a connection_init with a rejected token, and a token that
	// expires. graphql-ws 6 counts 4403 among the closes worth retrying (connectionParams
	// may bring a new token), up to its retryAttempts (5 by default): a client with no new
	// token to give should not retry it (shouldRetry).
	closeForbidden = 4403
	// closeBadRequest, closeUnauthorized, closeInitTimeout, closeDuplicate and
	// closeTooManyInits are graphql-transport-ws' codes for protocol errors.
	closeBadRequest   = 4400
	closeUnauthorized = 4401
	closeInitTimeout  = 4408
	closeDuplicate    = 4409
	closeTooManyInits = 4429
	// closeTryAgain refuses a connection over a cap (too many sockets).
	closeTryAgain = 1013
)

// Defaults of the per-connection bounds (Config.MaxOperations, Config.MaxQueuedBytes).
const (
	DefaultMaxOperations  = 100
	DefaultMaxQueuedBytes = 1 << 20
)

// Config configures the transport. Zero durations and limits take the defaults noted.
type Config struct {
	// AllowedOrigins are the browser origins that may open a websocket, e.g.
	// "https://tickets.example.com"; "*" allows any; empty allows the same origin only.
	// Requests without an Origin header (non-browser clients) are always allowed.
	AllowedOrigins []string
	// Auth checks the bearer token of connection_init and returns the context carrying the
	// caller's identity and when the token expires; the connection is closed with 4403
	// then. A connection without a token stays anonymous; one whose token Auth rejects
	// (or any token when Auth is nil) is closed with 4403.
	Auth func(ctx context.Context, token string) (context.Context, time.Time, error)
	// Session names the session a connection's context belongs to once connection_init
	// is answered (a user, a guest session, an address without a token): what the
	// registry's MaxConnsPerSession counts by. Nil or "": not counted.
	Session func(ctx context.Context) string
	// UpgradeExpiry returns when the identity the upgrade request's context carries (a
	// token of its Authorization header, read before the upgrade) expires; zero for none.
	// The connection is closed with 4403 then, as for a token of connection_init, unless
	// connection_init brings a token of its own: the later token counts.
	UpgradeExpiry func(ctx context.Context) time.Time
	// Now is the clock tokens expire on (the one Auth checks them with); time.Now when nil.
	Now seatflow.ClockFunc
	// SeatMaps starts seat-map watches delivered straight into a connection's queue;
	// without it seat-map subscriptions run through the executor like any other.
	SeatMaps SeatMaps
	// Operation prepares the context of each operation the executor runs on a
	// connection, as the HTTP handler prepares each request's (its loaders, which must
	// not outlive one operation): the connection's context carries only what lasts as
	// long as it does. Nil: nothing is added.
	Operation func(ctx context.Context) context.Context
	// Registry keeps the open connections and runs their writes and keep-alives; required.
	Registry *Registry
	// InitTimeout is how long a client has to send connection_init (default 10s).
	InitTimeout time.Duration
	// KeepAlive is the graphql-ws "ka" interval (default 15s).
	KeepAlive time.Duration
	// PingPong is the graphql-transport-ws ping interval; a client that has not answered
	// within two intervals is dropped (default 15s).
	PingPong time.Duration
	// WriteTimeout is how long one write may take before the client is dropped (default 10s).
	WriteTimeout time.Duration
	// ReadLimit is the largest message accepted from a client in bytes (default 64 KiB).
	ReadLimit int64
	// MaxSubscriptions caps the seat-map subscriptions open at once on one connection
	// (default 10).
	MaxSubscriptions int
	// MaxOperations caps the operations (queries, mutations and subscriptions) in flight
	// at once on one connection; one more is answered RATE_LIMITED on its own id and the
	// connection stays open (default 100).
	MaxOperations int
	// MaxQueuedBytes bounds the bytes waiting to be sent on one connection, whatever they
	// are (answers, seat-map events, keep-alives, pongs), behind the message being written
	// and the next one; past it the client is not reading and the connection is closed
	// with 1008 (default 1 MiB: a snapshot of the largest hall, 2,000 seats, is 300 KB
	// with every field selected, 100 KB with seat ids and statuses).
	MaxQueuedBytes int
	// Compression negotiates permessage-deflate with clients that offer it (off by default).
	Compression bool
	// Log receives connection errors; slog.Default() when nil.
	Log *slog.Logger
}

// SeatMaps starts a seat-map watch whose events go to sink (the live hub, through the
// app: the showtime's hall from the catalog, the events from the hub).
type SeatMaps interface {
	WatchSeatMap(ctx context.Context, showID int, sink live.Sink) error
}

func (c Config) withDefaults() Config {
	if c.InitTimeout <= 0 {
		c.InitTimeout = 10 * time.Second
	}
	if c.KeepAlive <= 0 {
		c.KeepAlive = 15 * time.Second
	}
	if c.PingPong <= 0 {
		c.PingPong = 15 * time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 10 * time.Second
	}
	if c.ReadLimit <= 0 {
		c.ReadLimit = 64 << 10
	}
	if c.MaxSubscriptions <= 0 {
		c.MaxSubscriptions = 10
	}
	if c.MaxOperations <= 0 {
		c.MaxOperations = DefaultMaxOperations
	}
	if c.MaxQueuedBytes <= 0 {
		c.MaxQueuedBytes = DefaultMaxQueuedBytes
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	return c
}

// Transport is the websocket transport of a gqlgen server.
type Transport struct {
	cfg      Config
	upgrader websocket.Upgrader
	renders  renderCache
}

var _ graphql.Transport = (*Transport)(nil)

// New returns the transport; register it on the gqlgen server with AddTransport.
func New(cfg Config) *Transport {
	cfg = cfg.withDefaults()
	return &Transport{cfg: cfg, upgrader: websocket.Upgrader{
		HandshakeTimeout:  10 * time.Second,
		Subprotocols:      []string{protoTransportWS, protoGraphQLWS},
		CheckOrigin:       originChecker(cfg.AllowedOrigins),
		EnableCompression: cfg.Compression,
		// Watchers are mostly idle: a small read buffer (ours, read.go: ReadBufferSize 0
		// has gorilla take the hijacked reader), and write buffers borrowed from a pool
		// only while gorilla writes a message, keep thousands of connections cheap.
		ReadBufferSize:  0,
		WriteBufferSize: 4096,
		Error:           refuseHandshake,
		WriteBufferPool: writeBuffers,
	}}
}

// refuseHandshake answers an upgrade gorilla refused (a bad handshake, another protocol,
// an origin not allowed) in GraphQL's error format, with a code.
func refuseHandshake(w http.ResponseWriter, _ *http.Request, status int, reason error) {
	code := seatflow.EBADREQUEST
	if status == http.StatusForbidden {
		code = seatflow.EFORBIDDEN
	}
	(&refusal{status: status, code: code, message: "websocket handshake refused: " + reason.Error()}).write(w)
}

// Supports takes websocket upgrades.
func (t *Transport) Supports(r *http.Request) bool {
	return r.Header.Get("Upgrade") != ""
}

// Do upgrades the request and hands the connection to the registry's poller, or to a
// read loop of its own (read.go), then returns: net/http's goroutine for the handshake
// ends and takes its buffers and its grown stack with it, so a watcher that stays for
// hours costs only what it needs. The connection's context keeps the request's values,
// not its cancellation.
func (t *Transport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	if refused := t.cfg.Registry.admit(r); refused != nil {
		refused.write(w)
		return
	}
	h := &hijack{ResponseWriter: w}
	ws, err := t.upgrader.Upgrade(h, r, nil)
	if err != nil {
		t.cfg.Registry.leave(r) // gorilla answered (403 for a refused origin, 400 for a bad handshake)
		return
	}
	c := newConn(t, ws, r, exec)
	c.br = h.br
	c.open()
	if c.br != nil && t.cfg.Registry.poller != nil {
		c.returnReader() // idle until the client sends: it gets a buffer then
		if t.cfg.Registry.poller.add(c) == nil {
			return
		}
		c.lendReader() // read by a read loop after all
	}
	go func() {
		defer func() {
			if p := recover(); p != nil {
				t.cfg.Log.Error("websocket connection panicked", "panic", p, "stack", string(debug.Stack()))
				c.shut(websocket.CloseInternalServerErr, "internal error")
			}
		}()
		c.readLoop()
	}()
}
