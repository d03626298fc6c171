//go:build !unix || aix

package resp

import "net"

// inputPending does not peek on this platform: the idle timeout goes by the
// last command read or answered.
func inputPending(nc net.Conn) bool { return false }
