package wstransport

import (
	"net"
	"syscall"
	"unsafe"

	"github.com/gorilla/websocket"
)

// writeNow writes the batch's buffers to the socket in one writev(2) without waiting:
// it returns errWouldBlock, with what was written, when the socket took only part of it
// (or nothing).
func (b *batch) writeNow(raw syscall.RawConn) (int, error) {
	b.iov = b.iov[:0]
	for _, s := range b.bufs {
		b.iov = append(b.iov, syscall.Iovec{Base: &s[0], Len: uint64(len(s))})
	}
	if b.call == nil {
		b.call = b.writev
	}
	b.written, b.errno = 0, nil
	if err := raw.Write(b.call); err != nil {
		return 0, err
	}
	clear(b.iov) // the iovecs point into the messages: let them go
	switch {
	case b.errno == syscall.EAGAIN:
		return b.written, errWouldBlock
	case b.errno != nil:
		return b.written, b.errno
	case b.written < b.total:
		return b.written, errWouldBlock
	}
	return b.written, nil
}

// writev makes the system call once and reports it done whatever it returned (the
// runtime would otherwise wait for the socket).
func (b *batch) writev(fd uintptr) bool {
	for {
		n, _, e := syscall.Syscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&b.iov[0])), uintptr(len(b.iov)))
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			b.errno = e
			return true
		}
		b.written = int(n)
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
