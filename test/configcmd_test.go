package test

import (
	"fmt"
	"strings"
	"testing"
)

// Issue 16 (CONFIG GET|SET, SPEC section 8): the settings under Redis's
// names with this node's true values (maxmemory from --maxmemory, the
// password masked), CONFIG SET maxmemory taking effect at once (the next
// writes answer -OOM; 0 lifts it), and Redis's errors for what cannot be
// set, changing nothing.
func TestConfigGetSet(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{args: []string{"--maxmemory", "8mb", "--timeout", "300"}})
	c := n.client(t)
	get := func(pattern string) map[string]string {
		t.Helper()
		m, err := c.ConfigGet(tctx(t), pattern).Result()
		if err != nil {
			t.Fatalf("CONFIG GET %s: %v", pattern, err)
		}
		return m
	}
	if m := get("maxmemory*"); m["maxmemory"] != "8388608" || m["maxmemory-policy"] != "noeviction" || len(m) != 2 {
		t.Fatalf("CONFIG GET maxmemory*: %v", m)
	}
	all := get("*")
	for k, want := range map[string]string{"timeout": "300", "appendonly": "yes", "appendfsync": "always", "databases": "1",
		"requirepass": "", "port": n.addr[strings.LastIndex(n.addr, ":")+1:], "client-output-buffer-limit": "normal 0 0 0 pubsub 33554432 8388608 60"} {
		if all[k] != want {
			t.Errorf("CONFIG GET %s = %q, want %q", k, all[k], want)
		}
	}
	if v, err := do(tctx(t), c, "CONFIG", "GET", "nosuch"); err != nil || fmt.Sprint(v) != "map[]" && fmt.Sprint(v) != "[]" {
		t.Errorf("CONFIG GET nosuch: %v, %v", v, err)
	}

	// maxmemory at run time: the next writes are refused, 0 lifts it.
	mustStr(t, c, "CONFIG", "SET", "maxmemory", "1mb")
	if m := get("maxmemory"); m["maxmemory"] != "1048576" {
		t.Fatalf("after CONFIG SET maxmemory 1mb: %v", m)
	}
	value := strings.Repeat("v", 100<<10)
	refused := false
	for i := 0; i < 20 && !refused; i++ {
		_, err := do(tctx(t), c, "SET", fmt.Sprint("cfg", i), value)
		refused = err != nil && err.Error() == oomReply
		if err != nil && !refused {
			t.Fatal(err)
		}
	}
	if !refused {
		t.Fatal("20 SETs of 100 KiB under CONFIG SET maxmemory 1mb, none refused")
	}
	mustStr(t, c, "CONFIG", "SET", "maxmemory", "0")
	mustStr(t, c, "SET", "cfg-after", value)

	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"CONFIG", "SET", "timeout", "5"}, "ERR CONFIG SET failed (possibly related to argument 'timeout') - can't set immutable config"},
		{[]any{"CONFIG", "SET", "nosuch", "1"}, "ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'"},
		{[]any{"CONFIG", "SET", "maxmemory", "lots"}, "ERR CONFIG SET failed (possibly related to argument 'maxmemory') - bad size \"lots\""},
		{[]any{"CONFIG", "SET", "maxmemory", "2mb", "maxmemory-policy", "allkeys-lru"}, "ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - fenced never evicts: the only policy is noeviction"},
		{[]any{"CONFIG", "SET", "maxmemory"}, "ERR wrong number of arguments for 'config|set' command"},
		{[]any{"CONFIG", "GET"}, "ERR wrong number of arguments for 'config|get' command"},
		{[]any{"CONFIG", "BOGUS"}, "ERR unknown subcommand 'BOGUS'. Try CONFIG HELP."},
	} {
		if _, err := do(tctx(t), c, tc.args...); err == nil || err.Error() != tc.want {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	// The refused pair changed nothing, not even the valid half.
	if m := get("maxmemory"); m["maxmemory"] != "0" {
		t.Errorf("maxmemory %s after refused CONFIG SETs, want 0", m["maxmemory"])
	}
	mustStr(t, c, "CONFIG", "RESETSTAT")
	if got := infoField(t, c, "stats", "total_commands_processed"); got != "1" { // the INFO itself
		t.Errorf("total_commands_processed %s after CONFIG RESETSTAT", got)
	}
}

// CONFIG GET requirepass never shows the password.
func TestConfigGetMasksPassword(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t, nodeOpts{})
	m, err := n.client(t).ConfigGet(tctx(t), "requirepass").Result()
	if err != nil || m["requirepass"] != "<hidden>" {
		t.Fatalf("CONFIG GET requirepass: %v, %v", m, err)
	}
}
