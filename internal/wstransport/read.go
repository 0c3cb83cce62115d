package wstransport

import (
	"bufio"
	"net"
	"net/http"
	"runtime/debug"
	"sync"

	"github.com/gorilla/websocket"
)

// Reading. A connection costs a goroutine only while its client has sent something not
// yet read: on Linux the registry's poller (poll_linux.go) watches every idle
// connection's socket with one epoll instance and starts a goroutine to read it when it
// becomes readable; that goroutine reads what the client sent, acts on it, and ends. An
// idle watcher then holds no stack at all (a read loop's grows to the deepest message it
// ever handled, gqlgen's validation of a subscription, and keeps it). Elsewhere, and for a
// connection the registry does not poll (a compressed one, one not on TCP), a read loop
// per connection reads as before. Why, with the figures: docs/DESIGN.md ("Live seat map").
//
// gorilla reads the frames in both cases, through a buffer the transport gives it at the
// upgrade (hijack), so the transport knows when gorilla holds bytes the socket no longer
// shows: those are read before the socket is watched again.

// readBufferSize is the read buffer each connection keeps: enough for a client's usual
// message (connection_init, a subscribe, a pong); a larger one is read through it.
const readBufferSize = 512

// hijack gives gorilla's Upgrader the read buffer of the transport's choosing: gorilla
// takes the hijacked connection's reader as its own when its ReadBufferSize is 0, and
// net/http's 4 KiB reader goes with the handshake.
type hijack struct {
	http.ResponseWriter
	br *bufio.Reader
}

func (h *hijack) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := h.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, http.ErrNotSupported
	}
	nc, brw, err := hj.Hijack()
	if err != nil || brw.Reader.Buffered() > 0 {
		return nc, brw, err // gorilla refuses a client that sent before the handshake's end
	}
	h.br = bufio.NewReaderSize(nc, readBufferSize)
	return nc, bufio.NewReadWriter(h.br, brw.Writer), nil
}

// readReady reads what a polled connection's client sent, on a goroutine of its own: the
// messages whole (waiting for the rest of one that came in part), until neither the
// socket nor gorilla's buffer holds more; then the socket is watched again, or the
// connection ends.
func (c *conn) readReady() {
	c.lendReader()
	defer func() {
		if p := recover(); p != nil {
			c.t.cfg.Log.Error("websocket connection panicked", "panic", p, "stack", string(debug.Stack()))
			c.shut(websocket.CloseInternalServerErr, "internal error")
			c.stopReading(false)
		}
	}()
	for {
		if !c.readMessage() {
			c.stopReading(false)
			return
		}
		if c.br.Buffered() == 0 {
			break
		}
	}
	c.stopReading(true)
}

// stopReading ends the polled connection's read: the socket is watched again (more), or
// the connection ends; it ends too if it was dropped meanwhile.
func (c *conn) stopReading(more bool) {
	c.returnReader()
	c.mu.Lock()
	c.reading = false
	if !more || c.dropped || c.ended {
		done := !c.ended
		c.ended = true
		c.mu.Unlock()
		if done {
			c.end()
		}
		return
	}
	// Under c.mu: a drop (which closes the socket after marking it dropped under c.mu)
	// cannot close it in between, so the descriptor watched is still this connection's.
	err := c.t.cfg.Registry.poller.watch(c)
	c.mu.Unlock()
	if err != nil {
		c.drop()
	}
}

// startReading marks a polled connection as being read; false when it ended meanwhile.
func (c *conn) startReading() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dropped || c.ended || c.reading {
		return false
	}
	c.reading = true
	return true
}

// readers lend polled connections the buffer gorilla reads them through, only while they
// are read: an idle connection holds none (its reader is empty: nothing reads it until
// its socket has something, and then it gets one first).
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBufferSize) }}

// lendReader gives the connection's reader a buffer, on its reading goroutine.
func (c *conn) lendReader() {
	b := readers.Get().(*bufio.Reader)
	b.Reset(c.ws.NetConn())
	*c.br = *b // gorilla keeps the pointer, c.br; what it points to can change while idle
	c.spare = b
}

// returnReader takes the buffer back from a connection whose reader holds nothing.
func (c *conn) returnReader() {
	if c.spare == nil {
		c.spare = new(bufio.Reader)
	}
	*c.spare = *c.br
	c.spare.Reset(nil)
	readers.Put(c.spare)
	c.spare = nil
	*c.br = bufio.Reader{}
}
