package server

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/internal/glob"
	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/resp"
)

// CONFIG GET|SET|RESETSTAT|HELP: this node's settings, under Redis's names
// where Redis has the setting, so that the tools that ask (redis_exporter,
// redis-cli, client libraries checking maxmemory or appendonly) get true
// answers. Every setting is this node's own: CONFIG SET maxmemory changes
// what this node stamps into the entries it proposes while it leads (set
// it on every node). The rest are fixed for the process: CONFIG SET
// answers Redis's immutable-config error for them.

// configParam is one setting: its value, and how to change it at run time
// (nil: immutable): set checks v and returns what applies it, so that
// CONFIG SET checks every pair before it changes anything, as Redis 7 does.
type configParam struct {
	get func(s *Server) string
	set func(s *Server, v string) (apply func(), err error)
}

var errPolicy = errors.New("fenced never evicts: the only policy is noeviction")

func configParams() map[string]configParam {
	fixed := func(v string) configParam { return configParam{get: func(*Server) string { return v }} }
	port := func(addr string) string {
		_, p, err := net.SplitHostPort(addr)
		if err != nil {
			return "0"
		}
		return p
	}
	return map[string]configParam{
		"maxmemory": {
			get: func(s *Server) string { return strconv.FormatInt(s.node.MaxMemory(), 10) },
			set: func(s *Server, v string) (func(), error) {
				n, err := parseMemory(v)
				return func() {
					s.node.SetMaxMemory(n)
					limitHeap(n)
				}, err
			},
		},
		"maxmemory-policy": {
			get: func(*Server) string { return "noeviction" },
			set: func(_ *Server, v string) (func(), error) {
				if !strings.EqualFold(v, "noeviction") {
					return nil, errPolicy
				}
				return func() {}, nil
			},
		},
		// Every write is in the Raft log, fsynced before it is answered:
		// what Redis calls an append-only file synced always.
		"appendonly":  fixed("yes"),
		"appendfsync": fixed("always"),
		"save":        fixed(""),
		"databases":   fixed("1"),
		// Replicated from cluster version 3 (configSet); below it, no
		// flags can be set, and it reads "" as it always did.
		"notify-keyspace-events": {get: func(s *Server) (v string) {
			s.node.Local(func(st *lockstate.State) { v = st.NotifyKeyspaceEvents() })
			return v
		}},
		"latency-monitor-threshold":  fixed("0"), // LATENCY: see latency.go
		"timeout":                    {get: func(s *Server) string { return strconv.FormatInt(int64(s.cfg.IdleTimeout.Seconds()), 10) }},
		"maxclients":                 {get: func(s *Server) string { return strconv.Itoa(s.cfg.MaxConns) }},
		"client-output-buffer-limit": {get: func(s *Server) string { return outputLimitsFlag{&s.cfg.OutputLimits}.String() }},
		"port":                       {get: func(s *Server) string { return port(s.cfg.Listen) }},
		"tls-port":                   {get: func(s *Server) string { return port(s.cfg.TLS.Listen) }},
		"bind": {get: func(s *Server) string {
			h, _, _ := net.SplitHostPort(s.cfg.Listen)
			return h
		}},
		// The password is never kept, only its hash: Redis would show it.
		"requirepass": {get: func(s *Server) string {
			if s.cfg.RequirePass == nil {
				return ""
			}
			return "<hidden>"
		}},
		"slowlog-log-slower-than": {
			get: func(s *Server) string { return strconv.FormatInt(s.slowlog.slower.Load(), 10) },
			set: func(s *Server, v string) (func(), error) {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return nil, errors.New("argument couldn't be parsed into an integer")
				}
				return func() { s.slowlog.slower.Store(n) }, nil
			},
		},
		"slowlog-max-len": {
			get: func(s *Server) string { return strconv.FormatInt(s.slowlog.maxLen.Load(), 10) },
			set: func(s *Server, v string) (func(), error) {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil || n < 0 {
					return nil, errors.New("argument must be a non-negative integer")
				}
				return func() {
					s.slowlog.maxLen.Store(n)
					s.slowlog.mu.Lock()
					s.slowlog.trim()
					s.slowlog.mu.Unlock()
				}, nil
			},
		},
		// CLIENT TRACKING's table of this node (tracking.go).
		"tracking-table-max-keys": {
			get: func(s *Server) string { return strconv.FormatInt(s.tracking.maxKeys.Load(), 10) },
			set: func(s *Server, v string) (func(), error) {
				n, err := strconv.ParseInt(v, 10, 64)
				switch {
				case err != nil && !errors.Is(err, strconv.ErrRange) || len(v) > 1 && (v[0] == '+' || v[0] == '0'):
					return nil, errors.New("argument couldn't be parsed into an integer")
				case err != nil || n < 0:
					return nil, errors.New("argument must be between 0 and 9223372036854775807 inclusive")
				}
				return func() { s.tracking.setMaxKeys(n) }, nil
			},
		},
		"dir":           {get: func(s *Server) string { return s.cfg.Data }},
		"write-timeout": {get: func(s *Server) string { return s.cfg.WriteTimeout.String() }},
		"disk-reserve":  {get: func(s *Server) string { return strconv.FormatUint(s.cfg.DiskReserve, 10) }},
		// This node's clients, from their next command (protobulk.go).
		"proto-max-bulk-len": {
			get: func(s *Server) string { return strconv.Itoa(s.fullLimits().MaxBulk) },
			set: func(s *Server, v string) (func(), error) {
				n, err := parseProtoMaxBulk(v)
				return func() { s.setProtoMaxBulk(n) }, err
			},
		},
	}
}

func (s *Server) configCmd(c *resp.Conn, args [][]byte) resp.Value {
	sub := strings.ToUpper(string(args[1]))
	switch {
	case sub == "GET" && len(args) >= 3:
		return s.configGet(args[2:])
	case sub == "SET" && len(args) >= 4 && len(args)%2 == 0:
		return s.configSet(c, args[2:])
	case sub == "RESETSTAT" && len(args) == 2:
		s.stats.reset()
		return resp.SimpleString("OK")
	case sub == "REWRITE" && len(args) == 2:
		return resp.Error("ERR CONFIG REWRITE is not supported: fenced never rewrites its --config file")
	case sub == "HELP" && len(args) == 2:
		return helpReply(
			"CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"GET <pattern> [<pattern> ...]", "    Return the settings whose names match the glob patterns, with their values.",
			"SET <name> <value> [<name> <value> ...]", "    Set settings: maxmemory (this node's, stamped into the entries it proposes as leader), maxmemory-policy (noeviction only), proto-max-bulk-len (this node's clients, from their next command), slowlog-log-slower-than, slowlog-max-len, notify-keyspace-events (the cluster's, replicated), tracking-table-max-keys.",
			"RESETSTAT", "    Reset the statistics INFO reports.",
			"HELP", "    Print this help.",
		)
	case sub == "GET" || sub == "SET" || sub == "RESETSTAT" || sub == "REWRITE" || sub == "HELP":
		return resp.Error(fmt.Sprintf("ERR wrong number of arguments for 'config|%s' command", strings.ToLower(sub)))
	}
	return syntaxError("unknown subcommand '%s'. Try CONFIG HELP.", commands.Clip(args[1]))
}

func (s *Server) configGet(patterns [][]byte) resp.Value {
	params := configParams()
	names := make([]string, 0, len(params))
	for name := range params {
		for _, p := range patterns {
			if glob.Match(strings.ToLower(string(p)), name) {
				names = append(names, name)
				break
			}
		}
	}
	slices.Sort(names)
	kvs := make([]resp.Value, 0, 2*len(names))
	for _, name := range names {
		kvs = append(kvs, resp.BulkString(name), resp.BulkString(params[name].get(s)))
	}
	return resp.Map(kvs...)
}

// configSet checks every pair before it changes anything, as Redis 7 does.
// notify-keyspace-events is the cluster's, from cluster version 3: it is
// proposed, and the node's own settings change only once it committed.
func (s *Server) configSet(c *resp.Conn, pairs [][]byte) resp.Value {
	params := configParams()
	var applies []func()
	notify := ""
	var setNotify bool
	for i := 0; i < len(pairs); i += 2 {
		name, value := strings.ToLower(string(pairs[i])), string(pairs[i+1])
		if name == lockstate.NotifyParam && s.clusterVersion(3) >= 3 {
			if notify, setNotify = lockstate.NotifyValue(value); !setNotify {
				return resp.Error(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - %s", name, lockstate.NotifyClassError))
			}
			continue
		}
		p, ok := params[name]
		switch {
		case !ok:
			return resp.Error(fmt.Sprintf("ERR Unknown option or number of arguments for CONFIG SET - '%s'", commands.Clip(pairs[i])))
		case p.set == nil:
			return resp.Error(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - can't set immutable config", name))
		}
		apply, err := p.set(s, value)
		if err != nil {
			return resp.Error(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - %v", name, err))
		}
		applies = append(applies, apply)
	}
	if setNotify {
		if v := s.setNotify(c, notify); v.IsError() {
			return v
		}
	}
	for _, apply := range applies {
		apply()
	}
	return resp.SimpleString("OK")
}

// setNotify commits notify-keyspace-events = v (NotifyValue's spelling) and
// waits, a second at most, until this node has applied it, so that the
// client's next CONFIG GET here reads it (a follower applies the entry a
// little after the leader answered).
func (s *Server) setNotify(c *resp.Conn, v string) resp.Value {
	e := s.execEntry(c, [][]byte{[]byte("CONFIG"), []byte("SET"), []byte(lockstate.NotifyParam), []byte(v)})
	res, err := s.submit(c.Context(), e)
	if r := answer(res, err, execReply); r.IsError() {
		return r
	}
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		var now string
		s.node.Local(func(st *lockstate.State) { now = st.NotifySetting() })
		if now == v {
			break
		}
	}
	return resp.SimpleString("OK")
}
