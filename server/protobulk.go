package server

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/resp"
)

// proto-max-bulk-len: the largest argument a client connection reads
// (Redis's setting, its units and texts), from --proto-max-bulk-len or
// CONFIG SET. fenced's default stays resp's 512 KiB, not Redis's 512 MiB:
// every argument of a write is in a Raft entry that every node stores,
// sends and applies, and a string value becomes one record of the state
// that --maxmemory counts and a snapshot must carry. The range is fenced's
// own, in Redis's words: no lower than the default, so no setting can
// leave clients unable to send the CONFIG SET that undoes it (Redis's
// floor of 1mb is there for the same reason), and no higher than
// lockstate.MaxRecord, the largest value a key may hold, so that every
// record a SET makes is one a snapshot carries.
const (
	ProtoMaxBulkMin = 512 << 10
	ProtoMaxBulkMax = lockstate.MaxRecord
)

var errNotMemory = errors.New("argument must be a memory value")

// parseProtoMaxBulk reads a proto-max-bulk-len value, with Redis's error
// texts (the range is fenced's).
func parseProtoMaxBulk(v string) (int, error) {
	n, err := parseMemory(strings.TrimSpace(v))
	if err != nil {
		return 0, errNotMemory
	}
	if n < ProtoMaxBulkMin || n > ProtoMaxBulkMax {
		return 0, fmt.Errorf("argument must be between %d and %d inclusive", ProtoMaxBulkMin, ProtoMaxBulkMax)
	}
	return int(n), nil
}

// protoBulkFlag is --proto-max-bulk-len.
type protoBulkFlag struct{ dst *int }

func (f protoBulkFlag) String() string {
	if f.dst == nil {
		return "0"
	}
	return strconv.Itoa(*f.dst)
}

func (f protoBulkFlag) Set(v string) error {
	n, err := parseProtoMaxBulk(v)
	if err != nil {
		return err
	}
	*f.dst = n
	return nil
}

// fullLimits are the reader limits of an authenticated connection (or of
// every connection without a password): the configured ones, with
// proto-max-bulk-len as it is now.
func (s *Server) fullLimits() resp.Limits {
	l := s.cfg.Limits
	if n := s.protoMaxBulk.Load(); n > 0 {
		l.MaxBulk = int(n)
	}
	return l
}

// setFullLimits gives c the full limits (full) or the pre-AUTH ones, under
// limitsMu, so that a CONFIG SET proto-max-bulk-len running meanwhile never
// leaves c with the old value.
func (s *Server) setFullLimits(c *resp.Conn, full bool) {
	s.limitsMu.Lock()
	defer s.limitsMu.Unlock()
	stateOf(c).fullLimits = full
	if full {
		c.SetLimits(s.fullLimits())
	} else {
		c.SetLimits(s.preAuthLimits())
	}
}

// setProtoMaxBulk applies CONFIG SET proto-max-bulk-len: to the
// connections to come, and to the open ones that read with the full
// limits, from their next command on. A connection still before AUTH keeps
// its smaller limits, which depend on it only through the minimum.
func (s *Server) setProtoMaxBulk(n int) {
	s.limitsMu.Lock()
	defer s.limitsMu.Unlock()
	s.protoMaxBulk.Store(int64(n))
	s.rs.SetLimits(s.connLimits())
	for _, c := range s.rs.Conns() {
		if st, ok := c.State().(*connState); ok && st.fullLimits || !s.auth.required() {
			c.SetLimits(s.fullLimits())
		}
	}
}
