package server

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/fenced/fenced/commands"
)

// TestGenericHandlers: the keyspace commands without a handler of their
// own go to execWrite and execRead, decided by the table's flags.
func TestGenericHandlers(t *testing.T) {
	s := &Server{table: commands.New()}
	h := s.handlers()
	code := func(f handlerFunc) uintptr { return reflect.ValueOf(f).Pointer() }
	var writes, reads []string
	for _, spec := range s.table.All() {
		switch code(h[spec.Name]) {
		case code(s.execWrite):
			writes = append(writes, spec.Name)
		case code(s.execRead):
			reads = append(reads, spec.Name)
		}
	}
	wantWrites := []string{"append", "decr", "decrby", "del", "delex", "delifeq", "eval", "evalsha", "expire", "expireat", "fcall", "getdel",
		"getex", "getset", "hdel", "hincrby", "hset", "incr", "incrby", "incrbyfloat", "lpop", "lpush", "mset", "msetnx", "persist",
		"pexpire", "pexpireat", "psetex", "rpush", "script", "set", "setex", "setnx", "setrange", "unlink"}
	// KEYS and SCAN have handlers of their own, which read in steps
	// (scanSteps).
	wantReads := []string{"dbsize", "exists", "expiretime", "get", "getrange", "hexists", "hget", "hgetall", "hlen", "llen", "mget",
		"pexpiretime", "pttl", "strlen", "ttl", "type"}
	// The whole-key commands of cluster version 3 (RANDOMKEY draws on
	// the node: a handler of its own).
	wantWrites = append(wantWrites, "copy", "flushall", "flushdb", "move", "rename", "renamenx", "swapdb")
	wantReads = append(wantReads, "object", "touch", "lrange")
	// Sets (cluster version 3); SRANDMEMBER draws on the node, as RANDOMKEY.
	wantWrites = append(wantWrites, "sadd", "srem", "spop", "sort")
	// List moves (cluster version 3); BLMOVE and BRPOPLPUSH wait as BLPOP
	// does (a handler of their own).
	wantWrites = append(wantWrites, "lmove", "rpoplpush")
	wantReads = append(wantReads, "scard", "sismember", "smembers", "smismember", "sort_ro")
	// Bits, LCS, RPOP and HMSET (cluster version 3).
	wantWrites = append(wantWrites, "setbit", "rpop", "hmset")
	wantReads = append(wantReads, "getbit", "bitcount", "bitpos", "lcs")
	slices.Sort(wantWrites)
	slices.Sort(wantReads)
	if !slices.Equal(writes, wantWrites) {
		t.Errorf("execWrite serves\n %v\nwant %v", writes, wantWrites)
	}
	if !slices.Equal(reads, wantReads) {
		t.Errorf("execRead serves\n %v\nwant %v", reads, wantReads)
	}
}

// TestRoutingPredicates: which of a client's commands ServeRESP holds back
// while the node starts, and which run on the leader as a whole.
func TestRoutingPredicates(t *testing.T) {
	s := &Server{table: commands.New(), start: newStartup()}
	for _, spec := range s.table.All() {
		state := spec.Has(commands.Write) || spec.Has(commands.Read)
		raft := strings.HasPrefix(spec.Name, "raft.")
		// A command of a cluster version waits too: a new cluster moves
		// to the newest version as it settles.
		gated := spec.Version > 1
		if got, want := s.starting(nil, spec), (state || gated) && !raft; got != want {
			t.Errorf("starting(%s) = %v, want %v", spec.Name, got, want)
		}
		membership := spec.Name == "raft.join" || spec.Name == "raft.remove" || spec.Name == "raft.transfer"
		if got, want := s.leaderOnly(nil, spec), spec.Has(commands.Read) || membership; got != want {
			t.Errorf("leaderOnly(%s) = %v, want %v", spec.Name, got, want)
		}
	}
	s.start.settle()
	for _, spec := range s.table.All() {
		if s.starting(nil, spec) {
			t.Errorf("starting(%s) once settled", spec.Name)
		}
	}
}
