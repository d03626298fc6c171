// Package commands owns fenced's command table (name, arity, flags) and the
// parsing of arguments into typed requests. It decides nothing about locks
// and writes nothing to connections: the server dispatches on the table and
// turns requests into state-machine entries.
package commands

import (
	"fmt"
	"sort"
	"strings"

	"github.com/fenced/fenced/reply"
)

// Errors returned by parsing. Each is a decided "-ERR" reply; nothing was
// applied.
var (
	// ErrUnknown is returned by Check for a name not in the table.
	ErrUnknown = reply.NewErr("ERR", "unknown command")
	// ErrArity is returned when the argument count does not fit the arity.
	ErrArity = reply.NewErr("ERR", "wrong number of arguments")
	// ErrSyntax is returned for an unknown or malformed option.
	ErrSyntax = reply.NewErr("ERR", "syntax error")
	// ErrNotInteger is returned when an integer argument does not parse or
	// is out of range.
	ErrNotInteger = reply.NewErr("ERR", "value is not an integer or out of range")
)

// Flags describe how the server must run a command.
type Flags uint16

const (
	// Write commands change replicated state: they are proposed through Raft.
	Write Flags = 1 << iota
	// Read commands read replicated state: they need a linearizable read.
	Read
	// Admin commands need the admin permission.
	Admin
	// Blocking commands may wait for a later log entry; they hold up their
	// own connection only.
	Blocking
	// Conn commands touch only the connection or the local node.
	Conn
	// NoAuth commands are served to a connection that has not
	// authenticated yet, when a password is set: Redis's AUTH, HELLO, QUIT
	// and RESET. The server checks it once, in its
	// dispatcher; every other command answers -NOAUTH.
	NoAuth
	// Ahead writes are proposed without waiting for the connection's
	// earlier replies, so that pipelined writes share a commit; their
	// replies still go out in command order. See Spec.RunsAhead.
	Ahead
	// Keyspace commands are executed by the state machine from their
	// arguments alone (a read by State.Exec, a write as one OpExec entry),
	// so the server needs no handler of its own for them (some have one:
	// KEYS and SCAN read in steps, the read-only scripts are served at the
	// read path), and they are what a transaction's entry runs.
	Keyspace
	// Leader commands run on the leader as a whole: a follower forwards
	// the command, because its outcome depends on the leader's own view
	// (membership changes).
	Leader
	// Peer commands pass between nodes only: they are served on the peer
	// channel, whose connections present a certificate of the cluster's CA,
	// and refused on the client port, so no client can submit a log entry.
	Peer
	// DenyOOM commands grow the replicated state: the state machine
	// refuses them with -OOM once the state is at --maxmemory (Redis's
	// denyoom flag). Reads, deletes and releases never carry it.
	DenyOOM
	// NoMulti commands are refused inside MULTI (Redis's no-multi: SAVE,
	// SHUTDOWN), which the transaction then fails with EXECABORT.
	NoMulti
)

// Spec is one row of the command table.
type Spec struct {
	Name string
	// Arity follows Redis: n > 0 is exactly n arguments including the name,
	// n < 0 is at least -n.
	Arity int
	Flags Flags
	Cats  Cats // ACL categories, derived from Flags and the command's group
	// Doc is what COMMAND DOCS answers (docs_table.go): the summary and
	// the arguments, from which Syntax renders the usage.
	Doc *Doc
	// Version is the cluster version from which the state machine runs the
	// command (0: every version). Below it the command is unknown, as it is
	// to a binary that predates it, so that replicas of both agree during a
	// rolling upgrade (lockstate/version.go).
	Version int64
}

// Syntax is the usage after the command's name, as redis-cli shows it
// from Doc: "lock session [OWNER tag] [WAIT ms] [LIMIT n] [REQ id]".
func (s *Spec) Syntax() string { return Syntax(s.Doc.Args) }

// Has reports whether s has every flag in f.
func (s *Spec) Has(f Flags) bool { return s.Flags&f == f }

// RunsAhead reports whether the command in args may be proposed ahead of
// the connection's earlier replies: an Ahead command with a fitting arity,
// except a FLOCK with WAIT, which is answered by its node's waits table
// once granted rather than when its entry commits.
func (s *Spec) RunsAhead(args [][]byte) bool {
	if !s.Has(Ahead) || !s.CheckArity(len(args)) {
		return false
	}
	if s.Name == "flock" {
		r, err := ParseFlock(args)
		return err == nil && r.Wait == NoWait
	}
	return true
}

// CheckArity reports whether n arguments (the name included) fit the arity.
func (s *Spec) CheckArity(n int) bool {
	if s.Arity >= 0 {
		return n == s.Arity
	}
	return n >= -s.Arity
}

// Table is the command table, built once by New and read-only afterwards.
type Table struct {
	byName map[string]*Spec
	sorted []*Spec
}

// New returns the table of every command fenced serves.
func New() *Table {
	type row struct {
		name  string
		arity int
		flags Flags
	}
	rows := []row{
		// Native locks and sessions.
		{"flock", -3, Write | Ahead | Blocking | DenyOOM},
		{"funlock", -3, Write | Ahead},
		{"fence", -2, Read},
		{"lock.info", 2, Read},
		{"lock.forceunlock", 3, Write | Ahead | Admin},
		{"session.open", -1, Write | Ahead | DenyOOM},
		{"session.heartbeat", 2, Write | Ahead},
		{"session.kill", 2, Write | Ahead},
		{"session.info", 2, Read},
		{"session.list", 1, Read | Admin},
		{"type", 2, Read | Keyspace},
		{"dbsize", 1, Read | Keyspace},
		// Keyspace: strings, TTLs, hashes, lists.
		{"set", -3, Write | Ahead | Keyspace | DenyOOM},
		{"get", 2, Read | Keyspace},
		{"getdel", 2, Write | Ahead | Keyspace},
		{"mget", -2, Read | Keyspace},
		{"mset", -3, Write | Ahead | Keyspace | DenyOOM},
		{"msetnx", -3, Write | Ahead | Keyspace | DenyOOM},
		{"getrange", 4, Read | Keyspace},
		{"strlen", 2, Read | Keyspace},
		{"incr", 2, Write | Ahead | Keyspace | DenyOOM},
		{"setnx", 3, Write | Ahead | Keyspace | DenyOOM},
		{"setex", 4, Write | Ahead | Keyspace | DenyOOM},
		{"psetex", 4, Write | Ahead | Keyspace | DenyOOM},
		{"getset", 3, Write | Ahead | Keyspace | DenyOOM},
		{"getex", -2, Write | Ahead | Keyspace},
		{"append", 3, Write | Ahead | Keyspace | DenyOOM},
		{"setrange", 4, Write | Ahead | Keyspace | DenyOOM},
		{"incrby", 3, Write | Ahead | Keyspace | DenyOOM},
		{"incrbyfloat", 3, Write | Ahead | Keyspace | DenyOOM},
		{"decr", 2, Write | Ahead | Keyspace | DenyOOM},
		{"decrby", 3, Write | Ahead | Keyspace | DenyOOM},
		{"del", -2, Write | Ahead | Keyspace},
		{"unlink", -2, Write | Ahead | Keyspace},
		{"exists", -2, Read | Keyspace},
		{"expire", -3, Write | Ahead | Keyspace},
		{"pexpire", -3, Write | Ahead | Keyspace},
		{"expireat", -3, Write | Ahead | Keyspace},
		{"pexpireat", -3, Write | Ahead | Keyspace},
		{"ttl", 2, Read | Keyspace},
		{"pttl", 2, Read | Keyspace},
		{"expiretime", 2, Read | Keyspace},
		{"pexpiretime", 2, Read | Keyspace},
		{"persist", 2, Write | Ahead | Keyspace},
		{"keys", 2, Read | Keyspace | Admin},
		{"scan", -2, Read | Keyspace},
		{"delex", -2, Write | Ahead | Keyspace},
		{"delifeq", 3, Write | Ahead | Keyspace},
		{"hset", -4, Write | Ahead | Keyspace | DenyOOM},
		{"hget", 3, Read | Keyspace},
		{"hincrby", 4, Write | Ahead | Keyspace | DenyOOM},
		{"hexists", 3, Read | Keyspace},
		{"hdel", -3, Write | Ahead | Keyspace},
		{"hgetall", 2, Read | Keyspace},
		{"hlen", 2, Read | Keyspace},
		// SORT (cluster version 3): lockstate/sort.go; a Write for STORE,
		// as in Redis.
		{"sort", -2, Write | Ahead | Keyspace | DenyOOM},
		{"sort_ro", -2, Read | Keyspace},
		// Sets (cluster version 3): lockstate/sets.go.
		{"sadd", -3, Write | Ahead | Keyspace | DenyOOM},
		{"srem", -3, Write | Ahead | Keyspace},
		{"spop", -2, Write | Ahead | Keyspace},
		{"smembers", 2, Read | Keyspace},
		{"sismember", 3, Read | Keyspace},
		{"smismember", -3, Read | Keyspace},
		{"scard", 2, Read | Keyspace},
		{"srandmember", -2, Read | Keyspace},
		{"lpush", -3, Write | Ahead | Keyspace | DenyOOM},
		{"rpush", -3, Write | Ahead | Keyspace | DenyOOM},
		{"lpop", -2, Write | Ahead | Keyspace},
		{"llen", 2, Read | Keyspace},
		{"lrange", 4, Read | Keyspace},
		{"blpop", -3, Write | Ahead | Keyspace | Blocking},
		// Bits, LCS, RPOP and HMSET (cluster version 3):
		// lockstate/bits.go, lcs.go, listpops.go.
		{"setbit", 4, Write | Ahead | Keyspace | DenyOOM},
		{"getbit", 3, Read | Keyspace},
		{"bitcount", -2, Read | Keyspace},
		{"bitpos", -3, Read | Keyspace},
		{"lcs", -3, Read | Keyspace},
		{"rpop", -2, Write | Ahead | Keyspace},
		{"hmset", -4, Write | Ahead | Keyspace | DenyOOM},
		// List moves (cluster version 3): lockstate/listmove.go;
		// the blocking forms wait as BLPOP does (server/blpop.go).
		{"lmove", 5, Write | Ahead | Keyspace | DenyOOM},
		{"rpoplpush", 3, Write | Ahead | Keyspace | DenyOOM},
		{"blmove", 6, Write | Ahead | Keyspace | Blocking | DenyOOM},
		{"brpoplpush", 4, Write | Ahead | Keyspace | Blocking | DenyOOM},
		// Whole keys (cluster version 3): keyspace.go.
		{"rename", 3, Write | Ahead | Keyspace},
		{"renamenx", 3, Write | Ahead | Keyspace},
		{"copy", -3, Write | Ahead | Keyspace | DenyOOM},
		{"flushall", -1, Write | Admin | Ahead | Keyspace},
		{"flushdb", -1, Write | Admin | Ahead | Keyspace},
		{"move", 3, Write | Ahead | Keyspace},
		{"swapdb", 3, Write | Ahead | Keyspace},
		{"touch", -2, Read | Keyspace},
		{"randomkey", 1, Read | Keyspace},
		{"object", -2, Read | Keyspace},
		// Scripts and pub/sub.
		{"eval", -3, Write | Ahead | Keyspace},
		{"evalsha", -3, Write | Ahead | Keyspace},
		{"script", -2, Write | Ahead | Keyspace},
		// Read-only scripts: served as reads (State.EvalRO), except an
		// EVAL_RO whose script is not cached yet, which goes through the
		// log to cache it; Keyspace, as the state machine runs them from
		// their arguments inside a transaction's entry.
		{"eval_ro", -3, Read | Keyspace},
		{"evalsha_ro", -3, Read | Keyspace},
		// Functions: FUNCTION's writes (LOAD, DELETE, FLUSH, RESTORE) go
		// through the log, its reads (LIST, DUMP, STATS) and FCALL_RO are
		// served as reads (server/functions.go).
		{"function", -2, Write | Keyspace},
		{"fcall", -3, Write | Ahead | Keyspace},
		{"fcall_ro", -3, Read | Keyspace},
		{"publish", 3, Write | Keyspace},
		{"subscribe", -2, Conn},
		{"unsubscribe", -1, Conn},
		// Transactions: the connection queues, EXEC proposes
		// the queue as one entry (server/multi.go, lockstate/tx.go).
		{"multi", 1, Conn},
		{"exec", 1, Conn},
		{"discard", 1, Conn},
		{"watch", -2, Conn},
		{"unwatch", 1, Conn},
		{"psubscribe", -2, Conn},
		{"punsubscribe", -1, Conn},
		{"pubsub", -2, Conn},
		// Cluster administration.
		{"raft.snapshot", 1, Admin | Conn},
		// Redis's persistence and shutdown commands, on this node
		// (server/persist.go): SAVE is RAFT.SNAPSHOT in Redis's words.
		{"save", 1, Admin | Conn | NoMulti},
		{"bgsave", -1, Admin | Conn},
		{"shutdown", -1, Admin | Conn | NoMulti},
		{"raft.status", 1, Admin | Conn},
		{"raft.hash", 1, Admin | Conn},
		// A Read: the leader serves it after a linearizable read's checks,
		// so it holds every acknowledged write; a follower forwards it.
		{"raft.backup", 1, Read | Admin},
		{"raft.join", 4, Write | Leader | Admin},
		{"raft.remove", 2, Write | Leader | Admin},
		{"raft.transfer", -1, Write | Leader | Admin},
		// Node to node: a follower forwards an entry to the leader over a
		// link connection, marked by RAFT.LINK so it is never forwarded on.
		{"raft.propose", 2, Write | Ahead | Admin | Peer},
		{"raft.link", 2, Admin | Conn | Peer},
		{"raft.user", 2, Admin | Conn | Peer},
		// WATCH on a follower: the leader's linearizable read of the keys.
		{"raft.watch", -2, Admin | Conn | Peer},
		{"cluster", -2, Conn},
		// Connection.
		{"ping", -1, Conn},
		{"echo", 2, Conn},
		{"auth", -2, Conn | NoAuth},
		{"hello", -1, Conn | NoAuth},
		{"select", 2, Conn},
		{"quit", -1, Conn | NoAuth},
		{"reset", 1, Conn | NoAuth},
		{"client", -2, Conn},
		{"command", -1, Conn},
		{"info", -1, Conn},
		{"time", 1, Conn},
		{"role", 1, Conn},
		{"slowlog", -2, Conn | Admin},
		{"latency", -2, Conn | Admin},
		{"config", -2, Conn | Admin},
		{"acl", -2, Conn},
	}
	docs, err := buildDocs(docRows())
	if err != nil {
		panic(err) // a mistake in docs_table.go: TestDocsTable
	}
	specs := make([]Spec, len(rows))
	t := &Table{byName: make(map[string]*Spec, len(specs))}
	for i, r := range rows {
		s := &specs[i]
		*s = Spec{Name: r.name, Arity: r.arity, Flags: r.flags, Doc: docs[r.name], Version: sinceVersion[r.name]}
		if err := categorize(s); err != nil {
			panic(err) // a row without an ACL group: TestEveryCommandHasAGroup
		}
		if s.Doc == nil {
			panic(fmt.Errorf("commands: %q has no documentation in docs_table.go", s.Name))
		}
		delete(docs, r.name)
		t.byName[s.Name] = s
		t.sorted = append(t.sorted, s)
	}
	for name := range docs {
		panic(fmt.Errorf("commands: %q is documented but not in the table", name))
	}
	sort.Slice(t.sorted, func(i, j int) bool { return t.sorted[i].Name < t.sorted[j].Name })
	return t
}

// sinceVersion names the commands a cluster runs only from a version on:
// Redis 7.0's simple string commands came with cluster version 2. A read
// is gated too, though only inside the log (a script's redis.call), where
// every replica must answer alike; served directly it needs no gate.
var sinceVersion = map[string]int64{
	"setnx": 2, "setex": 2, "psetex": 2, "getset": 2, "getex": 2, "append": 2, "setrange": 2,
	"incrby": 2, "incrbyfloat": 2, "decr": 2, "decrby": 2, "expiretime": 2, "pexpiretime": 2,
	"eval_ro": 3, "evalsha_ro": 3,
	"rename": 3, "renamenx": 3, "copy": 3, "flushall": 3, "flushdb": 3, "move": 3, "swapdb": 3,
	"touch": 3, "randomkey": 3, "object": 3,
	"multi": 3, "exec": 3, "discard": 3, "watch": 3, "unwatch": 3, "raft.watch": 3,
	"psubscribe": 3, "punsubscribe": 3, "pubsub": 3,
	"function": 3, "fcall": 3, "fcall_ro": 3,
	"lrange": 3,
	"sadd":   3, "srem": 3, "spop": 3, "smembers": 3, "sismember": 3, "smismember": 3, "scard": 3, "srandmember": 3,
	"setbit": 3, "getbit": 3, "bitcount": 3, "bitpos": 3, "lcs": 3, "rpop": 3, "hmset": 3,
	"lmove": 3, "rpoplpush": 3, "blmove": 3, "brpoplpush": 3,
}

// Lookup finds a command by name, case-insensitively.
func (t *Table) Lookup(name []byte) (*Spec, bool) {
	if s, ok := t.byName[string(name)]; ok { // clients usually send lower case
		return s, true
	}
	s, ok := t.byName[strings.ToLower(string(name))]
	return s, ok
}

// All returns every spec sorted by name.
func (t *Table) All() []*Spec { return t.sorted }

// Check finds the command named by args[0] and checks its arity: the one
// place arity is checked.
func (t *Table) Check(args [][]byte) (*Spec, error) { return t.CheckAt(args, nil) }

// CheckAt is Check where some commands may not exist yet: a command with
// a Version for which absent(spec) is true is unknown, with the very reply
// a binary without it gives (before its arity is looked at). absent is
// called for such commands only, so the common path costs nothing.
func (t *Table) CheckAt(args [][]byte, absent func(*Spec) bool) (*Spec, error) {
	s, ok := t.Lookup(args[0])
	if !ok || s.Version > 1 && absent != nil && absent(s) {
		return nil, UnknownCommand(args)
	}
	if !s.CheckArity(len(args)) {
		return nil, ArityError(s.Name)
	}
	return s, nil
}

// ArityError is Redis's reply to a wrong number of arguments for the
// command name. Parsers use it too, where Redis's own parser refuses more
// arguments than a variadic arity lets through (LPOP key count extra).
func ArityError(name string) error { return fmt.Errorf("%w for '%s' command", ErrArity, name) }

// UnknownCommand is Redis's error for a command it does not have.
func UnknownCommand(args [][]byte) error {
	return fmt.Errorf("%w '%s', with args beginning with: %s", ErrUnknown, Clip(args[0]), argsPreview(args[1:]))
}

func argsPreview(args [][]byte) string {
	var b strings.Builder
	for i, a := range args {
		if i == 8 || b.Len() > 128 {
			break
		}
		fmt.Fprintf(&b, "'%s' ", Clip(a))
	}
	return b.String()
}

// Clip shortens user text quoted in an error reply and blanks control
// characters, so a reply stays one short line.
func Clip(b []byte) string {
	const max = 64
	if len(b) > max {
		b = b[:max]
	}
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, string(b))
}
