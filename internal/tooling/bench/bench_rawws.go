package bench

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The frame counters of the on-sale burst (SeatFlow's watchers and Centrifugo's
// subscribers alike) are minimal websocket clients read by one goroutine for all of them
// (framePoller): thousands of clients share the host's two cores with the server they
// measure, and a goroutine per client woken for every frame cost them about three times
// the server's CPU per frame (a profile of the bench process at 10,000 watchers). The
// probes, which keep whole maps, stay gorilla clients.

// rawClient is one frame-counting client: its socket and the frames not yet whole.
type rawClient struct {
	nc      net.Conn
	fd      int
	pending []byte // bytes of the next frame(s), not yet whole
	message []byte // a fragmented message's payload so far
	onText  func(c *rawClient, payload []byte)
	ready   chan struct{} // closed by onText (via markReady) when the client is subscribed
	once    sync.Once
	lost    atomic.Bool // the connection ended before the bench closed it
	closed  atomic.Bool // closed by the bench
	wmu     sync.Mutex
}

// dialRaw opens a websocket to wsURL (with subprotocol, if any) and returns the client
// with what the server sent after its handshake response.
func dialRaw(ctx context.Context, wsURL, subprotocol string) (*rawClient, []byte, error) {
	u, err := url.Parse(wsURL)
	if err != nil {
		return nil, nil, err
	}
	d := net.Dialer{Timeout: 30 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, nil, err
	}
	var key [16]byte
	_, _ = rand.Read(key[:])
	req := "GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + base64.StdEncoding.EncodeToString(key[:]) + "\r\n"
	if subprotocol != "" {
		req += "Sec-WebSocket-Protocol: " + subprotocol + "\r\n"
	}
	_ = nc.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := nc.Write([]byte(req + "\r\n")); err != nil {
		nc.Close()
		return nil, nil, err
	}
	br := bufio.NewReaderSize(nc, 4096)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		nc.Close()
		return nil, nil, fmt.Errorf("websocket handshake: %s", resp.Status)
	}
	_ = nc.SetDeadline(time.Time{})
	rest, _ := br.Peek(br.Buffered())
	return &rawClient{nc: nc, ready: make(chan struct{})}, append([]byte(nil), rest...), nil
}

// send writes a text message (a client's frames are masked: with a zero key, which RFC
// 6455 allows and which leaves the payload as it is).
func (c *rawClient) send(payload string) error {
	return c.write(0x1, []byte(payload))
}

func (c *rawClient) write(opcode byte, payload []byte) error {
	f := make([]byte, 0, len(payload)+14)
	f = append(f, 0x80|opcode)
	switch n := len(payload); {
	case n < 126:
		f = append(f, 0x80|byte(n))
	case n <= 0xffff:
		f = binary.BigEndian.AppendUint16(append(f, 0x80|126), uint16(n))
	default:
		f = binary.BigEndian.AppendUint64(append(f, 0x80|127), uint64(n))
	}
	f = append(append(f, 0, 0, 0, 0), payload...)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := c.nc.Write(f)
	return err
}

// markReady tells the dialer the client is subscribed.
func (c *rawClient) markReady() { c.once.Do(func() { close(c.ready) }) }

// take parses what was read: each whole message goes to onText (pings are answered,
// a close ends the client); false when the connection is to end. b is parsed where it
// is when nothing waits before it: only the part of a frame left over is copied.
func (c *rawClient) take(b []byte) bool {
	p := b
	if len(c.pending) > 0 {
		c.pending = append(c.pending, b...)
		p = c.pending
	}
	for len(p) >= 2 {
		fin, opcode, n, head := p[0]&0x80 != 0, p[0]&0x0f, int(p[1]&0x7f), 2
		switch n {
		case 126:
			if len(p) < 4 {
				return c.keep(p)
			}
			n, head = int(binary.BigEndian.Uint16(p[2:])), 4
		case 127:
			if len(p) < 10 {
				return c.keep(p)
			}
			n, head = int(binary.BigEndian.Uint64(p[2:])), 10
		}
		if len(p) < head+n {
			break
		}
		payload := p[head : head+n]
		switch opcode {
		case 0x0, 0x1: // continuation, text
			if !fin || len(c.message) > 0 {
				c.message = append(c.message, payload...)
				if fin {
					c.onText(c, c.message)
					c.message = c.message[:0]
				}
			} else {
				c.onText(c, payload)
			}
		case 0x8: // close
			return false
		case 0x9: // ping
			_ = c.write(0xA, payload)
		}
		p = p[head+n:]
	}
	return c.keep(p)
}

// keep keeps the start of a frame not yet whole for the next read (an idle client keeps
// no buffer).
func (c *rawClient) keep(p []byte) bool {
	if len(p) == 0 {
		c.pending = nil
		return true
	}
	c.pending = append(c.pending[:0:0], p...)
	return true
}

// end closes the client; lost when the bench did not close it first.
func (c *rawClient) end() {
	if !c.closed.Load() {
		c.lost.Store(true)
	}
	c.markReady() // a dialer waiting for it learns it is lost
	c.nc.Close()
}

// Close closes the client (the bench is done with it).
func (c *rawClient) Close() {
	c.closed.Store(true)
	c.nc.Close()
}

// rawClients reads every frame-counting client of a run.
type rawClients struct {
	once sync.Once
	p    *framePoller
	err  error
}

// hold stops the clients' reading until release: what the server sends them meanwhile
// waits in their sockets' receive queues (a few frames each, far below a queue's size, so
// the server writes as it would to clients reading at once). The counting clients stand
// for thousands of phones elsewhere; during a burst their reading would take a core of
// the host from the server, MySQL and Redis they measure. The bench holds them while it
// measures a burst and releases them once its last request is answered.
func (r *rawClients) hold() {
	if r.p != nil {
		r.p.gate.hold()
	}
}

// release has the clients read again, everything that came while they were held first.
func (r *rawClients) release() {
	if r.p != nil {
		r.p.gate.release()
	}
}

// readGate holds a poller's reading while held.
type readGate struct {
	mu   sync.Mutex
	held chan struct{} // closed on release; nil while not held
}

func (g *readGate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held == nil {
		g.held = make(chan struct{})
	}
}

func (g *readGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held != nil {
		close(g.held)
		g.held = nil
	}
}

// wait returns once the gate is not held.
func (g *readGate) wait() {
	g.mu.Lock()
	held := g.held
	g.mu.Unlock()
	if held != nil {
		<-held
	}
}

// start registers a dialed client, with what came after its handshake, and has it read
// from then on.
func (r *rawClients) start(c *rawClient, first []byte) error {
	r.once.Do(func() { r.p, r.err = newFramePoller() })
	if r.err != nil {
		return r.err
	}
	if len(first) > 0 && !c.take(first) {
		c.end()
		return errors.New("websocket closed at once")
	}
	return r.p.add(c)
}

// Close stops the reading (the clients are closed by their owners).
func (r *rawClients) Close() {
	if r.p != nil {
		r.p.stop()
	}
}

// waitReady waits until the client is subscribed (or lost, or ctx ends).
func (c *rawClient) waitReady(ctx context.Context) error {
	t := time.NewTimer(60 * time.Second)
	defer t.Stop()
	select {
	case <-c.ready:
		if c.lost.Load() {
			return errors.New("connection lost while subscribing")
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return errors.New("not subscribed within 60s")
	}
}

// textHead is the part of a message a counter looks at: where the message type, the
// id and a seat-map event's version are.
func textHead(b []byte) string {
	return string(b[:min(len(b), counterHead)])
}

// hasAny reports whether s contains any of subs.
func hasAny(s string, subs ...string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}
