package wstransport

import (
	"encoding/binary"
	"errors"
	"net"
	"time"

	"github.com/gorilla/websocket"
)

// The write path. A connection's queued messages are framed here and written in one
// system call (writev), without a write deadline, by the registry's few writers, which
// never wait for a client: a socket that cannot take everything at once keeps the rest on
// a goroutine of its own (drain), which waits for it within the write timeout. Why, with
// the figures, in docs/DESIGN.md ("Live seat map"): during an on-sale burst the fan-out is
// one write per watcher per tick; each write is a system call that costs the kernel far
// more than the framing costs us, a deadline per write (a timer set and stopped) costs a
// fifth as much again, and writers that may wait for a client have to be many, and then
// take every processor from the sale when they all have work.
//
// gorilla/websocket stays the protocol library: it does the handshake, reads the
// client's frames and writes everything on a connection it compresses
// (permessage-deflate), on a goroutine of its own per flush. A connection written here
// has its control frames (pongs, close) written here too, so nothing else ever writes to
// its socket between two parts of one of our frames.

// opText, opClose and opPong are the opcodes of the frames written here (RFC 6455 5.2).
const (
	opText  = 1
	opClose = 8
	opPong  = 10
)

// maxBatch bounds the messages framed into one write, and batchBytes (roughly) its size:
// a connection with much queued (a burst of answers) is written a batch per turn, so the
// connections behind it in the writers' queue wait one batch, not all of it; and a large
// message goes alone, so a close frame never waits behind more than one of them.
const (
	maxBatch   = 64
	batchBytes = 16 << 10
)

// errWouldBlock reports a socket that took none or only part of a write.
var errWouldBlock = errors.New("wstransport: the socket's buffer is full")

// frameHeader appends the header of a final, unmasked server frame of opcode and length n.
func frameHeader(b []byte, opcode byte, n int) []byte {
	b = append(b, 0x80|opcode)
	switch {
	case n < 126:
		return append(b, byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, 126), uint16(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, 127), uint64(n))
	}
}

// batch is one writer's scratch for framing a connection's messages: the small parts
// (headers, each operation's prefix) are copied into head, the shared ones (a seat-map
// rendering, a whole answer) are only pointed at. Reused from write to write.
type batch struct {
	head  []byte
	parts []part
	bufs  net.Buffers
	total int
	sys   sysWrite // writeNow's state (write_linux.go)
}

// part is a piece of a batch: bytes of head (from, to) or a shared slice.
type part struct {
	from, to int
	shared   []byte
}

func (b *batch) reset() {
	b.head, b.parts, b.total = b.head[:0], b.parts[:0], 0
	clear(b.bufs)
	b.bufs = b.bufs[:0]
}

// add frames one message.
func (b *batch) add(o outgoing) {
	switch {
	case o.op != nil:
		from := len(b.head)
		b.head = frameHeader(b.head, opText, len(o.op.prefix)+len(o.seat)+len(seatSuffix))
		b.head = append(b.head, o.op.prefix...)
		b.parts = append(b.parts, part{from: from, to: len(b.head)}, part{shared: o.seat}, part{shared: seatSuffix})
	case len(o.frame) <= 512:
		from := len(b.head)
		b.head = frameHeader(b.head, o.opcode(), len(o.frame))
		b.head = append(b.head, o.frame...)
		b.parts = append(b.parts, part{from: from, to: len(b.head)})
	default:
		from := len(b.head)
		b.head = frameHeader(b.head, o.opcode(), len(o.frame))
		b.parts = append(b.parts, part{from: from, to: len(b.head)}, part{shared: o.frame})
	}
}

// buffers are the batch's bytes in order, once every message is added.
func (b *batch) buffers() net.Buffers {
	for _, p := range b.parts {
		s := p.shared
		if s == nil {
			s = b.head[p.from:p.to]
		}
		if len(s) > 0 {
			b.bufs = append(b.bufs, s)
			b.total += len(s)
		}
	}
	return b.bufs
}

// rest copies what the first n bytes of the batch leave unwritten.
func (b *batch) rest(n int) []byte {
	out := make([]byte, 0, b.total-n)
	for _, s := range b.bufs {
		if n >= len(s) {
			n -= len(s)
			continue
		}
		out = append(out, s[n:]...)
		n = 0
	}
	return out
}

// opcode is the frame's opcode: a text message unless it is a pong.
func (o outgoing) opcode() byte {
	if o.pong {
		return opPong
	}
	return opText
}

// flush writes the connection's queue, a batch at a time, on a writer of the registry
// (w) or, for a connection not written here (raw is nil), on a goroutine of its own.
// Only one goroutine flushes a connection at a time (c.flushing): the writer that takes
// it, the goroutine it hands it to, or shutAfter. After one batch a connection with more
// queued goes back to the end of the writers' queue.
func (c *conn) flush(w *batch) {
	if c.raw == nil {
		go c.flushBlocking()
		return
	}
	items, ok := c.take()
	if !ok {
		return
	}
	w.reset()
	for _, o := range items {
		w.add(o)
	}
	w.buffers()
	c.wmu.Lock()
	n, err := w.writeNow(c.raw)
	switch {
	case err == nil:
		c.wmu.Unlock()
		c.next()
	case errors.Is(err, errWouldBlock):
		// Keep the socket (wmu) for the rest: a control frame written in between would
		// land inside the frame the socket has part of.
		go c.drain(w.rest(n))
	default:
		c.wmu.Unlock()
		c.failed()
	}
	clear(items)
}

// take takes the next batch off the queue; false (and the connection released) when
// there is nothing to write. The batch leaves the byte count; the message behind it
// becomes the one that does not count.
func (c *conn) take() ([]outgoing, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) == 0 || c.closed {
		c.flushing = false
		return nil, false
	}
	n, size := 0, 0
	items := make([]outgoing, 0, min(len(c.queue), maxBatch))
	for n < len(c.queue) && len(items) < maxBatch && (len(items) == 0 || size+c.queue[n].size() <= batchBytes) {
		o := c.queue[n]
		n++
		if o.due != nil {
			// The DELTA is taken now, under c.mu, so it is written before anything the
			// hub queues for the watch after it (a snapshot drops what waits, Drop, under
			// c.mu too).
			ev := o.due.Next()
			if ev == nil {
				continue // nothing due any more: a snapshot came, or it was taken already
			}
			o = outgoing{op: o.op, seat: o.op.render(ev)}
		}
		size += o.size()
		items = append(items, o)
	}
	clear(c.queue[:n])
	if c.queue = c.queue[n:]; len(c.queue) == 0 {
		c.queue, c.queuedBytes = nil, 0 // the array goes with what it held
	} else {
		c.queuedBytes = 0
		for _, o := range c.queue[1:] {
			c.queuedBytes += o.size()
		}
	}
	if len(items) == 0 { // only DELTAs no longer due
		c.flushing = false
		return nil, false
	}
	return items, true
}

// next hands the connection back to the writers if more is queued, else releases it.
func (c *conn) next() {
	c.mu.Lock()
	more := len(c.queue) > 0 && !c.closed
	if !more {
		c.flushing = false
	}
	c.mu.Unlock()
	if more {
		c.t.cfg.Registry.schedule(c)
	}
}

// failed drops a connection whose write failed and releases it.
func (c *conn) failed() {
	c.drop()
	c.mu.Lock()
	c.flushing = false
	c.mu.Unlock()
}

// drain writes what the socket could not take at once, waiting for the client within the
// write timeout, then goes on with the queue; it owns the socket (wmu) until then. A
// client that does not read within the timeout is dropped.
func (c *conn) drain(rest []byte) {
	nc := c.ws.NetConn()
	_ = nc.SetWriteDeadline(time.Now().Add(c.t.cfg.WriteTimeout))
	_, err := nc.Write(rest)
	_ = nc.SetWriteDeadline(time.Time{}) // the writers write without one
	c.wmu.Unlock()
	if err != nil {
		c.failed()
		return
	}
	c.next()
}

// flushBlocking writes the queue of a connection not written here, through gorilla, one
// message at a time, each within the write deadline.
func (c *conn) flushBlocking() {
	for {
		items, ok := c.take()
		if !ok {
			return
		}
		for _, o := range items {
			if err := c.write(o); err != nil {
				c.failed()
				return
			}
		}
	}
}

// write sends one message within the write deadline, blocking; the caller owns the
// connection (c.flushing).
func (c *conn) write(o outgoing) error {
	if c.raw != nil {
		var b batch
		b.add(o)
		return c.writeBlocking(b.buffers(), c.t.cfg.WriteTimeout)
	}
	_ = c.ws.SetWriteDeadline(time.Now().Add(c.t.cfg.WriteTimeout))
	w, err := c.ws.NextWriter(websocket.TextMessage)
	if err != nil {
		return err
	}
	if o.op != nil {
		_, _ = w.Write(o.op.prefix)
		_, _ = w.Write(o.seat)
		_, err = w.Write(seatSuffix)
	} else {
		_, err = w.Write(o.frame)
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeBlocking writes bufs to a connection written here, waiting up to timeout for the
// socket.
func (c *conn) writeBlocking(bufs net.Buffers, timeout time.Duration) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	nc := c.ws.NetConn()
	_ = nc.SetWriteDeadline(time.Now().Add(timeout))
	_, err := bufs.WriteTo(nc)
	_ = nc.SetWriteDeadline(time.Time{})
	return err
}

// writeClose writes a close frame with code and reason, waiting at most a second for the
// socket; nothing is written after it.
func (c *conn) writeClose(code int, reason string) {
	if len(reason) > 123 { // a control frame carries at most 125 bytes, 2 are the code
		reason = reason[:123]
	}
	c.writeCloseFrame(websocket.FormatCloseMessage(code, reason))
}

// writeCloseFrame writes a close frame carrying payload. On a connection written here it
// waits (up to a second) until no one else writes to the socket: a writer finishing its
// batch, or a drain the client holds up (then no close frame is sent).
func (c *conn) writeCloseFrame(payload []byte) {
	if c.raw == nil {
		_ = c.ws.WriteControl(websocket.CloseMessage, payload, time.Now().Add(time.Second))
		return
	}
	deadline := time.Now().Add(time.Second)
	for !c.wmu.TryLock() {
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(time.Millisecond) // rare: a close while a batch is being written
	}
	frame := append(frameHeader(make([]byte, 0, 4+len(payload)), opClose, len(payload)), payload...)
	nc := c.ws.NetConn()
	_ = nc.SetWriteDeadline(deadline)
	_, _ = nc.Write(frame)
	_ = nc.SetWriteDeadline(time.Time{})
	c.wmu.Unlock()
}

// ownControlFrames has the connection's pongs and its answer to the client's close go
// through the queue and this file instead of gorilla's own writes (see above).
func (c *conn) ownControlFrames() {
	if c.raw == nil {
		return
	}
	c.ws.SetPingHandler(func(data string) error {
		c.enqueue(outgoing{frame: []byte(data), pong: true}, false)
		return nil
	})
	c.ws.SetCloseHandler(func(code int, _ string) error {
		c.mu.Lock()
		already := c.closed
		c.closed = true
		c.clearQueue()
		c.mu.Unlock()
		if !already {
			c.writeCloseFrame(websocket.FormatCloseMessage(code, ""))
		}
		return nil
	})
}
