// Package lockstate is fenced's replicated state machine: sessions, fenced
// locks, FIFO waiters, the request-id memory that makes retries exactly
// once, the table of cluster members, and the Redis keyspace (strings,
// hashes and lists with TTLs in cluster time) that shares its names with
// the held locks: OpExec applies one write command, Exec answers the read
// commands (exec.go, keys.go).
//
// It is pure and deterministic. It never reads a clock, never draws a random
// number and never lets map order reach its output: the cluster time, session
// ids and wait ids all arrive inside the Entry being applied, and the Raft log
// index of that entry is the fencing token of any grant it makes and the
// fence of any key it creates. An entry applies in three steps: the
// deadlines it has passed take effect, then its op, then each lock freed
// on the way passes to its first remaining waiter, so a lock is granted at
// most once per entry and one token names one ownership (see DESIGN.md,
// Sessions, waits and handoff; exhaustive_test.go checks it over every
// short sequence). Two States that apply the same entries at the same
// indexes hold the same records and hash the same. Besides the standard
// library (no clock, no randomness) it imports only the repository's pure
// packages commands, reply, script and internal/ms, and internal/plant, which
// is empty outside the fault tests' builds (internal/lint checks this);
// raftstore adapts it to hashicorp/raft and persists its records in Pebble
// through Writer.
package lockstate

import (
	"github.com/fenced/fenced/reply"
)

// Errors returned in Result.Err. Each is a decided outcome: the entry was
// applied and this is its answer, and carries the RESP code a client sees.
var (
	// ErrNoSession is returned when a command names a session that is
	// unknown, expired or killed, and to waiters of a session that ends.
	ErrNoSession = reply.NewErr("NOSESSION", "session expired; its locks were released")
	// ErrNotOwner is returned by FUNLOCK and FENCE when the owner does not
	// hold the lock.
	ErrNotOwner = reply.NewErr("NOTOWNER", "not the owner of the lock")
	// ErrLimit is returned by a reentrant FLOCK whose owner has reached the
	// ownership's reentrancy limit. The hold count is unchanged.
	ErrLimit = reply.NewErr("LIMIT", "reentrancy limit reached")
	// ErrStaleFence is returned by FUNLOCK FENCE and LOCK.FORCEUNLOCK when the
	// token is not the current ownership's token.
	ErrStaleFence = reply.NewErr("STALEFENCE", "fencing token is not the current one")
	// ErrCancelled answers a waiting FLOCK that was replaced by a newer FLOCK
	// of the same owner on the same lock.
	ErrCancelled = reply.NewErr("CANCELLED", "wait cancelled by a newer request of the same owner")
	// ErrTooManySessions, ErrTooManyLocks and ErrTooManyWaiters are the
	// configured bounds of Config.
	ErrTooManySessions = reply.NewErr("ERR", "too many sessions")
	ErrTooManyLocks    = reply.NewErr("ERR", "too many locks held by this session")
	ErrTooManyWaiters  = reply.NewErr("ERR", "too many waiters on this lock")
	// ErrTooManyUserSessions is Config.MaxSessionsPerUser: one user
	// cannot take every session the cluster allows.
	ErrTooManyUserSessions = reply.NewErr("ERR", "too many sessions open by this user")
	// ErrSessionExists is returned by SESSION.OPEN when the proposed id is
	// already in use (the leader draws 128 random bits, so this means a bug
	// or a replayed proposal).
	ErrSessionExists = reply.NewErr("ERR", "session id already exists")
	// ErrBadEntry is wrapped by DecodeEntry for bytes that are not an entry,
	// and answers an entry the state machine cannot apply (an unknown op, or
	// a membership entry without its fields).
	ErrBadEntry = reply.NewErr("ERR", "malformed entry")
	// ErrNodeRemoved answers OpNodeJoin for an id that was removed: ids are
	// never reused.
	ErrNodeRemoved = reply.NewErr("ERR", "node id was removed from the cluster and may not be reused")
	// ErrBadResult is wrapped by DecodeResult for bytes that are not a
	// result.
	ErrBadResult = reply.NewErr("ERR", "malformed result")
	// ErrWrongType answers FLOCK on a name that is a string, hash or list
	// key, with Redis's WRONGTYPE error.
	ErrWrongType = reply.NewErr("WRONGTYPE", "Operation against a key holding the wrong kind of value")
	// ErrOOM refuses a command that would grow the state past the entry's
	// MaxMemory, in Redis's words.
	ErrOOM = reply.NewErr("OOM", "command not allowed when used memory > 'maxmemory'.")
	// ErrVersionBehind refuses OpSetVersion while a live member has not
	// announced a binary that knows the version.
	ErrVersionBehind = reply.NewErr("ERR", "a member's binary does not know that cluster version yet")
	// ErrVersionUnknown answers OpSetVersion to a version this binary does
	// not know. The replica must stop rather than apply what follows with
	// semantics older than the other replicas' (raftstore panics on it).
	ErrVersionUnknown = reply.NewErr("ERR", "cluster version unknown to this binary")
)

// Op is the kind of an Entry.
type Op uint8

// The ops. Their numeric values are part of the log format: never reorder.
const (
	OpTick             Op = 1 // advances cluster time; due deadlines take effect
	OpSessionOpen      Op = 2 // Session, TTL, Name, Created
	OpSessionHeartbeat Op = 3 // Session
	OpSessionKill      Op = 4 // Session
	OpFlock            Op = 5 // Lock, Session, Owner, Wait, Limit, Req, WaitID
	OpFunlock          Op = 6 // Lock, Session, Owner, Fence, Req
	OpCancelWait       Op = 7 // WaitID: the waiting connection went away
	OpForceUnlock      Op = 8 // Lock, Fence
	// OpCancelWaits: WaitID = epoch<<32. A node restarted; every wait id
	// of that epoch (its high 32 bits) is cancelled, as by OpCancelWait.
	OpCancelWaits Op = 9
	OpNodeJoin    Op = 10 // Node, RaftAddr, Addr: record a cluster member
	OpNodeRemove  Op = 11 // Node: mark a member removed, forever
	// OpExec: Args is one write command of the keyspace (SET, DEL, HSET,
	// ...) as a client sent it, the name in any case. Its answer is
	// Result.Reply.
	OpExec Op = 12
	// OpACLSetUser applies the ACL SETUSER rules in Args to user Name,
	// creating it; passwords arrive hashed (#hash, !hash), never in clear.
	OpACLSetUser Op = 13
	// OpACLDelUser deletes the users named in Args; Result.Int counts them.
	OpACLDelUser Op = 14
	// OpSetVersion moves the cluster to semantics Version (version.go),
	// once every live member's binary knows it; Result.Int is the version
	// moved to, 0 when the cluster already runs it or a later one.
	OpSetVersion Op = 15
	// OpMulti is a transaction, MULTI ... EXEC, from cluster version 3
	// (tx.go): Cmds run one after another in this one entry, unless a key
	// of Watches changed since it was watched (Result.Reply is then a null
	// array). Result.Reply is the array of their replies.
	OpMulti Op = 16
)

// NoWait is Entry.Wait for a FLOCK without WAIT: answer null at once when the
// lock is held by another owner. Wait 0 waits without deadline; Wait > 0 is a
// deadline in ms after the entry's time.
const NoWait = -1

// Entry is one state change, as proposed by the leader. Fields that an op
// does not use are zero.
type Entry struct {
	Op   Op
	Time int64 // cluster time in ms, stamped by the proposer
	// Wall is the proposing leader's wall clock, Unix ms: what TIME in a
	// script answers and what EXAT, PXAT, EXPIREAT and PEXPIREAT are
	// measured against. It never decides an expiry. 0 in entries written
	// before it existed, whose absolute times are cluster times.
	Wall    int64
	Session string // session id (32 lowercase hex characters)
	Name    string // SESSION.OPEN NAME label
	TTL     int64  // SESSION.OPEN TTL in ms
	Created int64  // SESSION.OPEN wall-clock unix ms, a label only
	Lock    string
	Owner   string // owner tag; "" is the default owner of a session
	Wait    int64  // NoWait, 0 (forever) or ms
	Limit   int64  // reentrancy limit for a new ownership; 0 = unlimited
	Req     string // request id for exactly-once retries; "" = none
	Fence   int64  // FUNLOCK FENCE / LOCK.FORCEUNLOCK token; 0 = not given
	WaitID  uint64 // proposer-chosen id that a waiting FLOCK is answered under; OpCancelWaits: epoch<<32

	Node     string // node id (OpNodeJoin, OpNodeRemove)
	RaftAddr string // node's Raft address (OpNodeJoin)
	Addr     string // node's client (RESP) address (OpNodeJoin)

	Args []string // OpExec: the command and its arguments; OpACL*: rules or names

	// User is the ACL user the entry acts for ("" = the default user): a
	// new session belongs to it, and only it may use the session.
	User string
	// AsAdmin lets an admin act on any user's session (SESSION.KILL).
	AsAdmin bool
	// MaxMemory is the proposing leader's --maxmemory, in bytes of the
	// state's count (State.Used); 0 = no limit. It travels in the entry,
	// as the time does, so that every replica refuses the same entries.
	MaxMemory int64
	// Version is, in OpNodeJoin, the highest cluster version the joining
	// member's binary knows (0 = not said), and in OpSetVersion the
	// version to move to.
	Version int64
	// Watches and Cmds are OpMulti's: the watched keys with the index at
	// which each was watched, and the queued commands, each as sent.
	Watches []Watch
	Cmds    [][]string
}

// Result is the answer to an applied entry.
type Result struct {
	Err  error  // a decided error (the sentinels above), or nil
	Null bool   // null reply (lock held without WAIT, FENCE of a free lock, timed-out wait)
	Int  int64  // token, hold count, TTL or 0/1
	Str  string // SESSION.OPEN: the session id
	// Queued says the FLOCK joined its lock's queue: the answer arrives
	// later as a Wake for WaitID. Int is then its place, the log index at
	// which it joined: a hold granted through it has a higher token.
	Queued bool
	// Reply is the answer of OpExec (Kind reply.Invalid for every other op).
	Reply reply.Value
	// Wakes answers waiting FLOCKs that this entry resolved (granted, timed
	// out, cancelled, session ended), in a deterministic order.
	Wakes []Wake
	// Pushed names the lists this entry added elements to (BLPOP waiters
	// try again) and Messages the PUBLISHes it made, in order. Both are for
	// the node that applies the entry and are not encoded.
	Pushed   []string
	Messages []Message
	// UsersChanged: the entry set or deleted ACL users (not encoded).
	UsersChanged bool
	// Expired counts what deadlines ended as the entry was applied (not
	// encoded): the same on every replica, since deadlines take effect in
	// the entries' order.
	Expired Expirations
	// Changes lists the keys the entry modified, for client-side caching
	// (tracking.go; not encoded); nil when it modified none.
	Changes *Changes
}

// Expirations count what deadlines ended: sessions whose TTL ran out, the
// locks they held (released by that), keys deleted at their deadline, and
// FLOCK waits whose WAIT ran out.
type Expirations struct {
	Sessions, Locks, Keys, Waits int
}

// Add adds o's counts to e's.
func (e *Expirations) Add(o Expirations) {
	e.Sessions += o.Sessions
	e.Locks += o.Locks
	e.Keys += o.Keys
	e.Waits += o.Waits
}

// Member is a cluster member as recorded by OpNodeJoin and OpNodeRemove. A
// removed member keeps its record forever, so that its id is never reused;
// one removed without ever joining has empty addresses.
type Member struct {
	ID, RaftAddr, Addr string
	Removed            bool
	// Version is the highest cluster version the member's binary knows,
	// as it last announced; 0 when it never said, which counts as 1.
	Version int64
}

// Wake answers a queued FLOCK: WaitID is the id its proposer chose.
type Wake struct {
	WaitID uint64
	Result Result // Int = token, or Null (timed out), or Err
}

// Writer receives the records an Apply changed, within the caller's batch.
// Keys and values must be copied if retained.
type Writer interface {
	Set(key, value []byte) error
	Delete(key []byte) error
}

// Config bounds the state. Every replica must use the same Config, except
// MaxVersion, which is what the version gate reconciles.
type Config struct {
	MaxSessions        int // open sessions
	MaxSessionsPerUser int // open sessions of one user
	MaxLocksPerSession int // locks held by one session
	MaxWaitersPerLock  int // queued FLOCKs on one lock
	ReqMemory          int // request ids remembered per session (at least 1000)
	// MaxTombstones bounds the deleted names whose deletion index is kept
	// for WATCH (mods.go); past it the oldest are dropped.
	MaxTombstones int
	// MaxVersion is the highest cluster version this replica knows; 0 is
	// the binary's MaxVersion. Only tests of the version gate set it: the
	// semantics of a version come with the binary.
	MaxVersion int64
}

// DefaultConfig returns the bounds used when none are configured.
func DefaultConfig() Config {
	return Config{MaxSessions: 1 << 20, MaxSessionsPerUser: 1 << 17, MaxLocksPerSession: 1 << 16, MaxWaitersPerLock: 1 << 16, ReqMemory: 1000, MaxTombstones: 1 << 16}
}

// LockInfo describes a lock for LOCK.INFO. A free lock has Holder == "" and
// Count == 0.
type LockInfo struct {
	Holder  string
	Owner   string
	Count   int64
	Limit   int64
	Token   int64
	Waiters []WaiterInfo // queue order
}

// WaiterInfo is one queued FLOCK. Remaining is -1 for WAIT 0 (no deadline).
type WaiterInfo struct {
	Session   string
	Owner     string
	Remaining int64
}

// SessionInfo describes a session for SESSION.INFO.
type SessionInfo struct {
	ID        string
	Name      string
	TTL       int64
	Remaining int64
	Created   int64    // wall-clock unix ms label
	Held      []string // sorted lock names
	Waiting   []string // sorted lock names
}
