package commands

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The whole-key commands of cluster version 3 have Redis 7.0's categories
// exactly (src/commands/*.json: the listed ones, @write or @read from the
// flags, @fast from FAST, else @slow), but for FLUSHALL and FLUSHDB, which
// are Admin in fenced: Redis lets a user with +@all -@admin flush every
// key, other users' locks included.
func TestKeyspaceCommandCategories(t *testing.T) {
	tb := New()
	for name, want := range map[string]string{
		"flushall":  "keyspace write admin slow dangerous",
		"flushdb":   "keyspace write admin slow dangerous",
		"swapdb":    "keyspace write fast dangerous",
		"rename":    "keyspace write slow",
		"renamenx":  "keyspace write fast",
		"copy":      "keyspace write slow",
		"move":      "keyspace write fast",
		"touch":     "keyspace read fast",
		"randomkey": "keyspace read slow",
		"object":    "keyspace read slow",
		// Bits, LCS, RPOP and HMSET: Redis 7.0's categories too.
		"setbit":   "write slow bitmap",
		"getbit":   "read fast bitmap",
		"bitcount": "read slow bitmap",
		"bitpos":   "read slow bitmap",
		"lcs":      "read string slow",
		"rpop":     "write list fast",
		"hmset":    "write hash fast",
		// The list moves (LMOVE has no FAST flag in Redis 7.0).
		"lmove":      "write list slow",
		"rpoplpush":  "write list slow",
		"blmove":     "write list slow blocking",
		"brpoplpush": "write list slow blocking",
	} {
		s, ok := tb.Lookup([]byte(name))
		if !ok {
			t.Fatalf("%s is not in the table", name)
		}
		if got := strings.Join(s.Cats.Names(), " "); got != want {
			t.Errorf("%s: categories %q, want Redis's %q", name, got, want)
		}
	}
}

// Every command has one group category, @read/@write as its flags say,
// @admin and @dangerous exactly when it is Admin, and one of @fast and
// @slow; the admin set is the one the security contract names.
func TestEveryCommandHasAGroup(t *testing.T) {
	tb := New()
	const group = CatKeyspace | CatString | CatHash | CatList | CatSet | CatPubsub | CatAdmin | CatConnection | CatScripting | CatFencedlock | CatSession | CatTransaction | CatBitmap
	for _, s := range tb.All() {
		c := s.Cats
		if c&group == 0 {
			t.Errorf("%s: no group category in %v", s.Name, c.Names())
		}
		if (c&CatRead != 0) != s.Has(Read) || (c&CatWrite != 0) != s.Has(Write) {
			t.Errorf("%s: %v disagrees with its Read/Write flags", s.Name, c.Names())
		}
		if (c&CatAdmin != 0) != s.Has(Admin) || (c&CatDangerous != 0) != (s.Has(Admin) || dangerous[s.Name]) {
			t.Errorf("%s: %v disagrees with its Admin flag", s.Name, c.Names())
		}
		if (c&CatFast != 0) == (c&CatSlow != 0) {
			t.Errorf("%s: %v, want exactly one of fast and slow", s.Name, c.Names())
		}
	}
	admin := map[string]bool{}
	for _, s := range tb.All() {
		if s.Has(Admin) {
			admin[s.Name] = true
		}
	}
	for _, name := range []string{"raft.snapshot", "raft.status", "raft.hash", "raft.backup", "raft.join", "raft.remove", "raft.transfer",
		"raft.propose", "raft.link", "raft.user", "raft.watch", "lock.forceunlock", "session.list", "keys", "config", "slowlog", "latency",
		"flushall", "flushdb", "save", "bgsave", "shutdown"} {
		if !admin[name] {
			t.Errorf("%s is not admin", name)
		}
		delete(admin, name)
	}
	if len(admin) > 0 {
		t.Errorf("admin commands the contract does not name: %v", admin)
	}
	for _, sub := range [][]string{{"client", "list"}, {"client", "KILL"}, {"script", "flush"}} {
		s, _ := tb.Lookup([]byte(sub[0]))
		p := s.PermOf([][]byte{[]byte(sub[0]), []byte(sub[1])})
		if p.Cats&CatAdmin == 0 || p.Name != sub[0]+"|"+strings.ToLower(sub[1]) {
			t.Errorf("%s %s: %+v, want an admin subcommand", sub[0], sub[1], p)
		}
	}
	s, _ := tb.Lookup([]byte("client"))
	if p := s.PermOf([][]byte{[]byte("client"), []byte("setname"), []byte("x")}); p.Cats&CatAdmin != 0 || p.Name != "client" {
		t.Errorf("CLIENT SETNAME: %+v, want the command's own", p)
	}
}

func TestKeysOf(t *testing.T) {
	tb := New()
	for _, tc := range []struct {
		cmd  string
		keys string
	}{
		{"FLOCK l s WAIT 10", "l"},
		{"FUNLOCK l s", "l"},
		{"FENCE l", "l"},
		{"LOCK.INFO l", "l"},
		{"LOCK.FORCEUNLOCK l 5", "l"},
		{"SESSION.OPEN TTL 100", ""},
		{"SET k v PX 10", "k"},
		{"MSET a 1 b 2", "a b"},
		{"MGET a b c", "a b c"},
		{"DEL a b", "a b"},
		{"HSET h f v", "h"},
		{"BLPOP a b 0", "a b"},
		{"LMOVE s d LEFT RIGHT", "s d"},
		{"RPOPLPUSH s d", "s d"},
		{"BLMOVE s d LEFT RIGHT 0", "s d"},
		{"BRPOPLPUSH s d 0", "s d"},
		{"EVAL s 2 a b x y", "a b"},
		{"EVALSHA s 0 x", ""},
		{"EVAL s 3 a", ""}, // numkeys too large: refused by EVAL itself
		{"SADD s a b", "s"},
		{"SRANDMEMBER s -5", "s"},
		{"SPOP s", "s"},
		{"KEYS *", ""},
		{"DBSIZE", ""},
		{"PUBLISH c m", ""},
		{"PING", ""},
	} {
		args := bytesArgs(strings.Fields(tc.cmd))
		s, err := tb.Check(args)
		if err != nil {
			t.Fatalf("%s: %v", tc.cmd, err)
		}
		var got []string
		for _, k := range s.KeysOf(args) {
			got = append(got, string(k))
		}
		if strings.Join(got, " ") != tc.keys {
			t.Errorf("%s: keys %q, want %q", tc.cmd, got, tc.keys)
		}
	}
}

// TestEveryKeyedCommandNamesItsKey: a command whose documentation (Redis's
// COMMAND DOCS, not KeysOf's code) starts with a key argument must give
// that key to the ACL's key patterns; a new group forgotten in KeysOf
// would otherwise let a user limited to some keys write any (the sets did,
// until this test).
func TestEveryKeyedCommandNamesItsKey(t *testing.T) {
	tb := New()
	for _, s := range tb.All() {
		if s.Has(Peer) || s.Doc == nil || len(s.Doc.Args) == 0 || s.Doc.Args[0].Type != ArgKey {
			continue
		}
		n := max(s.Arity, -s.Arity)
		args := [][]byte{[]byte(s.Name)}
		for len(args) < n {
			args = append(args, []byte("1"))
		}
		args[1] = []byte("thekey")
		// The plain key arguments right after it (LMOVE's destination,
		// RENAME's newkey) are keys too.
		var more []string
		for i := 1; i < len(s.Doc.Args) && i+1 < len(args); i++ {
			if a := s.Doc.Args[i]; a.Type != ArgKey || a.Optional || a.Multiple {
				break
			}
			args[i+1] = []byte(fmt.Sprintf("key%d", i+1))
			more = append(more, string(args[i+1]))
		}
		keys := s.KeysOf(args)
		if len(keys) == 0 || string(keys[0]) != "thekey" {
			t.Errorf("%s: KeysOf(%q) = %q, want the key first", s.Name, args, keys)
		}
		for _, k := range more {
			if !slices.ContainsFunc(keys, func(b []byte) bool { return string(b) == k }) {
				t.Errorf("%s: KeysOf(%q) = %q, want %s among them", s.Name, args, keys, k)
			}
		}
	}
}

func TestCheckACLRule(t *testing.T) {
	tb := New()
	for _, ok := range []string{"on", "OFF", "nopass", ">secret", "<secret", "#" + strings.Repeat("ab", 32), "~lock:*", "&chan",
		"allkeys", "resetkeys", "allchannels", "resetchannels", "+@all", "-@admin", "+@fencedlock", "+flock", "-client|list",
		"allcommands", "nocommands", "reset", "resetpass"} {
		if err := tb.CheckACLRule(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, tc := range []struct{ rule, msg string }{
		{"", "Syntax error"},
		{"bogus", "Syntax error"},
		{"+nosuch", "Unknown command or category name in ACL"},
		{"+@nosuch", "Unknown command or category name in ACL"},
		{"+client|", "Unknown command or category name in ACL"},
		{"#abc", "64 characters"},
		{"#" + strings.Repeat("AB", 32), "lowercase hexadecimal"},
	} {
		err := tb.CheckACLRule(tc.rule)
		if err == nil || !strings.Contains(err.Error(), tc.msg) || !strings.HasPrefix(err.Error(), "ERR Error in ACL SETUSER modifier '") {
			t.Errorf("%q: %v, want an error with %q", tc.rule, err, tc.msg)
		}
	}
}

func bytesArgs(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}
