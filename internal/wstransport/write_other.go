//go:build !linux

package wstransport

import (
	"syscall"

	"github.com/gorilla/websocket"
)

// sysWrite is Linux's (write_linux.go).
type sysWrite struct{}

// writeNow is not built off Linux: rawConn gives no raw connection there, so every
// connection is written through gorilla (flushBlocking).
func (b *batch) writeNow(syscall.RawConn) (int, error) { panic("wstransport: writeNow off Linux") }

// rawConn is nil off Linux: every connection is written through gorilla.
func rawConn(*websocket.Conn, bool) syscall.RawConn { return nil }
