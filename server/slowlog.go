package server

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/resp"
)

// The slow log, as Redis keeps it: the commands that took longer than
// slowlog-log-slower-than µs (negative: none; 0: all), the newest
// slowlog-max-len of them, for SLOWLOG GET|LEN|RESET. The time is what
// ServeRESP spent on the command: for a write run ahead, until it was
// proposed. Commands that wait (FLOCK, BLPOP) are not logged, as Redis logs
// no time a command spends blocked, and nor are the commands whose
// arguments carry passwords (AUTH, HELLO, ACL), which Redis skips too, nor
// what other nodes forward.
type slowlog struct {
	slower atomic.Int64 // µs
	maxLen atomic.Int64

	mu      sync.Mutex
	nextID  int64
	entries []slowEntry // oldest first
}

type slowEntry struct {
	id   int64
	at   time.Time
	usec int64
	args []string
	addr string
	name string
}

// Redis's defaults and its caps on what an entry keeps of a command.
const (
	defaultSlowerThan = 10000
	defaultSlowlogLen = 128
	slowlogMaxArgs    = 32
	slowlogMaxArgLen  = 128
)

func newSlowlog() *slowlog {
	l := &slowlog{}
	l.slower.Store(defaultSlowerThan)
	l.maxLen.Store(defaultSlowlogLen)
	return l
}

// skipsSlowlog names the commands never logged: those that wait, those
// whose arguments carry passwords, and the forwarding between nodes (an
// encoded entry may be an ACL SETUSER with password hashes).
func skipsSlowlog(name string) bool {
	switch name {
	case "auth", "hello", "acl", "flock", "blpop", "blmove", "brpoplpush", "raft.propose", "raft.link", "raft.user":
		return true
	}
	return false
}

// record logs a command that took d, if that is slow.
func (l *slowlog) record(c *resp.Conn, args [][]byte, d time.Duration) {
	limit := l.slower.Load()
	if limit < 0 || d.Microseconds() < limit {
		return
	}
	e := slowEntry{at: time.Now(), usec: d.Microseconds()}
	if c != nil {
		e.addr, e.name = c.RemoteAddr(), c.Name()
	}
	for i, a := range args {
		if i == slowlogMaxArgs-1 && len(args) > slowlogMaxArgs {
			e.args = append(e.args, fmt.Sprintf("... (%d more arguments)", len(args)-i))
			break
		}
		if len(a) > slowlogMaxArgLen {
			e.args = append(e.args, fmt.Sprintf("%s... (%d more bytes)", a[:slowlogMaxArgLen], len(a)-slowlogMaxArgLen))
			continue
		}
		e.args = append(e.args, string(a))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e.id = l.nextID
	l.nextID++
	l.entries = append(l.entries, e)
	l.trim()
}

// trim drops the oldest entries past maxLen. The caller holds mu.
func (l *slowlog) trim() {
	if over := len(l.entries) - int(max(l.maxLen.Load(), 0)); over > 0 {
		l.entries = append(l.entries[:0], l.entries[over:]...)
	}
}

func (s *Server) slowlogCmd(_ *resp.Conn, args [][]byte) resp.Value {
	l := s.slowlog
	sub := strings.ToUpper(string(args[1]))
	switch {
	case sub == "GET" && len(args) <= 3:
		count := 10
		if len(args) == 3 {
			n, err := strconv.Atoi(string(args[2]))
			if err != nil || n < -1 {
				return resp.Error("ERR count should be greater than or equal to -1")
			}
			count = n
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if count == -1 || count > len(l.entries) {
			count = len(l.entries)
		}
		out := make([]resp.Value, 0, count)
		for i := len(l.entries) - 1; i >= len(l.entries)-count; i-- { // newest first
			e := l.entries[i]
			a := make([]resp.Value, len(e.args))
			for j, x := range e.args {
				a[j] = resp.BulkString(x)
			}
			out = append(out, resp.Array(resp.Int(e.id), resp.Int(e.at.Unix()), resp.Int(e.usec), resp.Array(a...),
				resp.BulkString(e.addr), resp.BulkString(e.name)))
		}
		return resp.Array(out...)
	case sub == "LEN" && len(args) == 2:
		l.mu.Lock()
		defer l.mu.Unlock()
		return resp.Int(int64(len(l.entries)))
	case sub == "RESET" && len(args) == 2:
		l.mu.Lock()
		l.entries = nil
		l.mu.Unlock()
		return resp.SimpleString("OK")
	case sub == "HELP" && len(args) == 2:
		return helpReply(
			"SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"GET [<count>]", "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
			"    Entries are made of: id, timestamp, time in microseconds, arguments array, client IP and port, client name",
			"LEN", "    Return the length of the slowlog.",
			"RESET", "    Reset the slowlog.",
			"HELP", "    Print this help.",
		)
	case sub == "GET" || sub == "LEN" || sub == "RESET" || sub == "HELP":
		return resp.Error(fmt.Sprintf("ERR wrong number of arguments for 'slowlog|%s' command", strings.ToLower(sub)))
	}
	return syntaxError("unknown subcommand '%s'. Try SLOWLOG HELP.", commands.Clip(args[1]))
}
