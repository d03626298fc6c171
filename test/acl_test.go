package test

// ACL users against real processes: what each user may run, on which keys
// and channels, that the users are replicated (through any node, across a
// restart and a snapshot install), and that a session belongs to the user
// that opened it.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/internal/plant"
)

// userClient is a go-redis client of n authenticated as user.
func userClient(t testing.TB, n *node, user, pass string) *redis.Client {
	t.Helper()
	o := n.options(3)
	o.Username, o.Password = user, pass
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

// asUser dials n and authenticates as user on a raw connection.
func asUser(t testing.TB, n *node, user, pass string) *rawConn {
	t.Helper()
	c := dialRaw(t, n.addr)
	c.send("AUTH", user, pass)
	if v := c.read(); v.kind != '+' {
		t.Fatalf("AUTH %s: %v", user, v)
	}
	return c
}

func setUser(t testing.TB, admin *redis.Client, name string, rules ...string) {
	t.Helper()
	args := append([]any{"ACL", "SETUSER", name}, anys(rules)...)
	if _, err := do(tctx(t), admin, args...); err != nil {
		t.Fatalf("ACL SETUSER %s %v: %v", name, rules, err)
	}
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// aclMatrixProblems runs every command of the table, and the admin
// subcommands, as a user with +@all -@admin, each on a connection of its
// own, and reports each one refused when it is not admin or run when it
// is, and each ACL DRYRUN that disagrees with the real answer.
func aclMatrixProblems(t *testing.T, n *node, admin *redis.Client) []string {
	t.Helper()
	setUser(t, admin, "app", "on", ">app-pass", "+@all", "-@admin", "~*", "&*")
	type call struct {
		args  []string
		admin bool
	}
	var calls []call
	for _, spec := range commands.New().All() {
		if spec.Has(commands.NoAuth) {
			continue // AUTH, HELLO, QUIT, RESET: every connection's
		}
		calls = append(calls, call{gateArgs(spec), spec.Has(commands.Admin)})
	}
	calls = append(calls,
		call{[]string{"CLIENT", "LIST"}, true}, call{[]string{"CLIENT", "KILL", "ID", "1"}, true},
		call{[]string{"SCRIPT", "FLUSH"}, true}, call{[]string{"ACL", "SETUSER", "x"}, true},
		call{[]string{"ACL", "LIST"}, true}, call{[]string{"ACL", "DELUSER", "x"}, true},
		call{[]string{"CLIENT", "SETNAME", "x"}, false}, call{[]string{"SCRIPT", "EXISTS", "x"}, false},
		call{[]string{"ACL", "WHOAMI"}, false})
	if len(calls) < 60 {
		t.Fatalf("only %d commands to try: is the table read?", len(calls))
	}
	var problems []string
	for _, cl := range calls {
		c := asUser(t, n, "app", "app-pass")
		c.send(cl.args...)
		v, err := c.tryRead(15 * time.Second)
		c.nc.Close()
		if err != nil {
			problems = append(problems, fmt.Sprintf("%q: %v", cl.args, err))
			continue
		}
		refused := v.kind == '-' && strings.HasPrefix(v.str, "NOPERM")
		if refused != cl.admin {
			problems = append(problems, fmt.Sprintf("%q as +@all -@admin: %v (admin %v)", cl.args, v, cl.admin))
		}
		dry, err := do(tctx(t), admin, append([]any{"ACL", "DRYRUN", "app"}, anys(cl.args)...)...)
		if err != nil {
			problems = append(problems, fmt.Sprintf("ACL DRYRUN app %q: %v", cl.args, err))
			continue
		}
		if (dry == "OK") == refused {
			problems = append(problems, fmt.Sprintf("ACL DRYRUN app %q = %v, but the command answered %v", cl.args, dry, v))
		}
	}
	return problems
}

// TestACLMatrix: a user with +@all -@admin may run every command exactly
// when it is not admin, and ACL DRYRUN agrees with every answer.
func TestACLMatrix(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t, nodeOpts{})
	for _, p := range aclMatrixProblems(t, n, n.client(t)) {
		t.Error(p)
	}
}

// TestACLKeysChannelsScripts: key patterns cover keys and lock names,
// EVAL's KEYS and whatever a script touches through redis.call; channel
// patterns cover pub/sub.
func TestACLKeysChannelsScripts(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t, nodeOpts{})
	admin := n.client(t)
	setUser(t, admin, "lk", "on", ">lk-pass", "+@all", "-@admin", "~app:*", "&chan:*")
	c := userClient(t, n, "lk", "lk-pass")
	ctx := tctx(t)
	noperm := func(args ...any) {
		t.Helper()
		if _, err := c.Do(ctx, args...).Result(); !isCode(err, "NOPERM") {
			t.Errorf("%v: %v, want -NOPERM", args, err)
		}
	}
	allowed := func(args ...any) {
		t.Helper()
		if _, err := c.Do(ctx, args...).Result(); isCode(err, "NOPERM") {
			t.Errorf("%v: %v, want it allowed", args, err)
		}
	}
	allowed("SET", "app:k", "v")
	noperm("SET", "other", "v")
	noperm("GET", "other")
	noperm("MSET", "app:a", "1", "other", "2")
	noperm("FLOCK", "other", "s")
	allowed("FLOCK", "app:lock", "s") // -NOSESSION: past the ACL
	noperm("FENCE", "other")
	noperm("EVAL", "return 1", "1", "other")
	allowed("EVAL", "return redis.call('GET', KEYS[1])", "1", "app:k")
	if _, err := c.Do(ctx, "EVAL", "return redis.call('SET', 'other', 'x')", "0").Result(); err == nil || !strings.Contains(err.Error(), "can't access at least one of the keys") {
		t.Errorf("a script touching a key outside ~app:*: %v", err)
	}
	allowed("PUBLISH", "chan:x", "m")
	noperm("PUBLISH", "other", "m")
	noperm("SUBSCRIBE", "other")
	for _, k := range []string{"other", "pwned"} {
		if v, err := admin.Exists(ctx, k).Result(); err != nil || v != 0 {
			t.Errorf("key %s exists after the refusals: %v %v", k, v, err)
		}
	}
	for args, want := range map[string]string{"GET other": "no permissions to access one of the keys", "GET app:k": "OK", "KEYS *": "no permissions to run the 'keys' command"} {
		v, err := do(ctx, admin, append([]any{"ACL", "DRYRUN", "lk"}, anys(strings.Fields(args))...)...)
		if err != nil || !strings.Contains(fmt.Sprint(v), want) {
			t.Errorf("ACL DRYRUN lk %s = %v %v, want %q", args, v, err, want)
		}
	}
	if v, err := do(ctx, admin, "ACL", "LOG", "1"); err != nil || !strings.Contains(fmt.Sprint(v), "lk") {
		t.Errorf("ACL LOG 1 = %v %v, want lk's last refusal", v, err)
	}
}

// ownershipProblems checks, on n (and through via, which may be another
// node), that user B presenting user A's session id gets -NOSESSION from
// every session command and changes nothing, that LOCK.INFO shows A's id
// only to A and the admin, and that the admin may kill it.
func ownershipProblems(t *testing.T, n, via *node) []string {
	t.Helper()
	ctx := tctx(t)
	admin := n.client(t)
	setUser(t, admin, "ua", "on", ">a-pass", "+@all", "-@admin", "~*")
	setUser(t, admin, "ub", "on", ">b-pass", "+@all", "-@admin", "~*")
	a, b := userClient(t, n, "ua", "a-pass"), userClient(t, via, "ub", "b-pass")
	sess := openSession(t, a, 60000, "a's")
	tok := mustInt(t, a, "FLOCK", "owned", sess)
	var problems []string
	for _, args := range [][]any{
		{"FLOCK", "other", sess}, {"FUNLOCK", "owned", sess}, {"SESSION.HEARTBEAT", sess},
		{"SESSION.INFO", sess}, {"SESSION.KILL", sess},
	} {
		v, err := b.Do(ctx, args...).Result()
		if args[0] == "SESSION.KILL" && err == nil && v == int64(0) {
			continue // as for a session that does not exist
		}
		if !isCode(err, "NOSESSION") {
			problems = append(problems, fmt.Sprintf("user B: %v = %v %v, want -NOSESSION", args, v, err))
		}
	}
	if v, err := a.Do(ctx, "FENCE", "owned", sess).Result(); err != nil || v != tok {
		problems = append(problems, fmt.Sprintf("after B's attempts A's FENCE = %v %v, want %d", v, err, tok))
	}
	holderFor := func(c *redis.Client) string {
		li, err := c.Do(ctx, "LOCK.INFO", "owned").Result()
		m, merr := asMap(li)
		if err != nil || merr != nil {
			return fmt.Sprintf("error %v %v", err, merr)
		}
		return fmt.Sprint(m["holder"])
	}
	if h := holderFor(b); strings.Contains(h, sess) {
		problems = append(problems, "LOCK.INFO shows A's session id to B")
	}
	for who, c := range map[string]*redis.Client{"A": a, "the admin": admin} {
		if h := holderFor(c); h != sess {
			problems = append(problems, fmt.Sprintf("LOCK.INFO holder for %s = %s, want %s", who, h, sess))
		}
	}
	if v, err := admin.Do(ctx, "SESSION.KILL", sess).Result(); err != nil || v != int64(1) {
		problems = append(problems, fmt.Sprintf("the admin's SESSION.KILL of A's session = %v %v, want 1", v, err))
	}
	return problems
}

// TestACLReplicatedSessionsOwned: on a three-node cluster with a password,
// ACL users set through a follower hold on every node, across a restart
// and on a node that got the state from a snapshot; sessions belong to the
// user that opened them, through the leader and through a follower.
func TestACLReplicatedSessionsOwned(t *testing.T) {
	t.Parallel()
	pw := []string{"--requirepass", testPass, "--snapshot-threshold", "64", "--trailing-logs", "8"}
	c := startClusterWith(t, 3, testPass, pw...)
	leader := c.leader(20 * time.Second)
	follower := c.followers(leader)[0]
	setUser(t, follower.client(t), "rep", "on", ">rep-pass", "+@all", "-@admin", "~rep:*")
	authOn := func(n *node) error {
		return userClient(t, n, "rep", "rep-pass").Set(tctx(t), "rep:k", "v", 0).Err()
	}
	for _, n := range c.nodes {
		eventually(t, 10*time.Second, "user rep on "+n.addr, func() bool { return authOn(n) == nil })
	}
	for _, p := range ownershipProblems(t, leader, follower) {
		t.Error(p)
	}
	// Enough entries for snapshots, then a restart and a new node.
	lc := leader.client(t)
	for i := range 100 {
		mustStr(t, lc, "SET", fmt.Sprintf("fill:%d", i), "x")
	}
	mustStr(t, lc, "RAFT.SNAPSHOT")
	follower.term()
	follower.restart()
	if err := authOn(follower); err != nil {
		t.Errorf("after a restart: %v", err)
	}
	n4 := c.add("n4", pw...)
	c.waitVoters(4)
	eventually(t, 20*time.Second, "user rep on the new node", func() bool { return authOn(n4) == nil })
	if !strings.Contains(n4.stderr(), "installed a snapshot") {
		t.Errorf("the new node did not catch up by snapshot:\n%s", n4.stderr())
	}
	if _, err := do(tctx(t), lc, "ACL", "DELUSER", "rep"); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.nodes {
		eventually(t, 10*time.Second, "user rep gone from "+n.addr, func() bool { return authOn(n) != nil })
	}
}

// TestACLPlantedCaught: the planted security bugs of ACL are caught by the
// checks above (the admin check skipped, session ownership ignored), which
// find nothing on the real binary.
func TestACLPlantedCaught(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		bug   plant.Bug
		check func(*testing.T, *node) []string
	}{
		{plant.AdminSkipped, func(t *testing.T, n *node) []string { return aclMatrixProblems(t, n, n.client(t)) }},
		{plant.OwnershipIgnored, func(t *testing.T, n *node) []string { return ownershipProblems(t, n, n) }},
	} {
		n := startAuthNode(t, nodeOpts{bin: chaosBinary(t, "plant", false), env: []string{"FENCED_PLANT=" + string(tc.bug)}})
		if problems := tc.check(t, n); len(problems) == 0 {
			t.Errorf("planted bug %s went undetected", tc.bug)
		} else {
			t.Logf("planted bug %s: %d problems, first %s", tc.bug, len(problems), problems[0])
		}
	}
	n := startAuthNode(t, nodeOpts{})
	if p := ownershipProblems(t, n, n); len(p) > 0 {
		t.Errorf("the real binary: %v", p)
	}
}

// TestACLDefaultUserKeepsPassword: changing a rule of the default user on a
// cluster with --requirepass keeps the password: connections still need
// it, and it still works.
func TestACLDefaultUserKeepsPassword(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t, nodeOpts{})
	setUser(t, n.client(t), "default", "~*", "+@all")
	c := dialRaw(t, n.addr)
	defer c.nc.Close()
	c.send("GET", "k")
	if v := c.read(); v.kind != '-' || !strings.HasPrefix(v.str, "NOAUTH") {
		t.Errorf("a new connection after ACL SETUSER default: %v, want -NOAUTH", v)
	}
	c.send("AUTH", "anything")
	if v := c.read(); v.kind != '-' {
		t.Errorf("AUTH with a wrong password after ACL SETUSER default: %v", v)
	}
	if v := mustStr(t, n.client(t), "SET", "k", "v"); v != "OK" {
		t.Errorf("with the password: %q", v)
	}
}
