//go:build unix && !aix

package resp

import (
	"net"
	"syscall"
)

// inputPending reports whether the client has sent bytes that wait in the
// socket, unread: a command a starved server has not yet taken is not
// idleness (Redis reads its sockets before its cron looks for idle
// clients). It peeks without blocking through Control, which, unlike
// RawConn.Read, does not wait for the connection's reader, parked in Read.
// A TLS connection is peeked at its socket: any record counts.
func inputPending(nc net.Conn) bool {
	if u, ok := nc.(interface{ NetConn() net.Conn }); ok {
		nc = u.NetConn()
	}
	rc := rawConn(nc)
	if rc == nil {
		return false
	}
	var n int
	var err error
	var buf [1]byte
	if rc.Control(func(fd uintptr) {
		n, _, err = syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	}) != nil {
		return false
	}
	return err == nil && n > 0
}
