package test

import (
	"fmt"
	"strings"
	"testing"
)

// CONFIG GET|SET: the settings under Redis's
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

// SLOWLOG: with slowlog-log-slower-than 0 every
// command is logged in Redis's entry shape (id, time, µs, arguments, client
// address and name), newest first, long arguments clipped as Redis clips
// them, AUTH and ACL never (their arguments carry passwords); max-len keeps
// the newest; RESET empties it; garbage arguments get Redis's errors.
func TestSlowlog(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.soloClient(t) // one connection: the entries' client address is its
	mustStr(t, c, "CONFIG", "SET", "slowlog-log-slower-than", "0")
	info := mustStr(t, c, "CLIENT", "INFO")
	addr := strings.TrimPrefix(strings.Fields(info)[1], "addr=")
	mustStr(t, c, "CLIENT", "SETNAME", "slowpoke")
	mustStr(t, c, "SET", "sl", strings.Repeat("x", 200))
	if _, err := do(tctx(t), c, "ACL", "SETUSER", "slowuser", "on", ">secret-password", "~*", "+@all"); err != nil {
		t.Fatal(err)
	}
	mustStr(t, c, "GET", "sl")
	v, err := do(tctx(t), c, "SLOWLOG", "GET", "3")
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := v.([]any)
	if len(entries) != 3 {
		t.Fatalf("SLOWLOG GET 3: %v", v)
	}
	args := func(e any) []string {
		var out []string
		for _, a := range e.([]any)[3].([]any) {
			out = append(out, a.(string))
		}
		return out
	}
	newest := entries[0].([]any)
	if got := args(newest); fmt.Sprint(got) != "[GET sl]" || newest[4] != addr || newest[5] != "slowpoke" {
		t.Errorf("newest entry %v, want GET sl from this client named slowpoke", newest)
	}
	if got := args(entries[1]); len(got) != 3 || got[0] != "SET" || got[2] != strings.Repeat("x", 128)+"... (72 more bytes)" {
		t.Errorf("second entry %q, want the SET with its value clipped at 128 bytes", got)
	}
	all, _ := do(tctx(t), c, "SLOWLOG", "GET", "-1")
	if strings.Contains(fmt.Sprint(all), "secret-password") || strings.Contains(fmt.Sprint(all), "SETUSER") {
		t.Errorf("ACL SETUSER logged: %v", all)
	}
	mustStr(t, c, "CONFIG", "SET", "slowlog-max-len", "2")
	if got := mustInt(t, c, "SLOWLOG", "LEN"); got != 2 {
		t.Errorf("SLOWLOG LEN %d with slowlog-max-len 2", got)
	}
	mustStr(t, c, "CONFIG", "SET", "slowlog-log-slower-than", "-1")
	mustStr(t, c, "SLOWLOG", "RESET")
	if got := mustInt(t, c, "SLOWLOG", "LEN"); got != 0 {
		t.Errorf("SLOWLOG LEN %d after RESET with logging off", got)
	}
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"SLOWLOG", "GET", "-2"}, "ERR count should be greater than or equal to -1"},
		{[]any{"SLOWLOG", "GET", "x"}, "ERR count should be greater than or equal to -1"},
		{[]any{"SLOWLOG", "LEN", "1"}, "ERR wrong number of arguments for 'slowlog|len' command"},
		{[]any{"SLOWLOG", "NOPE"}, "ERR unknown subcommand 'NOPE'. Try SLOWLOG HELP."},
		{[]any{"CONFIG", "SET", "slowlog-max-len", "-3"}, "ERR CONFIG SET failed (possibly related to argument 'slowlog-max-len') - argument must be a non-negative integer"},
	} {
		if _, err := do(tctx(t), c, tc.args...); err == nil || err.Error() != tc.want {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// Every "Try X HELP." in an unknown-subcommand error points to a HELP that
// answers (it used to point to CLIENT HELP and COMMAND HELP, which did not
// exist), in Redis's shape: lines, the first naming the command.
func TestHelpSubcommands(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	for _, cmd := range []string{"CLIENT", "COMMAND", "CONFIG", "SLOWLOG", "SCRIPT", "ACL", "CLUSTER", "LATENCY"} {
		_, err := do(tctx(t), c, cmd, "BOGUSSUB")
		if err == nil || !strings.Contains(err.Error(), "Try "+cmd+" HELP.") {
			t.Logf("%s BOGUSSUB: %v (no HELP offered)", cmd, err)
			continue
		}
		v, err := do(tctx(t), c, cmd, "HELP")
		lines, _ := v.([]any)
		if err != nil || len(lines) < 3 || !strings.HasPrefix(fmt.Sprint(lines[0]), cmd+" <subcommand>") {
			t.Errorf("%s HELP, offered by its error: %v, %v", cmd, v, err)
		}
	}
}

// LATENCY answers as Redis does with its latency monitor off, which is
// what fenced keeps: tools that poll LATENCY LATEST (redis_exporter) get an
// empty answer, not an error.
func TestLatency(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"LATENCY", "LATEST"}, "[]"},
		{[]any{"LATENCY", "HISTORY", "command"}, "[]"},
		{[]any{"LATENCY", "RESET"}, "0"},
		{[]any{"LATENCY", "RESET", "command", "fork"}, "0"},
		{[]any{"CONFIG", "GET", "latency-monitor-threshold"}, "map[latency-monitor-threshold:0]"},
	} {
		v, err := do(tctx(t), c, tc.args...)
		if err != nil || fmt.Sprint(v) != tc.want {
			t.Errorf("%v = %v, %v; want %s", tc.args, v, err, tc.want)
		}
	}
	if s := mustStr(t, c, "LATENCY", "DOCTOR"); !strings.Contains(s, "disabled") {
		t.Errorf("LATENCY DOCTOR = %q", s)
	}
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"LATENCY"}, "ERR wrong number of arguments for 'latency' command"},
		{[]any{"LATENCY", "LATEST", "x"}, "ERR wrong number of arguments for 'latency|latest' command"},
		{[]any{"LATENCY", "HISTORY"}, "ERR wrong number of arguments for 'latency|history' command"},
		{[]any{"LATENCY", "FOO"}, "ERR unknown subcommand 'FOO'. Try LATENCY HELP."},
		{[]any{"CONFIG", "SET", "latency-monitor-threshold", "100"}, "ERR"},
	} {
		if _, err := do(tctx(t), c, tc.args...); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
