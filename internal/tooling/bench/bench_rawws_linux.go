package bench

import (
	"errors"
	"net"
	"sync"
	"syscall"
)

// framePoller reads every frame-counting client with one epoll instance on one
// goroutine: a readable socket is read (one system call for whatever frames it holds)
// and parsed in place.
type framePoller struct {
	epfd int
	wake [2]int
	mu   sync.Mutex
	byFD map[int32]*rawClient
	gate readGate
	done chan struct{}
}

func newFramePoller() (*framePoller, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	p := &framePoller{epfd: epfd, byFD: map[int32]*rawClient{}, done: make(chan struct{})}
	if err := syscall.Pipe2(p.wake[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		syscall.Close(epfd)
		return nil, err
	}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, p.wake[0], &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: -1}); err != nil {
		return nil, err
	}
	go p.run()
	return p, nil
}

// add reads c from now on. Its descriptor stays open until the client is closed, which
// ends its reading (a closed descriptor leaves the epoll set).
func (p *framePoller) add(c *rawClient) error {
	tc, ok := c.nc.(*net.TCPConn)
	if !ok {
		return errors.New("not a TCP connection")
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	if err := rc.Control(func(fd uintptr) { c.fd = int(fd) }); err != nil {
		return err
	}
	p.mu.Lock()
	p.byFD[int32(c.fd)] = c
	p.mu.Unlock()
	return syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_ADD, c.fd, &syscall.EpollEvent{
		Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(c.fd)})
}

func (p *framePoller) run() {
	defer close(p.done)
	events := make([]syscall.EpollEvent, 512)
	buf := make([]byte, 256<<10)
	for {
		p.gate.wait()
		n, err := syscall.EpollWait(p.epfd, events, -1)
		if err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			return
		}
		for _, ev := range events[:n] {
			if ev.Fd == -1 {
				syscall.Close(p.wake[0])
				syscall.Close(p.wake[1])
				syscall.Close(p.epfd)
				return
			}
			p.mu.Lock()
			c := p.byFD[ev.Fd]
			p.mu.Unlock()
			if c == nil {
				continue
			}
			k, err := syscall.Read(c.fd, buf)
			if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil || k <= 0 || !c.take(buf[:k]) {
				p.drop(c)
			}
		}
	}
}

// drop stops reading a client whose connection ended.
func (p *framePoller) drop(c *rawClient) {
	_ = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_DEL, c.fd, nil)
	p.mu.Lock()
	if p.byFD[int32(c.fd)] == c {
		delete(p.byFD, int32(c.fd))
	}
	p.mu.Unlock()
	c.end()
}

func (p *framePoller) stop() {
	p.gate.release()
	_, _ = syscall.Write(p.wake[1], []byte{1})
	<-p.done
}
