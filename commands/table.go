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
	// Admin commands need the admin permission (SPEC section 7).
	Admin
	// Blocking commands may wait for a later log entry; they hold up their
	// own connection only.
	Blocking
	// Conn commands touch only the connection or the local node.
	Conn
	// NoAuth commands are served to a connection that has not
	// authenticated yet, when a password is set: Redis's AUTH, HELLO, QUIT
	// and RESET (SPEC section 7). The server checks it once, in its
	// dispatcher; every other command answers -NOAUTH.
	NoAuth
	// Ahead writes are proposed without waiting for the connection's
	// earlier replies, so that pipelined writes share a commit; their
	// replies still go out in command order. See Spec.RunsAhead.
	Ahead
	// Keyspace commands are executed by the state machine from their
	// arguments alone (a read by State.Exec, a write as one OpExec entry),
	// so the server needs no handler of its own for them.
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
)

// Spec is one row of the command table.
type Spec struct {
	Name string
	// Arity follows Redis: n > 0 is exactly n arguments including the name,
	// n < 0 is at least -n.
	Arity   int
	Flags   Flags
	Summary string
	Args    string // syntax after the name, for COMMAND DOCS and errors
	Cats    Cats   // ACL categories, derived from Flags and the command's group
}

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
		name          string
		arity         int
		flags         Flags
		summary, args string
	}
	rows := []row{
		// Native locks and sessions (SPEC section 3).
		{"flock", -3, Write | Ahead | Blocking | DenyOOM, "Acquire a fenced lock; reply the fencing token", "lock session [OWNER tag] [WAIT ms] [LIMIT n] [REQ id]"},
		{"funlock", -3, Write | Ahead, "Release one hold of a fenced lock; reply the remaining count", "lock session [OWNER tag] [FENCE token] [REQ id]"},
		{"fence", -2, Read, "Reply the fencing token of a lock's holder, or of a key (IFEQ: only while it holds value)", "lock [session [OWNER tag]] | key IFEQ value"},
		{"lock.info", 2, Read, "Describe a lock: holder, count, limit, token, waiters", "lock"},
		{"lock.forceunlock", 3, Write | Ahead | Admin, "Release a lock if token is its current token", "lock token"},
		{"session.open", -1, Write | Ahead | DenyOOM, "Open a session; reply its id", "[TTL ms] [NAME label]"},
		{"session.heartbeat", 2, Write | Ahead, "Renew a session; reply its TTL in ms", "id"},
		{"session.kill", 2, Write | Ahead, "End a session and release its locks", "id"},
		{"session.info", 2, Read, "Describe a session", "id"},
		{"session.list", 1, Read | Admin, "List open session ids", ""},
		{"type", 2, Read | Keyspace, "Reply the type of a key", "key"},
		{"dbsize", 1, Read | Keyspace, "Reply the number of keys", ""},
		// Keyspace (SPEC section 4): strings, TTLs, hashes, lists.
		{"set", -3, Write | Ahead | Keyspace | DenyOOM, "Set a string key", "key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]"},
		{"get", 2, Read | Keyspace, "Reply a string key's value", "key"},
		{"getdel", 2, Write | Ahead | Keyspace, "Reply a string key's value and delete it", "key"},
		{"mget", -2, Read | Keyspace, "Reply the values of string keys", "key [key ...]"},
		{"mset", -3, Write | Ahead | Keyspace | DenyOOM, "Set string keys", "key value [key value ...]"},
		{"msetnx", -3, Write | Ahead | Keyspace | DenyOOM, "Set string keys if none exists", "key value [key value ...]"},
		{"getrange", 4, Read | Keyspace, "Reply a substring of a string key", "key start end"},
		{"strlen", 2, Read | Keyspace, "Reply the length of a string key's value", "key"},
		{"incr", 2, Write | Ahead | Keyspace | DenyOOM, "Increment an integer string key", "key"},
		{"del", -2, Write | Ahead | Keyspace, "Delete keys (not fenced locks)", "key [key ...]"},
		{"unlink", -2, Write | Ahead | Keyspace, "Delete keys (not fenced locks)", "key [key ...]"},
		{"exists", -2, Read | Keyspace, "Count the keys that exist", "key [key ...]"},
		{"expire", -3, Write | Ahead | Keyspace, "Set a key's TTL in seconds", "key seconds [NX|XX|GT|LT]"},
		{"pexpire", -3, Write | Ahead | Keyspace, "Set a key's TTL in ms", "key ms [NX|XX|GT|LT]"},
		{"expireat", -3, Write | Ahead | Keyspace, "Set a key's deadline in seconds", "key unix-seconds [NX|XX|GT|LT]"},
		{"pexpireat", -3, Write | Ahead | Keyspace, "Set a key's deadline in ms", "key unix-ms [NX|XX|GT|LT]"},
		{"ttl", 2, Read | Keyspace, "Reply a key's remaining TTL in seconds", "key"},
		{"pttl", 2, Read | Keyspace, "Reply a key's remaining TTL in ms", "key"},
		{"persist", 2, Write | Ahead | Keyspace, "Remove a key's TTL", "key"},
		{"keys", 2, Read | Keyspace | Admin, "Reply the keys matching a glob pattern, sorted", "pattern"},
		{"scan", -2, Read | Keyspace, "Reply a cursor and some keys; iterate from cursor 0 until it is 0 again", "cursor [MATCH pattern] [COUNT n] [TYPE type]"},
		{"delex", -2, Write | Ahead | Keyspace, "Delete a key if its value matches", "key [IFEQ value|IFNE value]"},
		{"delifeq", 3, Write | Ahead | Keyspace, "Delete a string key if its value equals", "key value"},
		{"hset", -4, Write | Ahead | Keyspace | DenyOOM, "Set hash fields", "key field value [field value ...]"},
		{"hget", 3, Read | Keyspace, "Reply a hash field", "key field"},
		{"hincrby", 4, Write | Ahead | Keyspace | DenyOOM, "Increment an integer hash field", "key field increment"},
		{"hexists", 3, Read | Keyspace, "Reply whether a hash field exists", "key field"},
		{"hdel", -3, Write | Ahead | Keyspace, "Delete hash fields", "key field [field ...]"},
		{"hgetall", 2, Read | Keyspace, "Reply a hash's fields and values", "key"},
		{"hlen", 2, Read | Keyspace, "Reply the number of fields in a hash", "key"},
		{"lpush", -3, Write | Ahead | Keyspace | DenyOOM, "Prepend elements to a list", "key element [element ...]"},
		{"rpush", -3, Write | Ahead | Keyspace | DenyOOM, "Append elements to a list", "key element [element ...]"},
		{"lpop", -2, Write | Ahead | Keyspace, "Remove and reply the first elements of a list", "key [count]"},
		{"llen", 2, Read | Keyspace, "Reply a list's length", "key"},
		{"blpop", -3, Write | Ahead | Keyspace | Blocking, "Remove and reply the first element of the first non-empty list, waiting for one", "key [key ...] timeout"},
		// Scripts and pub/sub (SPEC section 4).
		{"eval", -3, Write | Ahead | Keyspace, "Run a Lua script in the state machine", "script numkeys [key ...] [arg ...]"},
		{"evalsha", -3, Write | Ahead | Keyspace, "Run a cached Lua script by its SHA-1", "sha1 numkeys [key ...] [arg ...]"},
		{"script", -2, Write | Ahead | Keyspace, "Manage the replicated script cache", "LOAD script | EXISTS sha1 [sha1 ...] | FLUSH [ASYNC|SYNC]"},
		{"publish", 3, Write | Keyspace, "Post a message to a channel, delivered by every node", "channel message"},
		{"subscribe", -2, Conn, "Listen for messages on channels", "channel [channel ...]"},
		{"unsubscribe", -1, Conn, "Stop listening on channels (all if none given)", "[channel ...]"},
		// Cluster administration.
		{"raft.snapshot", 1, Admin | Conn, "Take a snapshot and compact the log", ""},
		{"raft.status", 1, Admin | Conn, "Describe this node's Raft state", ""},
		{"raft.hash", 1, Admin | Conn, "Reply this node's applied index and a SHA-256 of its state at that index", ""},
		// A Read: the leader serves it after a linearizable read's checks,
		// so it holds every acknowledged write; a follower forwards it.
		{"raft.backup", 1, Read | Admin, "Reply a snapshot of the replicated state: its applied index, the SHA-256 RAFT.HASH reports at that index, and the snapshot's bytes", ""},
		{"raft.join", 4, Write | Leader | Admin, "Add a node as a non-voter; it becomes a voter once caught up", "id raft-addr client-addr"},
		{"raft.remove", 2, Write | Leader | Admin, "Remove a node; its id is never reused", "id"},
		{"raft.transfer", -1, Write | Leader | Admin, "Hand leadership to a voter (the most up-to-date one by default)", "[id]"},
		// Node to node: a follower forwards an entry to the leader over a
		// link connection, marked by RAFT.LINK so it is never forwarded on.
		{"raft.propose", 2, Write | Admin | Peer, "Propose an encoded entry (forwarding between nodes)", "entry"},
		{"raft.link", 2, Admin | Conn | Peer, "Mark this connection as a forwarding link from a node", "node-id"},
		{"raft.user", 2, Admin | Conn | Peer, "Answer the commands that follow on this link as the given user", "user"},
		{"cluster", -2, Conn, "Redis Cluster view with the leader as master of all slots", "SLOTS|SHARDS|NODES|INFO|MYID"},
		// Connection (SPEC section 4).
		{"ping", -1, Conn, "Reply PONG or the message", "[message]"},
		{"echo", 2, Conn, "Reply the message", "message"},
		{"auth", -2, Conn | NoAuth, "Authenticate the connection", "[username] password"},
		{"hello", -1, Conn | NoAuth, "Switch protocol, optionally authenticating; reply server information", "[protover [AUTH username password] [SETNAME name]]"},
		{"select", 2, Conn, "Select database 0", "index"},
		{"quit", -1, Conn | NoAuth, "Close the connection", ""},
		{"reset", 1, Conn | NoAuth, "Reset the connection's state, unauthenticated if a password is set", ""},
		{"client", -2, Conn, "Connection management", "SETNAME|GETNAME|ID|SETINFO|INFO|LIST ..."},
		{"command", -1, Conn, "Describe commands", "[COUNT|DOCS|INFO ...]"},
		{"info", -1, Conn, "Reply server information", "[section ...]"},
		{"time", 1, Conn, "Reply the server's wall-clock time", ""},
		{"role", 1, Conn, "Reply this node's replication role", ""},
		{"slowlog", -2, Conn | Admin, "Read and reset this node's log of slow commands", "GET [count] | LEN | RESET | HELP"},
		{"config", -2, Conn | Admin, "Read and change this node's settings", "GET pattern [pattern ...] | SET name value [name value ...] | RESETSTAT | HELP"},
		{"acl", -2, Conn, "Manage ACL users, replicated through the log", "SETUSER|DELUSER|GETUSER|LIST|USERS|WHOAMI|CAT|DRYRUN|LOG ..."},
	}
	specs := make([]Spec, len(rows))
	t := &Table{byName: make(map[string]*Spec, len(specs))}
	for i, r := range rows {
		s := &specs[i]
		*s = Spec{Name: r.name, Arity: r.arity, Flags: r.flags, Summary: r.summary, Args: r.args}
		if err := categorize(s); err != nil {
			panic(err) // a row without an ACL group: TestEveryCommandHasAGroup
		}
		t.byName[s.Name] = s
		t.sorted = append(t.sorted, s)
	}
	sort.Slice(t.sorted, func(i, j int) bool { return t.sorted[i].Name < t.sorted[j].Name })
	return t
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
func (t *Table) Check(args [][]byte) (*Spec, error) {
	s, ok := t.Lookup(args[0])
	if !ok {
		return nil, fmt.Errorf("%w '%s', with args beginning with: %s", ErrUnknown, Clip(args[0]), argsPreview(args[1:]))
	}
	if !s.CheckArity(len(args)) {
		return nil, fmt.Errorf("%w for '%s' command", ErrArity, s.Name)
	}
	return s, nil
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
