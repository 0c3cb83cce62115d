package wstransport

import (
	"net"
	"syscall"
	"unsafe"

	"github.com/gorilla/websocket"
)

// sysWrite is writeNow's system call: its arguments and results, and the function that
// makes it, bound once so that a write allocates nothing.
type sysWrite struct {
	iov     []syscall.Iovec
	written int
	errno   error
	call    func(fd uintptr) bool
}

// writeNow writes the batch's buffers to the socket in one writev(2) without waiting:
// it returns errWouldBlock, with what was written, when the socket took only part of it
// (or nothing).
func (b *batch) writeNow(raw syscall.RawConn) (int, error) {
	w := &b.sys
	w.iov = w.iov[:0]
	for _, s := range b.bufs {
		w.iov = append(w.iov, syscall.Iovec{Base: &s[0], Len: uint64(len(s))})
	}
	if w.call == nil {
		w.call = w.writev
	}
	w.written, w.errno = 0, nil
	if err := raw.Write(w.call); err != nil {
		return 0, err
	}
	clear(w.iov) // the iovecs point into the messages: let them go
	switch {
	case w.errno == syscall.EAGAIN:
		return w.written, errWouldBlock
	case w.errno != nil:
		return w.written, w.errno
	case w.written < b.total:
		return w.written, errWouldBlock
	}
	return w.written, nil
}

// writev makes the system call once and reports it done whatever it returned (the
// runtime would otherwise wait for the socket).
func (w *sysWrite) writev(fd uintptr) bool {
	for {
		n, _, e := syscall.Syscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&w.iov[0])), uintptr(len(w.iov)))
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			w.errno = e
			return true
		}
		w.written = int(n)
		return true
	}
}

// rawConn is the socket of a connection written here: a TCP connection whose messages
// are not compressed; nil for any other (then gorilla writes it).
func rawConn(ws *websocket.Conn, compressed bool) syscall.RawConn {
	tc, ok := ws.NetConn().(*net.TCPConn)
	if !ok || compressed {
		return nil
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}
