package test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Redis's allow-oom, bounded: on 3 nodes with --maxmemory 2mb, once SET is
// refused, an allow-oom script (through a follower) and an allow-oom
// function still write until the state is 1 MiB past maxmemory, and no
// further; a script without the flag and a plain SET are refused; a script
// without a shebang still reads; every node counts the same used_memory.
func TestMaxMemoryAllowOOMHeadroom(t *testing.T) {
	t.Parallel()
	const limit, headroom = 2 << 20, 1 << 20
	args := []string{"--maxmemory", "2mb"}
	c := startCluster(t, 3, args, args, args)
	leader := c.leader(10 * time.Second)
	lc := leader.client(t)
	var follower *node
	for _, n := range c.nodes {
		if n != leader {
			follower = n
			break
		}
	}
	fc := follower.client(t)

	mustStr(t, lc, "FUNCTION", "LOAD", "#!lua name=oom\nredis.register_function{function_name='fset', flags={'allow-oom'}, callback=function(keys, args) return redis.call('SET', keys[1], args[1]) end}")
	value := strings.Repeat("v", 50_000)
	fillUntilOOM(t, lc, "SET", func(i int) []any { return []any{"SET", fmt.Sprint("k", i), value} })
	if u := usedMemory(t, lc); u > limit {
		t.Fatalf("used_memory %d past maxmemory %d after SETs", u, limit)
	}
	allowOOM := "#!lua flags=allow-oom\nreturn redis.call('SET', KEYS[1], ARGV[1])"
	writes := 0
	for i := 0; ; i++ {
		cmd := []any{"EVAL", allowOOM, "1", fmt.Sprint("a", i), value}
		if i%2 == 1 {
			cmd = []any{"FCALL", "fset", "1", fmt.Sprint("a", i), value}
		}
		_, err := do(tctx(t), fc, cmd...)
		if err != nil {
			if !strings.HasPrefix(err.Error(), oomReply) {
				t.Fatalf("%s past maxmemory: %v", cmd[0], err)
			}
			break
		}
		writes++
		if writes > headroom/len(value)+2 {
			t.Fatalf("%d allow-oom writes of %d bytes past maxmemory: more than 1 MiB", writes, len(value))
		}
	}
	for _, cmd := range [][]any{{"SET", "x", "1"}, {"EVAL", "return redis.call('SET', 'x', '1')", "0"}, {"EVAL", "#!lua\nreturn 1", "0"}} {
		if _, err := do(tctx(t), fc, cmd...); err == nil || !strings.HasPrefix(err.Error(), oomReply) {
			t.Fatalf("%q past maxmemory: %v, want -OOM", cmd, err)
		}
	}
	if v, err := do(tctx(t), fc, "EVAL", "return redis.call('GET', 'a0')", "0"); err != nil || v != value {
		t.Fatalf("a read script past maxmemory: %.40v %v", v, err)
	}
	checkSameState(t, c.nodes)
	used := usedMemory(t, lc)
	for i, n := range c.nodes {
		if u := usedMemory(t, n.client(t)); u != used {
			t.Fatalf("node %d counts used_memory %d, the leader %d", i, u, used)
		}
	}
	// Full to within one write of the headroom's end.
	if used <= limit+headroom-2*int64(len(value)) || used > limit+headroom {
		t.Fatalf("used_memory %d after %d allow-oom writes, want within %d bytes below maxmemory %d + 1 MiB", used, writes, 2*len(value), limit)
	}
}
