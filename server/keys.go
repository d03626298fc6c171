package server

import (
	"strconv"
	"strings"

	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/reply"
	"github.com/fenced/fenced/resp"
)

// Key commands (SPEC section 4) run in the state machine: writes as one
// OpExec entry holding the command, reads against the leader's state after
// a linearizable read check. Wall-clock times (SET EXAT/PXAT, PEXPIREAT)
// become cluster times here, on the node that proposes, so no replica ever
// reads a wall clock.

func (s *Server) execWrite(c *resp.Conn, args [][]byte) resp.Value {
	strs := make([]string, len(args))
	for i, a := range args {
		strs[i] = string(a)
	}
	strs, bad := s.wallToCluster(strs)
	if bad.Kind != reply.Invalid {
		return toRESP(bad)
	}
	return s.proposeAhead(c, lockstate.Entry{Op: lockstate.OpExec, Args: strs}, func(res lockstate.Result) resp.Value {
		if res.Err != nil {
			return errorReply(res.Err)
		}
		return toRESP(res.Reply)
	})
}

func (s *Server) execRead(c *resp.Conn, args [][]byte) resp.Value {
	strs := make([]string, len(args))
	for i, a := range args {
		strs[i] = string(a)
	}
	return s.read(c.Context(), func(st *lockstate.State, now int64) resp.Value {
		return toRESP(st.Exec(strs, now))
	})
}

// wallToCluster rewrites SET ... EXAT|PXAT t into PX d and PEXPIREAT k t
// into cluster time, from this node's wall clock.
func (s *Server) wallToCluster(args []string) ([]string, reply.Value) {
	wall := s.wallNow().UnixMilli()
	cluster := s.clock.Now()
	switch strings.ToLower(args[0]) {
	case "set":
		for i := 3; i+1 < len(args); i++ {
			opt := strings.ToLower(args[i])
			if opt != "exat" && opt != "pxat" {
				continue
			}
			at, err := strconv.ParseInt(args[i+1], 10, 64)
			if err != nil || at <= 0 {
				return nil, reply.Err("ERR invalid expire time in 'set' command")
			}
			if opt == "exat" {
				at *= 1000
			}
			d := max(at-wall, 1)
			args[i], args[i+1] = "PX", strconv.FormatInt(d, 10)
			i++
		}
	case "pexpireat", "expireat":
		if len(args) >= 3 {
			at, err := strconv.ParseInt(args[2], 10, 64)
			if err != nil {
				return nil, reply.Err("ERR value is not an integer or out of range")
			}
			if strings.ToLower(args[0]) == "expireat" {
				at *= 1000
			}
			args[0], args[2] = "PEXPIREAT", strconv.FormatInt(cluster+(at-wall), 10)
		}
	}
	return args, reply.Value{}
}
