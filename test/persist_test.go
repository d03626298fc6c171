package test

import (
	"strings"
	"testing"
	"time"
)

// TestSaveAndShutdown: Redis's SAVE, BGSAVE and SHUTDOWN on a node. SAVE
// takes a snapshot, both are refused inside MULTI (no-multi) and make the
// transaction fail, and SHUTDOWN stops the process cleanly (status 0) with
// no reply, its data kept for the next start.
func TestSaveAndShutdown(t *testing.T) {
	t.Parallel()
	// A short log tail, so that a snapshot shows as a compacted log.
	n := startNode(t, nodeOpts{args: []string{"--trailing-logs", "8"}})
	c := n.client(t)
	ctx := tctx(t)
	for i := 0; i < 30; i++ {
		if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if first := infoField(t, c, "raft", "raft_first_index"); first != "1" {
		t.Fatalf("raft_first_index = %s before any snapshot, want 1", first)
	}
	if v, err := c.Do(ctx, "SAVE").Text(); err != nil || v != "OK" {
		t.Fatalf("SAVE = %q, %v; want OK", v, err)
	}
	if first := infoField(t, c, "raft", "raft_first_index"); first == "1" {
		t.Errorf("raft_first_index = 1 after SAVE: no snapshot compacted the log")
	}
	if v, err := c.Do(ctx, "BGSAVE", "SCHEDULE").Text(); err != nil || v != "Background saving started" {
		t.Errorf("BGSAVE SCHEDULE = %q, %v", v, err)
	}
	for _, bad := range [][]any{{"BGSAVE", "x"}, {"BGSAVE", "a", "b"}, {"SHUTDOWN", "x"}, {"SHUTDOWN", "SAVE", "NOSAVE"}, {"SHUTDOWN", "ABORT", "NOW"}} {
		if err := c.Do(ctx, bad...).Err(); err == nil || !(strings.Contains(err.Error(), "syntax error") || strings.Contains(err.Error(), "wrong number")) {
			t.Errorf("%v = %v, want a syntax or arity error", bad, err)
		}
	}
	if err := c.Do(ctx, "SHUTDOWN", "ABORT").Err(); err == nil || err.Error() != "ERR No shutdown in progress." {
		t.Errorf("SHUTDOWN ABORT = %v", err)
	}
	for _, cmd := range []string{"SAVE", "SHUTDOWN"} {
		raw := dialRaw(t, n.addr)
		for _, step := range []struct {
			args []string
			want string
		}{{[]string{"MULTI"}, "+OK"}, {[]string{"SET", "k", "changed"}, "+QUEUED"}, {[]string{cmd}, "-ERR Command not allowed inside a transaction"}, {[]string{"EXEC"}, "-EXECABORT"}} {
			raw.send(step.args...)
			if v := raw.read(); !strings.HasPrefix(string(v.kind)+v.str, step.want) {
				t.Errorf("%v in a transaction with %s = %v, want %s", step.args, cmd, v, step.want)
			}
		}
	}
	if v := c.Get(ctx, "k").Val(); v != "v" {
		t.Fatalf("k = %q after the aborted transactions, want v", v)
	}
	// A user without @admin may not.
	setUser(t, c, "app", "on", ">app-pass", "+@all", "-@admin", "~*", "&*")
	app := userClient(t, n, "app", "app-pass")
	if err := app.Do(ctx, "SHUTDOWN").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Fatalf("SHUTDOWN as a user without @admin = %v, want NOPERM", err)
	}

	raw := dialRaw(t, n.addr)
	raw.send("SHUTDOWN", "SAVE")
	if v, err := raw.tryRead(15 * time.Second); err == nil {
		t.Errorf("SHUTDOWN answered %v, want the connection closed", v)
	}
	select {
	case <-n.exitedCh():
	case <-time.After(20 * time.Second):
		t.Fatal("fenced still running 20 s after SHUTDOWN")
	}
	n.mu.Lock()
	exitErr := n.exitErr
	n.mu.Unlock()
	if exitErr != nil {
		t.Fatalf("fenced exited with %v after SHUTDOWN, want status 0", exitErr)
	}
	if !strings.Contains(n.stderr(), "SHUTDOWN requested") {
		t.Errorf("the log does not say SHUTDOWN stopped the node")
	}
	n.restart()
	if v := n.client(t).Get(ctx, "k").Val(); v != "v" {
		t.Errorf("after SHUTDOWN and a restart k = %q, want v", v)
	}
}
