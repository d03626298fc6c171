package commands

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/fenced/fenced/reply"
)

// Cats is a set of ACL categories (Redis 7's names, plus fencedlock and
// session). Every command's set is derived in one place, categorize, from
// its flags and its group, so a command cannot be added without them.
type Cats uint32

// The ACL categories.
const (
	CatKeyspace Cats = 1 << iota
	CatRead
	CatWrite
	CatString
	CatHash
	CatList
	CatPubsub
	CatAdmin
	CatFast
	CatSlow
	CatBlocking
	CatDangerous
	CatConnection
	CatScripting
	CatFencedlock
	CatSession
	CatTransaction
	CatSet
	CatBitmap
	catEnd
)

// CatAll is @all: every category.
const CatAll = catEnd - 1

var catNames = [...]string{"keyspace", "read", "write", "string", "hash", "list", "pubsub", "admin",
	"fast", "slow", "blocking", "dangerous", "connection", "scripting", "fencedlock", "session", "transaction", "set", "bitmap"}

// CatNames lists the categories in ACL CAT's order.
func CatNames() []string { return catNames[:] }

// CatByName finds a category by name, "all" included, case-insensitively.
func CatByName(name string) (Cats, bool) {
	name = strings.ToLower(name)
	if name == "all" {
		return CatAll, true
	}
	for i, n := range catNames {
		if n == name {
			return 1 << i, true
		}
	}
	return 0, false
}

// Names lists the categories in c.
func (c Cats) Names() []string {
	var out []string
	for c != 0 {
		i := bits.TrailingZeros32(uint32(c))
		out = append(out, catNames[i])
		c &^= 1 << i
	}
	return out
}

// groups names each command's data group: the category that says what it
// works on. categorize refuses a command that has none (TestEveryCommandHasAGroup).
var groups = map[string]Cats{
	"flock": CatFencedlock, "funlock": CatFencedlock, "fence": CatFencedlock, "lock.info": CatFencedlock, "lock.forceunlock": CatFencedlock,
	"session.open": CatSession, "session.heartbeat": CatSession, "session.kill": CatSession, "session.info": CatSession, "session.list": CatSession,
	"set": CatString, "get": CatString, "getdel": CatString, "mget": CatString, "mset": CatString, "msetnx": CatString,
	"getrange": CatString, "incr": CatString, "delifeq": CatString, "strlen": CatString,
	"setnx": CatString, "setex": CatString, "psetex": CatString, "getset": CatString, "getex": CatString,
	"append": CatString, "setrange": CatString, "incrby": CatString, "incrbyfloat": CatString,
	"decr": CatString, "decrby": CatString, "expiretime": CatKeyspace, "pexpiretime": CatKeyspace,
	"type": CatKeyspace, "dbsize": CatKeyspace, "del": CatKeyspace, "unlink": CatKeyspace, "exists": CatKeyspace,
	"expire": CatKeyspace, "pexpire": CatKeyspace, "expireat": CatKeyspace, "pexpireat": CatKeyspace,
	"ttl": CatKeyspace, "pttl": CatKeyspace, "persist": CatKeyspace, "keys": CatKeyspace, "delex": CatKeyspace,
	"scan": CatKeyspace,
	"hset": CatHash, "hget": CatHash, "hincrby": CatHash, "hexists": CatHash, "hdel": CatHash, "hgetall": CatHash, "hlen": CatHash,
	"rename": CatKeyspace, "renamenx": CatKeyspace, "copy": CatKeyspace, "flushall": CatKeyspace, "flushdb": CatKeyspace,
	"move": CatKeyspace, "swapdb": CatKeyspace, "touch": CatKeyspace, "randomkey": CatKeyspace, "object": CatKeyspace,
	"sort": CatList | CatSet, "sort_ro": CatList | CatSet,
	"sadd": CatSet, "srem": CatSet, "spop": CatSet, "smembers": CatSet, "sismember": CatSet, "smismember": CatSet,
	"scard": CatSet, "srandmember": CatSet,
	"lpush": CatList, "rpush": CatList, "lpop": CatList, "llen": CatList, "lrange": CatList, "blpop": CatList,
	"eval": CatScripting, "evalsha": CatScripting, "script": CatScripting,
	"eval_ro": CatScripting, "evalsha_ro": CatScripting,
	"function": CatScripting, "fcall": CatScripting, "fcall_ro": CatScripting,
	"publish": CatPubsub, "subscribe": CatPubsub, "unsubscribe": CatPubsub,
	"psubscribe": CatPubsub, "punsubscribe": CatPubsub, "pubsub": CatPubsub,
	"raft.snapshot": CatAdmin, "save": CatAdmin, "bgsave": CatAdmin, "shutdown": CatAdmin, "raft.status": CatAdmin, "raft.hash": CatAdmin, "raft.backup": CatAdmin, "raft.join": CatAdmin,
	"raft.remove": CatAdmin, "raft.transfer": CatAdmin, "raft.propose": CatAdmin, "raft.link": CatAdmin, "raft.user": CatAdmin,
	"cluster": CatConnection, "ping": CatConnection, "echo": CatConnection, "auth": CatConnection,
	"hello": CatConnection, "select": CatConnection, "quit": CatConnection, "reset": CatConnection,
	"client": CatConnection, "command": CatConnection, "info": CatConnection, "time": CatConnection,
	"role": CatConnection, "acl": CatConnection, "config": CatAdmin, "slowlog": CatAdmin, "latency": CatAdmin,
	"multi": CatTransaction, "exec": CatTransaction, "discard": CatTransaction, "watch": CatTransaction,
	"unwatch": CatTransaction, "raft.watch": CatAdmin,
	"setbit": CatBitmap, "getbit": CatBitmap, "bitcount": CatBitmap, "bitpos": CatBitmap,
	"lcs": CatString, "rpop": CatList, "hmset": CatHash,
	"lmove": CatList, "rpoplpush": CatList, "blmove": CatList, "brpoplpush": CatList,
}

// slow are the commands whose work grows with their input or the state
// (Redis's @slow); the rest are @fast.
var slow = map[string]bool{
	"mget": true, "mset": true, "msetnx": true, "del": true, "unlink": true, "exists": true, "keys": true,
	"hgetall": true, "eval": true, "evalsha": true, "script": true, "session.list": true, "info": true,
	"command": true, "client": true, "cluster": true, "acl": true, "flock": true, "blpop": true,
	"scan": true, "raft.backup": true, "setex": true, "psetex": true, "setrange": true,
	"eval_ro": true, "evalsha_ro": true,
	"rename": true, "copy": true, "flushall": true, "flushdb": true, "randomkey": true, "object": true,
	"exec":       true,
	"psubscribe": true, "punsubscribe": true, "pubsub": true,
	"function": true, "fcall": true, "fcall_ro": true, "lrange": true,
	"smembers": true, "srandmember": true, "sort": true, "sort_ro": true,
	"setbit": true, "bitcount": true, "bitpos": true, "lcs": true,
	"lmove": true, "rpoplpush": true, "blmove": true, "brpoplpush": true,
}

// dangerous are Redis's @dangerous commands that need no admin permission
// in Redis either (SWAPDB: @keyspace @write @fast @dangerous), so a user
// with +@all -@admin may run them there and here alike. FLUSHALL and
// FLUSHDB are such commands in Redis, but Admin in fenced (the table):
// they name no key, so a user limited to some keys (~app:*) who may run
// them would delete every user's keys, SET NX locks included.
var dangerous = map[string]bool{"swapdb": true, "sort": true, "sort_ro": true}

// adminSubs are subcommands that need the admin permission although their
// command does not: Redis's "client|list" and the like.
var adminSubs = map[string][]string{
	"client": {"list", "kill"},
	"script": {"flush"},
	"acl":    {"setuser", "deluser", "list", "getuser", "log", "users"},
}

// categorize fills in s.Cats from its flags and group.
func categorize(s *Spec) error {
	g, ok := groups[s.Name]
	if !ok {
		return fmt.Errorf("commands: %q has no ACL group", s.Name)
	}
	c := g
	if s.Has(Read) {
		c |= CatRead
	}
	if s.Has(Write) {
		c |= CatWrite
	}
	if s.Has(Blocking) {
		c |= CatBlocking
	}
	if s.Has(Admin) {
		c |= CatAdmin | CatDangerous
	}
	if dangerous[s.Name] {
		c |= CatDangerous
	}
	if slow[s.Name] || s.Has(Admin) {
		c |= CatSlow
	} else {
		c |= CatFast
	}
	s.Cats = c
	return nil
}

// Perm is what a command run needs: its ACL name ("client|list" for a
// subcommand that has its own rule) and categories.
type Perm struct {
	Name string
	Cats Cats
}

// PermOf returns what running args (a checked command of spec) needs.
func (s *Spec) PermOf(args [][]byte) Perm {
	p := Perm{Name: s.Name, Cats: s.Cats}
	if subs := adminSubs[s.Name]; len(subs) > 0 && len(args) > 1 {
		sub := strings.ToLower(string(args[1]))
		for _, a := range subs {
			if a == sub {
				p.Name = s.Name + "|" + sub
				p.Cats |= CatAdmin | CatDangerous | CatSlow
				p.Cats &^= CatFast
			}
		}
	}
	return p
}

// KeysOf returns the arguments of args that are keys or lock names, the
// ones an ACL key pattern (~) must cover. args has passed Check.
func (s *Spec) KeysOf(args [][]byte) [][]byte {
	switch s.Name {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
		n, err := ParseInt(args[2])
		if err != nil || n < 0 || n > int64(len(args)-3) {
			return nil // the command itself refuses it
		}
		return args[3 : 3+n]
	case "blpop":
		return args[1 : len(args)-1]
	case "mset", "msetnx":
		var out [][]byte
		for i := 1; i < len(args); i += 2 {
			out = append(out, args[i])
		}
		return out
	case "mget", "del", "unlink", "exists", "touch", "watch":
		return args[1:]
	case "rename", "renamenx", "copy", "lcs":
		return args[1:3]
	case "lmove", "rpoplpush", "blmove", "brpoplpush": // source, destination
		return args[1:3]
	case "sort", "sort_ro":
		// The key and STORE's; the keys BY and GET reach need access to
		// every key (SortReachesKeys).
		keys := args[1:2]
		if p, err := ParseSort(args, s.Name == "sort_ro"); err == nil && p.HasStore {
			keys = append(keys[:1:1], []byte(p.Store))
		}
		return keys
	case "object":
		return args[2:min(3, len(args))]
	case "flushall", "flushdb", "swapdb", "randomkey":
		return nil
	case "dbsize", "keys":
		return nil
	case "scan":
		return nil
	}
	if s.Cats&(CatString|CatHash|CatList|CatSet|CatBitmap|CatFencedlock|CatKeyspace) != 0 && len(args) > 1 {
		return args[1:2]
	}
	return nil
}

// ErrACLRule is wrapped by a refused ACL SETUSER rule.
var ErrACLRule = reply.NewErr("ERR", "Error in ACL SETUSER modifier")

// CheckACLRule reports whether tok is an ACL SETUSER rule fenced knows, with
// Redis 7's error text when it is not.
func (t *Table) CheckACLRule(tok string) error {
	bad := func(why string) error { return fmt.Errorf("%w '%s': %s", ErrACLRule, Clip([]byte(tok)), why) }
	low := strings.ToLower(tok)
	switch low {
	case "on", "off", "nopass", "resetpass", "allkeys", "resetkeys", "allchannels", "resetchannels",
		"allcommands", "nocommands", "reset":
		return nil
	}
	if tok == "" {
		return bad("Syntax error")
	}
	switch tok[0] {
	case '>', '<':
		return nil
	case '#', '!':
		if len(tok) != 65 || strings.Trim(tok[1:], "0123456789abcdef") != "" {
			return bad("The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters")
		}
		return nil
	case '~', '&':
		return nil
	case '+', '-':
		name := low[1:]
		if cat, ok := strings.CutPrefix(name, "@"); ok {
			if _, ok := CatByName(cat); !ok {
				return bad("Unknown command or category name in ACL")
			}
			return nil
		}
		cmd, sub, hasSub := strings.Cut(name, "|")
		if _, ok := t.byName[cmd]; !ok || hasSub && sub == "" {
			return bad("Unknown command or category name in ACL")
		}
		return nil
	}
	return bad("Syntax error")
}
