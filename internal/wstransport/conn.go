package wstransport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/gorilla/websocket"

	"seatflow"
	"seatflow/internal/live"
	"seatflow/internal/telemetry"
)

// conn is one websocket connection. Its read loop is its only goroutine; everything it
// sends goes through its queue, written by the registry's writers, one at a time.
type conn struct {
	t       *Transport
	ws      *websocket.Conn
	raw     syscall.RawConn // its socket, when its messages are written without gorilla (write.go)
	wmu     sync.Mutex      // held by whoever writes to raw: a writer's batch, a drain, a close frame
	proto   protocol
	exec    graphql.GraphExecutor
	client  string
	session string // the session it is counted under once initialised (Registry.join); guarded by the registry's mu

	ctx    context.Context // the caller's identity and subscription limit, once initialised
	cancel context.CancelFunc

	br     *bufio.Reader // gorilla's read buffer, ours (hijack), so that what it holds is known
	spare  *bufio.Reader // polled: the reader lent to br while it is read (read.go)
	fd     int           // its socket, for the registry's poller
	token  uint64        // its number in the poller's events
	polled bool          // read by a goroutine started when the client sends (read.go)
	initBy time.Time     // when connection_init must have come

	mu          sync.Mutex
	reading     bool // polled: a goroutine is reading it
	dropped     bool // its socket is closed
	ended       bool // end has run, or will
	queue       []outgoing
	queuedBytes int // of the messages waiting behind the next one (Config.MaxQueuedBytes bounds it)
	flushing    bool
	closed      bool // no more writes: the connection is closing
	initialised bool
	expires     time.Time // the expiry of the token that authenticated it; zero for an anonymous connection
	ops         map[string]*operation
	nextKA      time.Time // graphql-ws: when the next "ka" is due
	pingSent    time.Time // graphql-transport-ws: when the unanswered ping went out (zero: none)
	nextPing    time.Time
}

func newConn(t *Transport, ws *websocket.Conn, r *http.Request, exec graphql.GraphExecutor) *conn {
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	now := time.Now()
	c := &conn{t: t, ws: ws, raw: rawConn(ws, t.cfg.Compression && offersDeflate(r.Header)),
		proto: protocolOf(ws.Subprotocol()), exec: exec,
		client: t.cfg.Registry.clientOf(r), ctx: ctx, cancel: cancel, ops: map[string]*operation{},
		nextKA: now.Add(t.cfg.KeepAlive), nextPing: now.Add(t.cfg.PingPong)}
	if t.cfg.UpgradeExpiry != nil { // a token of the upgrade's header ends the socket too
		c.expires = t.cfg.UpgradeExpiry(r.Context())
	}
	c.ownControlFrames()
	return c
}

// offersDeflate reports whether the upgrade request offers permessage-deflate: with
// Config.Compression on, gorilla then compresses the connection's messages (the same
// test gorilla's Upgrader makes).
func offersDeflate(h http.Header) bool {
	for _, v := range h.Values("Sec-Websocket-Extensions") {
		for ext := range strings.SplitSeq(v, ",") {
			name, _, _ := strings.Cut(ext, ";")
			if strings.TrimSpace(name) == "permessage-deflate" {
				return true
			}
		}
	}
	return false
}

// open registers an upgraded connection and sets its reading up: what it may read, and
// until when connection_init must come. Then the connection is read by its own read
// loop, or, when the registry polls it (read.go), by a goroutine started only when the
// client has sent something.
func (c *conn) open() {
	cfg := c.t.cfg
	cfg.Registry.add(c)
	if cfg.Compression {
		c.ws.EnableWriteCompression(true)
	}
	c.ws.SetReadLimit(cfg.ReadLimit)
	c.initBy = time.Now().Add(cfg.InitTimeout)
	_ = c.ws.SetReadDeadline(c.initBy)
}

// readLoop reads the client's messages until the connection ends, then cleans up.
func (c *conn) readLoop() {
	defer c.end()
	for c.readMessage() {
	}
}

// readMessage reads the client's next message and acts on it; false when the connection
// ends.
func (c *conn) readMessage() bool {
	buf, err := c.read()
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() && !c.isInitialised() {
			c.shut(c.protoCode(closeInitTimeout, websocket.CloseProtocolError), "connection initialisation timeout")
		} else if errors.Is(err, websocket.ErrReadLimit) {
			c.shut(websocket.CloseMessageTooBig, "message too big")
		}
		return false
	}
	if c.isClosed() {
		// Its close frame is sent: nothing more is answered (nor started), and the
		// client's own close or its going away ends the loop.
		readBuffers.Put(buf)
		return true
	}
	var m message
	err = json.Unmarshal(buf.Bytes(), &m)
	readBuffers.Put(buf)
	if err != nil || m.Type == "" {
		c.protocolError("invalid message")
		return false
	}
	return c.handle(m)
}

// readBuffers lend the read loops a buffer for each message: an idle connection holds
// none, and a client sending large messages in a loop leaves no garbage of them.
var readBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// read reads the client's next message into a buffer of readBuffers (the caller puts it
// back), within the read limit.
func (c *conn) read() (*bytes.Buffer, error) {
	_, r, err := c.ws.NextReader()
	if err != nil {
		return nil, err
	}
	buf := readBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	if _, err := buf.ReadFrom(r); err != nil {
		readBuffers.Put(buf)
		return nil, err
	}
	return buf, nil
}

// handle acts on one message; false ends the connection.
func (c *conn) handle(m message) bool {
	p := c.proto
	switch {
	case m.Type == p.init:
		return c.initialise(m.Payload)
	case m.Type == "ping" && !p.legacy:
		c.send(frame("pong", "", m.Payload))
	case m.Type == "pong" && !p.legacy:
		c.mu.Lock()
		c.pingSent = time.Time{}
		c.mu.Unlock()
	case m.Type == p.subscribe:
		switch {
		case !c.isInitialised():
			c.shut(closeUnauthorized, "Unauthorized")
			return false
		case c.expired():
			c.shut(closeForbidden, "forbidden: token expired")
			return false
		case m.ID == "":
			c.protocolError("a subscription needs an id")
			return false
		}
		if !c.start(m.ID, m.Payload) {
			c.shut(c.protoCode(closeDuplicate, websocket.CloseProtocolError), "Subscriber for "+truncate(m.ID)+" already exists")
			return false
		}
	case m.Type == p.stop:
		c.stop(m.ID)
	case m.Type == "connection_terminate" && p.legacy:
		c.shut(websocket.CloseNormalClosure, "terminated")
		return false
	default:
		c.protocolError("unexpected message " + truncate(m.Type))
		return false
	}
	return true
}

// initialise answers connection_init: an Authorization entry in its payload must hold a
// valid bearer token (4403 otherwise), which then authenticates the connection until it
// expires; without one the connection keeps the identity of its upgrade (its header's
// token, until that one expires), or stays anonymous.
func (c *conn) initialise(payload json.RawMessage) bool {
	if c.isInitialised() {
		c.shut(c.protoCode(closeTooManyInits, websocket.CloseProtocolError), "Too many initialisation requests")
		return false
	}
	var init map[string]any
	if p := strings.TrimSpace(string(payload)); p != "" && p != "null" {
		if err := json.Unmarshal(payload, &init); err != nil {
			c.protocolError("the connection_init payload must be an object")
			return false
		}
	}
	// The payload's traceparent parents the connection's operations (each subscribe's
	// extensions may name its own).
	ctx := telemetry.Extract(live.LimitSubscriptions(c.ctx, c.t.cfg.MaxSubscriptions), init)
	c.mu.Lock()
	expires := c.expires
	c.mu.Unlock()
	if value, present := authorization(init); present {
		token, ok := bearerToken(value)
		if !ok || c.t.cfg.Auth == nil {
			return c.forbid("forbidden: invalid token")
		}
		authed, exp, err := c.t.cfg.Auth(ctx, token)
		if err != nil {
			return c.forbid("forbidden: invalid token")
		}
		ctx, expires = authed, exp
	}
	if c.t.cfg.Session != nil && !c.t.cfg.Registry.join(c, c.t.cfg.Session(ctx)) {
		return c.refuseSession()
	}
	c.mu.Lock()
	c.ctx, c.expires, c.initialised = ctx, expires, true
	c.mu.Unlock()
	_ = c.ws.SetReadDeadline(time.Time{})
	c.send(frame(c.proto.ack, "", nil))
	if c.proto.legacy {
		c.send(frame("ka", "", nil))
	}
	return true
}

// forbid refuses the connection's token: the legacy protocol is told why first.
func (c *conn) forbid(reason string) bool {
	if c.proto.legacy {
		c.shutAfter(frame("connection_error", "", []byte(`{"message":"invalid or expired token"}`)), closeForbidden, reason)
		return false
	}
	c.shut(closeForbidden, reason)
	return false
}

// refuseSession closes a connection over its session's cap with 1013 (try again later):
// the legacy protocol is told why first, with the code.
func (c *conn) refuseSession() bool {
	if c.proto.legacy {
		c.shutAfter(frame("connection_error", "", []byte(`{"message":"`+sessionCapReason+`","extensions":{"code":"`+seatflow.ERATELIMITED+`"}}`)),
			closeTryAgain, sessionCapReason)
		return false
	}
	c.shut(closeTryAgain, sessionCapReason)
	return false
}

// protocolError ends a connection whose client broke the protocol.
func (c *conn) protocolError(reason string) {
	if c.proto.legacy {
		b, _ := json.Marshal(map[string]string{"message": reason})
		c.shutAfter(frame("connection_error", "", b), websocket.CloseProtocolError, reason)
		return
	}
	c.shut(closeBadRequest, reason)
}

// protoCode is code on graphql-transport-ws, legacy on graphql-ws (which has no codes of
// its own).
func (c *conn) protoCode(code, legacy int) int {
	if c.proto.legacy {
		return legacy
	}
	return code
}

func (c *conn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func (c *conn) isInitialised() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.initialised
}

// expired reports whether the connection's token has expired (on the tokens' clock).
func (c *conn) expired() bool {
	now := c.t.cfg.Now.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.expires.IsZero() && !now.Before(c.expires)
}

// tick sends the keep-alive due and drops a client that is silent or whose token expired;
// the registry's ticker calls it for every connection.
func (c *conn) tick(now time.Time) {
	cfg := c.t.cfg
	expired := c.expired()
	c.mu.Lock()
	initialised := c.initialised
	// A polled connection has no read deadline that ends it when connection_init does
	// not come (no goroutine is reading): the ticker ends it.
	late := c.polled && !initialised && !c.reading && !now.Before(c.initBy)
	var keepAlive []byte
	silent := false
	if initialised && c.proto.legacy && !now.Before(c.nextKA) {
		keepAlive, c.nextKA = frame("ka", "", nil), now.Add(cfg.KeepAlive)
	}
	if initialised && !c.proto.legacy && !now.Before(c.nextPing) {
		if !c.pingSent.IsZero() && now.Sub(c.pingSent) >= 2*cfg.PingPong {
			silent = true
		} else if c.pingSent.IsZero() {
			c.pingSent = now
		}
		keepAlive, c.nextPing = frame("ping", "", nil), now.Add(cfg.PingPong)
	}
	c.mu.Unlock()
	switch {
	case late:
		c.shut(c.protoCode(closeInitTimeout, websocket.CloseProtocolError), "connection initialisation timeout")
	case expired:
		c.shut(closeForbidden, "forbidden: token expired")
	case silent:
		c.shut(websocket.CloseGoingAway, "no pong")
	case keepAlive != nil:
		c.send(keepAlive)
	}
}

// shut sends a close frame with code and reason (once), then drops the connection.
func (c *conn) shut(code int, reason string) {
	c.sendClose(code, reason)
	c.drop()
}

// shutAfter writes last as the connection's final message, then a close frame with code
// and reason, then drops the connection; it runs on the read loop. Whatever waits in the
// queue is dropped (the refusal is all the client still needs). A websocket has one
// writer at a time, so last is written only once no writer holds the connection: the
// writer still flushing stops after the message it is writing (the connection is
// closed), and a client too slow to take that one within the write timeout gets no last
// words.
func (c *conn) shutAfter(last []byte, code int, reason string) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.clearQueue()
	c.mu.Unlock()
	deadline := time.Now().Add(c.t.cfg.WriteTimeout)
	for {
		c.mu.Lock()
		busy := c.flushing
		c.flushing = true // no writer takes the connection now (enqueue refuses: closed)
		c.mu.Unlock()
		if !busy {
			break
		}
		if time.Now().After(deadline) {
			c.drop()
			return
		}
		time.Sleep(time.Millisecond) // rare (a refusal while answers are being written), and short
	}
	if c.write(outgoing{frame: last}) == nil {
		c.writeClose(code, reason)
	}
	c.drop()
}

// sendClose sends a close frame, once, and writes nothing after it; the client's answer
// (or its going away) ends the read loop.
func (c *conn) sendClose(code int, reason string) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.clearQueue()
	c.mu.Unlock()
	c.writeClose(code, reason)
}

// drop closes the network connection: the read loop ends and cleans up (for a polled
// connection that no goroutine reads now, a goroutine of its own does).
func (c *conn) drop() {
	c.mu.Lock()
	c.closed = true
	c.clearQueue()
	c.dropped = true
	cleanUp := c.polled && !c.reading && !c.ended
	c.ended = c.ended || cleanUp
	c.mu.Unlock()
	_ = c.ws.Close()
	if cleanUp {
		go c.end()
	}
}

// end runs once when the connection's reading ends: every operation stops and the
// connection leaves the registry.
func (c *conn) end() {
	c.mu.Lock()
	c.ended = true
	c.mu.Unlock()
	c.drop()
	c.cancel()
	c.t.cfg.Registry.remove(c)
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64]
	}
	return s
}
