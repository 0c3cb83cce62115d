package wstransport

import (
	"github.com/gorilla/websocket"

	"seatflow/internal/live"
)

// outgoing is one message waiting in a connection's queue: a whole frame, the rendering
// of a seat-map event to frame for its operation, or word that a DELTA of its watch is
// due, taken and rendered only when the connection is written (take).
type outgoing struct {
	frame []byte
	pong  bool       // frame is the payload of a pong (a control frame), not a message
	op    *operation // with seat: a seat-map event of op; with due: a DELTA of op's watch
	seat  []byte
	due   *live.Watcher
}

// size is the bytes o holds until it is written: what the queue's byte bound counts.
func (o outgoing) size() int {
	if o.op != nil {
		if o.due != nil {
			return 0 // nothing yet: the DELTA is taken when the connection is written
		}
		return len(o.op.prefix) + len(o.seat) + len(seatSuffix)
	}
	return len(o.frame)
}

// maxQueued bounds the seat-map events (and DELTAs due) waiting for one connection; past
// it the client is slow, and a snapshot for it waits until it has room (live.Sink). A
// watch has at most one DELTA due at a time: the changes that come meanwhile are merged
// into it.
const maxQueued = 64

// closeOverflow is the reason of the close of a connection whose queue went past its
// byte bound (Config.MaxQueuedBytes), with code 1008 (policy violation).
const closeOverflow = "too much waiting to be sent: the client does not read what the server sends"

// send queues a frame; it never blocks. It counts against the queue's byte bound like
// everything queued, but not against the bound on seat-map events.
func (c *conn) send(f []byte) {
	c.enqueue(outgoing{frame: f}, false)
}

// enqueue adds o to the queue and hands the connection to a writer if none has it. A
// seat-map event (bounded) is refused when maxQueued of them wait.
//
// Every message queued counts against one byte bound (Config.MaxQueuedBytes) while it
// waits behind another: answers, seat-map events, keep-alives, pongs. The message being
// written and the next one do not count, so one large answer (and its complete, or a
// keep-alive, right behind it) never overflows. A message that would take the waiting
// bytes past the bound closes the connection with 1008 instead: the client is not
// reading, and one that sends pings and never reads would otherwise make the server keep
// every pong. A connection thus holds at most the bound plus two messages. It never
// blocks: the live hub calls it.
func (c *conn) enqueue(o outgoing, bounded bool) bool {
	size := o.size()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return true // nothing more is sent; not the client's slowness
	}
	if bounded && c.queuedSeats() >= maxQueued {
		c.mu.Unlock()
		return false
	}
	if len(c.queue) > 0 {
		if c.queuedBytes+size > c.t.cfg.MaxQueuedBytes {
			c.closed = true
			c.clearQueue()
			c.mu.Unlock()
			queueOverflows.Inc()
			go c.closeOverflowed()
			return true
		}
		c.queuedBytes += size
	}
	c.queue = append(c.queue, o)
	schedule := !c.flushing
	c.flushing = true
	c.mu.Unlock()
	if schedule {
		c.t.cfg.Registry.schedule(c)
	}
	return true
}

// clearQueue forgets every message waiting; c.mu is held.
func (c *conn) clearQueue() {
	c.queue, c.queuedBytes = nil, 0
}

// closeOverflowed sends the close frame of a connection whose queue went past its bound,
// then drops the connection. A client that reads, slowly, gets the frame after what it
// was being sent; one that does not read keeps the writer's frame and gets none (the
// frame waits a second for the socket).
func (c *conn) closeOverflowed() {
	c.writeClose(websocket.ClosePolicyViolation, closeOverflow)
	c.drop()
}

// queuedSeats counts the seat-map events waiting; c.mu is held.
func (c *conn) queuedSeats() int {
	n := 0
	for _, o := range c.queue {
		if o.op != nil {
			n++
		}
	}
	return n
}

// full reports whether a seat-map event would be refused now.
func (c *conn) full() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.closed && c.queuedSeats() >= maxQueued
}

// unqueue drops op's seat-map events still waiting (a snapshot supersedes them).
func (c *conn) unqueue(op *operation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := c.queue[:0]
	for _, o := range c.queue {
		if o.op != op {
			kept = append(kept, o)
		}
	}
	clear(c.queue[len(kept):])
	c.queue, c.queuedBytes = kept, 0
	for _, o := range kept[min(1, len(kept)):] {
		c.queuedBytes += o.size()
	}
}
