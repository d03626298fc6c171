package resp

import (
	"bytes"
	"errors"
)

// The cross-protocol guard. A web page can make a browser
// send an HTTP request to a loopback port, and each line of it (the body
// too) reaches a RESP server as an inline command. Redis closes a
// connection that sends "POST" or "Host:"; so does this package, and also
// one whose first command is any HTTP request line, since here GET, PUT
// and others could be command names. The reader checks each inline
// command before it is queued and queues nothing from that line on, so
// none of the request runs, however much of it arrived at once; commands
// read before it (a later "Host:" line) still run, as in Redis.

// errCrossProtocol ends the queue of a connection that sent HTTP: the
// executor closes it, without a reply, when it gets there.
var errCrossProtocol = errors.New("resp: an HTTP request on the RESP port")

// looksLikeHTTP reports whether an inline command (at least one argument)
// is a line of HTTP rather than RESP: a "POST ..." or "Host: ..." line
// wherever it comes, or, as the connection's first command, a request line
// "METHOD target HTTP/x...". A later three-word line ending in HTTP/1.1 may
// be a real command (SET / HTTP/1.1), so only the first one is judged by
// its shape.
func looksLikeHTTP(args [][]byte, first bool) bool {
	name := args[0]
	switch {
	case bytes.EqualFold(name, []byte("post")):
		return true
	case len(name) >= 5 && bytes.EqualFold(name[:5], []byte("host:")):
		return true // "Host: x", and "Host:x", valid HTTP too
	case first && len(args) == 3:
		return isMethod(name) && isHTTPVersion(args[2])
	}
	return false
}

// isMethod reports whether b can be an HTTP method: an upper-case token
// (GET, PRI, VERSION-CONTROL), as browsers and proxies send them.
func isMethod(b []byte) bool {
	if len(b) == 0 || len(b) > 32 {
		return false
	}
	for _, c := range b {
		if (c < 'A' || c > 'Z') && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

// isHTTPVersion reports whether b is an HTTP version: "HTTP/" and a digit.
func isHTTPVersion(b []byte) bool {
	return len(b) >= 6 && bytes.EqualFold(b[:5], []byte("http/")) && b[5] >= '0' && b[5] <= '9'
}
