package wstransport

import (
	"errors"
	"sync"
	"syscall"
)

// poller watches the sockets of the registry's idle connections with one epoll instance
// (read.go says why). Each socket is watched for one event at a time (EPOLLONESHOT): the
// goroutine that reads it watches it again when it is done, so no two goroutines ever
// read one connection. Events name a connection by a number of its own, never by its
// descriptor, which the kernel reuses once the connection is closed.
type poller struct {
	epfd int
	wake int // an eventfd: a write to it stops run (one descriptor: an instance at its open-file limit has few to spare)

	mu    sync.Mutex
	conns map[uint64]*conn
	next  uint64
}

// wakeToken names the eventfd's events; connections are numbered from 1.
const wakeToken = 0

const watched = syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT

// newPoller returns a poller, or nil when epoll is not available (connections are then
// read by read loops).
func newPoller() *poller {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil
	}
	p := &poller{epfd: epfd, conns: map[uint64]*conn{}}
	wake, _, errno := syscall.Syscall(syscall.SYS_EVENTFD2, 0, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errno != 0 {
		syscall.Close(epfd)
		return nil
	}
	p.wake = int(wake)
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN}
	setToken(&ev, wakeToken)
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, p.wake, &ev); err != nil {
		p.closeFDs()
		return nil
	}
	return p
}

func setToken(ev *syscall.EpollEvent, token uint64) {
	ev.Fd, ev.Pad = int32(uint32(token)), int32(uint32(token>>32))
}

func tokenOf(ev *syscall.EpollEvent) uint64 {
	return uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
}

// add watches a new connection's socket; its reading then starts on its first event.
func (p *poller) add(c *conn) error {
	if p == nil || c.raw == nil {
		return errors.New("wstransport: not pollable")
	}
	var fd int
	if err := c.raw.Control(func(s uintptr) { fd = int(s) }); err != nil {
		return err
	}
	p.mu.Lock()
	p.next++
	token := p.next
	p.conns[token] = c
	p.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fd, c.token, c.polled = fd, token, true
	ev := syscall.EpollEvent{Events: watched}
	setToken(&ev, token)
	if err := syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		c.polled = false
		p.mu.Lock()
		delete(p.conns, token)
		p.mu.Unlock()
		return err
	}
	return nil
}

// watch watches the connection's socket for its next event (the first time, or again
// after a read). c.mu is held, or the connection is not yet shared.
func (p *poller) watch(c *conn) error {
	ev := syscall.EpollEvent{Events: watched}
	setToken(&ev, c.token)
	return syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_MOD, c.fd, &ev)
}

// forget drops a connection that ended (its socket, closed, left the epoll set with it).
func (p *poller) forget(c *conn) {
	if p == nil {
		return
	}
	c.mu.Lock()
	token := c.token
	c.mu.Unlock()
	p.mu.Lock()
	delete(p.conns, token)
	p.mu.Unlock()
}

// run waits for events and starts a read for each until stop is called.
func (p *poller) run() {
	events := make([]syscall.EpollEvent, 256)
	for {
		n, err := syscall.EpollWait(p.epfd, events, -1)
		if err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			return
		}
		for i := range events[:n] {
			token := tokenOf(&events[i])
			if token == wakeToken {
				p.closeFDs()
				return
			}
			p.mu.Lock()
			c := p.conns[token]
			p.mu.Unlock()
			if c != nil && c.startReading() {
				go c.readReady()
			}
		}
	}
}

// stop ends run, which closes the poller.
func (p *poller) stop() {
	_, _ = syscall.Write(p.wake, []byte{1, 0, 0, 0, 0, 0, 0, 0}) // an eventfd counts 8-byte integers
}

func (p *poller) closeFDs() {
	syscall.Close(p.wake)
	syscall.Close(p.epfd)
}
