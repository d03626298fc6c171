//go:build unix

package resp

import (
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
)

// probe checks, without blocking, that the server has neither closed the
// connection nor sent bytes that no command asked for, so that a command is
// not written to a connection already known to be dead: its failure would
// then be reported as ErrReplyLost, an unknown outcome, instead of
// ErrNotSent. Connections that are not sockets, such as TLS, are not
// checked.
func probe(nc net.Conn) error {
	rc := rawConn(nc)
	if rc == nil {
		return nil
	}
	var buf [1]byte
	var n int
	var rerr error
	// Go's sockets are non-blocking: the read returns EAGAIN at once when
	// there is nothing to read.
	if err := rc.Read(func(fd uintptr) bool {
		n, rerr = syscall.Read(int(fd), buf[:])
		return true
	}); err != nil {
		return nil // a deadline or close: the write will report it
	}
	switch {
	case rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK || rerr == syscall.EINTR:
		return nil
	case rerr != nil:
		return os.NewSyscallError("read", rerr)
	case n == 0:
		return fmt.Errorf("resp: the server closed the connection: %w", io.EOF)
	}
	return errUnsolicited
}

// rawConn is nc's socket for system calls, nil if nc is not a socket.
func rawConn(nc net.Conn) syscall.RawConn {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}
