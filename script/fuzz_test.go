package script

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/fenced/fenced/reply"
)

// FuzzRun runs arbitrary source: it must never panic or hang, and two runs
// of the same source must give the same reply and issue the same commands
// (the property a replicated state machine needs). The verifying engine also
// checks, after every run, that the script left the pooled sandbox as it
// found it.
func FuzzRun(f *testing.F) {
	for _, s := range loadLockScripts(f) {
		f.Add(s.Text)
	}
	for _, s := range []string{
		"return 1", "while true do end", "error('x')", "return {1, 'a', {ok='b'}, {err='c'}}",
		"local t = {} t[1e7] = 1", "return string.rep('x', 1e9)", "x = 1", "return redis.call('get', KEYS[1])",
		"return string.find(string.rep('a', 100), '(a*)*b')", "return tostring({}) .. tostring(1/3)",
		"local a = {} setmetatable(a, {__index = a}) return a.x",
	} {
		f.Add(s)
	}
	lim := Limits{MaxSteps: 20_000, MaxCalls: 50, MaxSource: 1 << 16}
	keys, argv := []string{"k1", "k2"}, []string{"a1", "10"}
	f.Fuzz(func(t *testing.T, src string) {
		// A hang is a failure: report where it is stuck.
		watchdog := time.AfterFunc(20*time.Second, func() {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			panic(fmt.Sprintf("runLim(%q) hangs:\n%s", src, buf[:n]))
		})
		defer watchdog.Stop()
		var replies [2]reply.Value
		var logs [2][][]string
		for i := range replies {
			env := newFakeEnv()
			env.strs["k1"] = "a1"
			replies[i] = runLim(src, keys, argv, env, 7, lim)
			logs[i] = env.log
		}
		if replies[0].Kind == reply.KindInvalid {
			t.Fatalf("invalid reply %v", replies[0])
		}
		if !eq(replies[0], replies[1]) {
			t.Fatalf("two runs differ:\n%v\n%v", replies[0], replies[1])
		}
		if len(logs[0]) != len(logs[1]) {
			t.Fatalf("two runs issued %d and %d commands", len(logs[0]), len(logs[1]))
		}
		for i := range logs[0] {
			if len(logs[0][i]) != len(logs[1][i]) {
				t.Fatalf("command %d differs: %q / %q", i, logs[0][i], logs[1][i])
			}
			for j := range logs[0][i] {
				if logs[0][i][j] != logs[1][i][j] {
					t.Fatalf("command %d differs: %q / %q", i, logs[0][i], logs[1][i])
				}
			}
		}
	})
}
