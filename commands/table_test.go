package commands

import (
	"slices"
	"testing"
)

// names returns the sorted names of the specs that keep holds.
func names(tab *Table, keep func(*Spec) bool) []string {
	var out []string
	for _, s := range tab.All() {
		if keep(s) {
			out = append(out, s.Name)
		}
	}
	return out // All is sorted
}

// TestBehaviourFlags: the flags the server routes on are consistent, and
// name exactly the commands they did when the server kept its own lists.
func TestBehaviourFlags(t *testing.T) {
	tab := New()
	for _, s := range tab.All() {
		if s.Has(Ahead) && !s.Has(Write) {
			t.Errorf("%s: Ahead but not a Write; only proposals can run ahead", s.Name)
		}
		if s.Has(Keyspace) && s.Has(Write) == s.Has(Read) {
			t.Errorf("%s: Keyspace needs exactly one of Write and Read", s.Name)
		}
		if s.Has(Keyspace) && s.Has(Conn) {
			t.Errorf("%s: Keyspace and Conn", s.Name)
		}
		if s.Has(Leader) && (!s.Has(Write) || s.Has(Ahead)) {
			t.Errorf("%s: a Leader command is a Write forwarded whole, never Ahead", s.Name)
		}
	}

	keyspaceWrites := names(tab, func(s *Spec) bool { return s.Has(Keyspace | Write) })
	for _, n := range []string{"set", "del", "hset", "rpush", "blpop", "eval", "evalsha", "script", "publish"} {
		if !slices.Contains(keyspaceWrites, n) {
			t.Errorf("%s is not a Keyspace write", n)
		}
	}
	// PUBLISH answers with its receivers once delivered, so it waits for
	// its commit instead of running ahead; FUNCTION's reads (LIST, DUMP)
	// must not run ahead of the writes before them. RAFT.PROPOSE runs
	// ahead on a forwarding link, where many clients' proposals share it.
	want := append([]string{"session.open", "session.heartbeat", "session.kill", "funlock", "lock.forceunlock", "flock", "raft.propose"},
		slices.DeleteFunc(slices.Clone(keyspaceWrites), func(n string) bool { return n == "publish" || n == "function" })...)
	slices.Sort(want)
	if got := names(tab, func(s *Spec) bool { return s.Has(Ahead) }); !slices.Equal(got, want) {
		t.Errorf("Ahead commands\n got %v\nwant %v", got, want)
	}

	keyspaceReads := names(tab, func(s *Spec) bool { return s.Has(Keyspace | Read) })
	wantReads := []string{"bitcount", "bitpos", "dbsize", "eval_ro", "evalsha_ro", "exists", "expiretime", "fcall_ro", "get", "getbit", "getrange", "hexists", "hget", "hgetall", "hlen", "keys", "lcs", "llen", "lrange", "mget", "object", "pexpiretime", "pttl", "randomkey", "scan", "scard", "sismember", "smembers", "smismember", "sort_ro", "srandmember", "strlen", "touch", "ttl", "type"}
	if !slices.Equal(keyspaceReads, wantReads) {
		t.Errorf("Keyspace reads\n got %v\nwant %v", keyspaceReads, wantReads)
	}
	for _, n := range []string{"flock", "funlock", "fence", "lock.info", "session.open", "raft.join", "raft.propose", "ping"} {
		if s, _ := tab.Lookup([]byte(n)); s.Has(Keyspace) {
			t.Errorf("%s is Keyspace; it has its own handler", n)
		}
	}

	if got, want := names(tab, func(s *Spec) bool { return s.Has(Leader) }), []string{"raft.join", "raft.remove", "raft.transfer"}; !slices.Equal(got, want) {
		t.Errorf("Leader commands = %v, want %v", got, want)
	}
	// Before AUTH, only what Redis serves then: not even
	// PING.
	if got, want := names(tab, func(s *Spec) bool { return s.Has(NoAuth) }), []string{"auth", "hello", "quit", "reset"}; !slices.Equal(got, want) {
		t.Errorf("NoAuth commands = %v, want %v", got, want)
	}
}

// TestSpecRunsAhead: an Ahead command runs ahead when its arity fits; a
// FLOCK only without WAIT, found by parsing, not by scanning for the word.
func TestSpecRunsAhead(t *testing.T) {
	tab := New()
	for _, tc := range []struct {
		line string
		want bool
	}{
		{"flock l s", true},
		{"FLOCK l s OWNER o LIMIT 2 REQ r", true},
		{"flock l s OWNER WAIT", true}, // an owner tag that reads WAIT
		{"flock l s REQ wait", true},
		{"flock l s WAIT 0", false},
		{"flock l s wait 100", false},
		{"flock l s OWNER o Wait 5 LIMIT 1", false},
		{"flock l s WAIT", false},   // malformed: answered by an error, nothing proposed
		{"flock l s WAIT x", false}, // likewise
		{"flock l s NOPE 1", false}, // likewise
		{"flock l", false},          // arity
		{"funlock l s", true},
		{"funlock l", false},
		{"lock.forceunlock l 1", true},
		{"session.open", true},
		{"session.open TTL 1000", true},
		{"session.heartbeat id", true},
		{"session.heartbeat", false},
		{"session.kill id", true},
		{"set k v", true},
		{"SET k v NX", true},
		{"set k", false},
		{"del a b", true},
		{"blpop k 0", true},
		{"eval s 0", true},
		{"publish ch m", false},
		{"get k", false},
		{"fence l", false},
		{"lock.info l", false},
		{"session.info id", false},
		{"raft.join a b c", false},
		{"raft.transfer", false},
		{"raft.propose e", true},
		{"raft.propose", false}, // the arity does not fit
		{"ping", false},
	} {
		a := args(tc.line)
		s, ok := tab.Lookup(a[0])
		if !ok {
			t.Fatalf("%s: not in the table", a[0])
		}
		if got := s.RunsAhead(a); got != tc.want {
			t.Errorf("RunsAhead(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
}
