package test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ctlResult is what one `fenced ctl` run printed and its exit status.
type ctlResult struct {
	stdout, stderr string
	code           int
}

func (r ctlResult) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// ctlEnv is the environment of a ctl run: the tests' own without
// FENCED_REQUIREPASS, plus env.
func ctlEnv(env []string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FENCED_REQUIREPASS=") {
			out = append(out, kv)
		}
	}
	return append(out, env...)
}

// runCtl runs `fenced ctl ARGS` to its exit with stdin; a run that does
// not exit within a minute fails the test (a hang).
func runCtl(t *testing.T, env []string, stdin io.Reader, args ...string) ctlResult {
	t.Helper()
	bin := binPath(t) // before the clock starts: the first call builds it
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"ctl"}, args...)...)
	cmd.Env = ctlEnv(env)
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("fenced ctl %q did not exit:\n%s\n%s", args, out.String(), errb.String())
	}
	res := ctlResult{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("fenced ctl %q: %v", args, err)
	}
	return res
}

// mustCtl runs `fenced ctl ARGS`, which must exit 0.
func mustCtl(t *testing.T, args ...string) ctlResult {
	t.Helper()
	r := runCtl(t, nil, nil, args...)
	if r.code != 0 {
		t.Fatalf("fenced ctl %s: %v", strings.Join(args, " "), r)
	}
	return r
}

// ctlJSON runs `fenced ctl -w json ARGS`, which must exit 0, and decodes
// its output into v.
func ctlJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	r := mustCtl(t, append([]string{"-w", "json"}, args...)...)
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("fenced ctl %s: not JSON: %v\n%s", strings.Join(args, " "), err, r.stdout)
	}
}

// ctlProc is a `fenced ctl` running in the background; its stdout comes
// line by line.
type ctlProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	lines  chan string
	stderr bytes.Buffer
	done   chan struct{}
	code   int
}

func startCtl(t *testing.T, args ...string) *ctlProc {
	t.Helper()
	p := &ctlProc{t: t, cmd: exec.Command(binPath(t), append([]string{"ctl"}, args...)...),
		lines: make(chan string, 100), done: make(chan struct{})}
	p.cmd.Env = ctlEnv(nil)
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
		err := p.cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			p.code = ee.ExitCode()
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// line is the next line the process printed.
func (p *ctlProc) line() string {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			p.t.Fatalf("fenced ctl %q ended its output; stderr:\n%s", p.cmd.Args, p.stderr.String())
		}
		return l
	case <-time.After(time.Minute):
		p.t.Fatalf("fenced ctl %q printed nothing for a minute", p.cmd.Args)
	}
	return ""
}

// wait returns the exit status and the rest of stdout. Its output ends
// when every process that holds it has exited: ctl and CMD.
func (p *ctlProc) wait() (int, string) {
	p.t.Helper()
	var rest []string
	deadline := time.After(time.Minute)
	for {
		select {
		case l, ok := <-p.lines:
			if ok {
				rest = append(rest, l)
				continue
			}
		case <-deadline:
			p.t.Fatalf("fenced ctl %q (or its CMD) did not exit; stderr:\n%s", p.cmd.Args, p.stderr.String())
		}
		break
	}
	<-p.done
	return p.code, strings.Join(rest, "\n")
}

func (p *ctlProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// token parses a fencing token that CMD printed.
func token(t *testing.T, s string) int64 {
	t.Helper()
	tok, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || tok <= 0 {
		t.Fatalf("want a positive token, got %q", s)
	}
	return tok
}

// lockOf is LOCK.INFO's holder (nil when free or not shown) and token
// (nil when free) and its waiters.
func lockOf(t *testing.T, c *redis.Client, name string) (holder, tok any, waiters []any) {
	t.Helper()
	v, err := do(tctx(t), c, "LOCK.INFO", name)
	m, merr := asMap(v)
	if err != nil || merr != nil {
		t.Fatalf("LOCK.INFO %s: %v %v %v", name, v, err, merr)
	}
	waiters, _ = m["waiters"].([]any)
	return m["holder"], m["token"], waiters
}

// wantFree fails unless name is free and no session is open: ctl released
// the lock and closed its session itself.
func wantFree(t *testing.T, c *redis.Client, name string) {
	t.Helper()
	if h, tok, _ := lockOf(t, c, name); h != nil || tok != nil {
		t.Errorf("%s is held by %v (token %v), want free", name, h, tok)
	}
	if ids, err := do(tctx(t), c, "SESSION.LIST"); err != nil || len(ids.([]any)) != 0 {
		t.Errorf("SESSION.LIST = %v, %v; want no session left", ids, err)
	}
}

// TestCtlLock: `fenced ctl lock NAME -- CMD` gives CMD a token and the
// lock's name, passes stdin and the exit status through, and releases the
// lock and closes its session when CMD exits (the TTL is long, so a free
// lock can only come from the release); each run's token is larger.
func TestCtlLock(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	ep := []string{"--endpoints", n.addr}
	lock := func(stdin io.Reader, cmd ...string) ctlResult {
		return runCtl(t, nil, stdin, append(append(ep, "lock", "--ttl", "60s", "orders", "--"), cmd...)...)
	}

	r := lock(nil, "sh", "-c", "echo $FENCED_TOKEN")
	if r.code != 0 {
		t.Fatalf("lock: %v", r)
	}
	first := token(t, r.stdout)
	wantFree(t, c, "orders")

	r = lock(nil, "sh", "-c", `echo "$FENCED_LOCK $FENCED_TOKEN"`)
	f := strings.Fields(r.stdout)
	if r.code != 0 || len(f) != 2 || f[0] != "orders" {
		t.Fatalf("FENCED_LOCK: %v", r)
	}
	if second := token(t, f[1]); second <= first {
		t.Errorf("second token %d, want above the first %d", second, first)
	}
	wantFree(t, c, "orders")

	if r = lock(strings.NewReader("from stdin\n"), "cat"); r.code != 0 || r.stdout != "from stdin\n" {
		t.Errorf("stdin to CMD: %v", r)
	}
	if r = lock(nil, "sh", "-c", "echo out; echo err >&2; exit 7"); r.code != 7 || r.stdout != "out\n" || !strings.Contains(r.stderr, "err") {
		t.Errorf("CMD's exit 7 and streams: %v", r)
	}
	wantFree(t, c, "orders")
	if r = lock(nil, "no-such-command-fenced"); r.code != 127 || !strings.Contains(r.stderr, "no-such-command-fenced") {
		t.Errorf("missing CMD: %v, want exit 127 naming it", r)
	}
	wantFree(t, c, "orders")
}

// TestCtlLockCommandKilled: CMD killed by a signal makes ctl exit 128+9
// and release the lock at once.
func TestCtlLockCommandKilled(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	r := runCtl(t, nil, nil, "--endpoints", n.addr, "lock", "--ttl", "60s", "orders", "--", "sh", "-c", "echo $FENCED_TOKEN; kill -9 $$")
	if r.code != 128+9 {
		t.Errorf("exit %d, want %d: %v", r.code, 128+9, r)
	}
	token(t, r.stdout)
	wantFree(t, n.client(t), "orders")
}

// TestCtlLockSignal: SIGTERM to ctl reaches CMD; ctl exits with CMD's
// status once CMD has exited, and releases the lock.
func TestCtlLockSignal(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	p := startCtl(t, "--endpoints", n.addr, "lock", "--ttl", "60s", "orders", "--",
		// The trap before the token: the test signals once it reads the
		// token, and a TERM between the echo and the trap killed sh by
		// default (CI 12:16: exit 143, no "got-term").
		"sh", "-c", `trap 'echo got-term; exit 3' TERM; echo $FENCED_TOKEN; while :; do sleep 0.05; done`)
	tok := token(t, p.line())
	if _, held, _ := lockOf(t, c, "orders"); held != tok {
		t.Fatalf("while CMD runs the lock's token is %v, want %d", held, tok)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	code, rest := p.wait()
	if code != 3 || rest != "got-term" {
		t.Errorf("exit %d, output %q; want 3 and got-term\n%s", code, rest, p.stderr.String())
	}
	wantFree(t, c, "orders")
}

// TestCtlLockKilled: ctl killed with SIGKILL cannot release; the session
// expires after its TTL on the server, which frees the lock, and CMD is
// killed with ctl.
func TestCtlLockKilled(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	p := startCtl(t, "--endpoints", n.addr, "lock", "--ttl", "1s", "orders", "--",
		"sh", "-c", "echo $FENCED_TOKEN; echo $$; exec sleep 120")
	tok := token(t, p.line())
	pid, err := strconv.Atoi(p.line())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) }) // should the check below fail
	holder, held, _ := lockOf(t, c, "orders")
	if held != tok || holder == nil {
		t.Fatalf("while CMD runs: holder %v token %v, want a session with %d", holder, held, tok)
	}
	p.cmd.Process.Kill()
	eventually(t, 30*time.Second, "CMD to be killed with ctl", func() bool { return processGone(pid) })
	p.wait()
	eventually(t, 30*time.Second, "the session to expire", func() bool {
		_, err := do(tctx(t), c, "SESSION.INFO", holder)
		return isCode(err, "NOSESSION")
	})
	if h, tk, _ := lockOf(t, c, "orders"); h != nil || tk != nil {
		t.Errorf("after the session expired: holder %v token %v, want free", h, tk)
	}
}

// processGone reports whether pid has exited (a zombie counts: nothing
// may reap it in a container).
func processGone(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	_, after, _ := strings.Cut(string(b), ") ")
	return strings.HasPrefix(after, "Z")
}

// TestCtlLockExclusion: a second ctl lock on the same name queues behind
// the first, runs only after the first CMD has finished, and gets a larger
// token.
func TestCtlLockExclusion(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	dir := t.TempDir()
	goFile, doneFile := filepath.Join(dir, "go"), filepath.Join(dir, "a-done")
	a := startCtl(t, "--endpoints", n.addr, "lock", "orders", "--",
		"sh", "-c", `echo $FENCED_TOKEN; while [ ! -e "$0" ]; do sleep 0.05; done; touch "$1"`, goFile, doneFile)
	tokA := token(t, a.line())
	b := startCtl(t, "--endpoints", n.addr, "lock", "orders", "--",
		"sh", "-c", `test -e "$0" && echo $FENCED_TOKEN`, doneFile)
	eventually(t, 30*time.Second, "the second ctl to queue", func() bool {
		_, _, ws := lockOf(t, c, "orders")
		return len(ws) == 1
	})
	if b.exited() {
		t.Fatalf("the second ctl exited while the first held the lock: %s", b.stderr.String())
	}
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _ := a.wait(); code != 0 {
		t.Errorf("first: exit %d\n%s", code, a.stderr.String())
	}
	code, out := b.wait()
	if code != 0 {
		t.Fatalf("second: exit %d, output %q (its CMD runs only after the first's finished)\n%s", code, out, b.stderr.String())
	}
	if tokB := token(t, out); tokB <= tokA {
		t.Errorf("second token %d, want above the first %d", tokB, tokA)
	}
	wantFree(t, c, "orders")
}

// TestCtlLockWait: --wait gives up without running CMD; a signal while
// waiting abandons the wait; neither leaves a session or a waiter behind.
func TestCtlLockWait(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	dir := t.TempDir()
	goFile := filepath.Join(dir, "go")
	a := startCtl(t, "--endpoints", n.addr, "lock", "orders", "--",
		"sh", "-c", `echo $FENCED_TOKEN; while [ ! -e "$0" ]; do sleep 0.05; done`, goFile)
	token(t, a.line())
	sessions := func() int {
		ids, err := do(tctx(t), c, "SESSION.LIST")
		if err != nil {
			t.Fatal(err)
		}
		return len(ids.([]any))
	}

	r := runCtl(t, nil, nil, "--endpoints", n.addr, "lock", "--wait", "200ms", "orders", "--", "echo", "ran")
	if r.code != 1 || strings.Contains(r.stdout, "ran") || !strings.Contains(r.stderr, "not obtained") {
		t.Errorf("--wait 200ms against a held lock: %v", r)
	}

	b := startCtl(t, "--endpoints", n.addr, "lock", "orders", "--", "echo", "ran")
	eventually(t, 30*time.Second, "the second ctl to queue", func() bool {
		_, _, ws := lockOf(t, c, "orders")
		return len(ws) == 1
	})
	b.cmd.Process.Signal(syscall.SIGINT)
	if code, out := b.wait(); code != 128+int(syscall.SIGINT) || out != "" {
		t.Errorf("SIGINT while waiting: exit %d, output %q\n%s", code, out, b.stderr.String())
	}
	if _, _, ws := lockOf(t, c, "orders"); len(ws) != 0 || sessions() != 1 {
		t.Errorf("after the abandoned waits: waiters %v, %d sessions; want none and the holder's", ws, sessions())
	}
	os.WriteFile(goFile, nil, 0o644)
	a.wait()
	wantFree(t, c, "orders")
}

// TestCtlLockSessionLost: when the session is lost while CMD runs (killed
// here by an admin), ctl stops CMD with SIGTERM and exits 1.
func TestCtlLockSessionLost(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	p := startCtl(t, "--endpoints", n.addr, "lock", "--ttl", "2s", "orders", "--",
		"sh", "-c", `echo $FENCED_TOKEN; trap 'echo got-term; exit 0' TERM; while :; do sleep 0.05; done`)
	token(t, p.line())
	holder, _, _ := lockOf(t, c, "orders")
	id, ok := holder.(string)
	if !ok {
		t.Fatalf("LOCK.INFO holder %v", holder)
	}
	if r := mustCtl(t, "--endpoints", n.addr, "session", "kill", id); !strings.Contains(r.stdout, id) {
		t.Errorf("session kill printed %q", r.stdout)
	}
	code, rest := p.wait()
	if code != 1 || rest != "got-term" || !strings.Contains(p.stderr.String(), "lost") {
		t.Errorf("after the session was killed: exit %d, output %q; want 1 and got-term\n%s", code, rest, p.stderr.String())
	}
	wantFree(t, c, "orders")
}

// ctlMember is a member of `member list -w json`.
type ctlMember struct {
	ID, RaftAddr, ClientAddr string
	Voter, Leader            bool
}

func (m *ctlMember) UnmarshalJSON(b []byte) error {
	var v struct {
		ID         string `json:"id"`
		RaftAddr   string `json:"raft_addr"`
		ClientAddr string `json:"client_addr"`
		Voter      bool   `json:"voter"`
		Leader     bool   `json:"leader"`
	}
	err := json.Unmarshal(b, &v)
	*m = ctlMember(v)
	return err
}

// ctlEndpoint is an entry of `endpoint status -w json`.
type ctlEndpoint struct {
	Endpoint string `json:"endpoint"`
	ID       string `json:"id"`
	Version  string `json:"version"`
	Cluster  int64  `json:"cluster_version"`
	Known    int64  `json:"cluster_version_known"`
	IsLeader bool   `json:"is_leader"`
	LeaderID string `json:"leader_id"`
	Term     int64  `json:"term"`
	Applied  int64  `json:"applied_index"`
}

// TestCtlCluster: member list|add|remove, endpoint status|health and
// session list|kill against a 3-node cluster; a stopped node shows up as
// an error of endpoint status and health.
func TestCtlCluster(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	var addrs []string
	for _, n := range cl.nodes {
		addrs = append(addrs, n.addr)
	}
	all := strings.Join(addrs, ",")

	members := func(ep string) []ctlMember {
		var ms []ctlMember
		ctlJSON(t, &ms, "--endpoints", ep, "member", "list")
		return ms
	}
	ms := members(addrs[1])
	var leaders, ids []string
	for _, m := range ms {
		ids = append(ids, m.ID)
		if m.Leader {
			leaders = append(leaders, m.ID)
		}
		if i := slices.Index(cl.ids, m.ID); i < 0 || !m.Voter || m.ClientAddr != addrs[i] || m.RaftAddr != cl.nodes[i].raftAddr {
			t.Errorf("member %+v: want a voter of the cluster with its addresses", m)
		}
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"n1", "n2", "n3"}) || len(leaders) != 1 {
		t.Fatalf("member list: ids %v, leaders %v; want n1-n3 and one leader", ids, leaders)
	}
	if r := mustCtl(t, "--endpoints", addrs[2], "member", "list"); strings.Count(r.stdout, "\n") != 4 || !strings.Contains(r.stdout, "CLIENT ADDRESS") {
		t.Errorf("member list as a table:\n%s", r.stdout)
	}

	// Every endpoint reports the same leader and term (read again should
	// an election fall between two of them).
	var eps []ctlEndpoint
	agree := func() bool {
		eps = nil
		ctlJSON(t, &eps, "--endpoints", all, "endpoint", "status")
		if len(eps) != 3 {
			t.Fatalf("endpoint status: %d entries, want 3: %+v", len(eps), eps)
		}
		n := 0
		for _, e := range eps {
			if e.IsLeader {
				n++
			}
			if e.LeaderID != eps[0].LeaderID || e.Term != eps[0].Term || e.LeaderID == "" {
				return false
			}
		}
		return n == 1
	}
	eventually(t, 30*time.Second, "the endpoints to agree on the leader and term", agree)
	for i, e := range eps {
		if e.Endpoint != addrs[i] || e.ID != cl.ids[i] || e.Version == "" || e.Applied <= 0 || e.Cluster < 1 || e.Known < e.Cluster {
			t.Errorf("endpoint status entry %d: %+v", i, e)
		}
	}
	var viaCluster []ctlEndpoint
	ctlJSON(t, &viaCluster, "--endpoints", addrs[0], "endpoint", "status", "--cluster")
	if len(viaCluster) != 3 {
		t.Errorf("endpoint status --cluster: %+v, want the 3 members", viaCluster)
	}
	if r := mustCtl(t, "--endpoints", all, "endpoint", "health"); strings.Count(r.stdout, "true") != 3 {
		t.Errorf("endpoint health:\n%s", r.stdout)
	}

	// A session opened by a client, listed and killed through other nodes.
	c := cl.nodes[0].client(t)
	id, err := c.Do(tctx(t), "SESSION.OPEN", "TTL", 60000, "NAME", "ctl-test").Text()
	if err != nil {
		t.Fatal(err)
	}
	type session struct {
		ID    string `json:"id"`
		Name  string `json:"name"`
		TTLMs int64  `json:"ttl_ms"`
	}
	var sessions []session
	ctlJSON(t, &sessions, "--endpoints", addrs[1], "session", "list")
	if !slices.Contains(sessions, session{id, "ctl-test", 60000}) {
		t.Errorf("session list %+v lacks %s", sessions, id)
	}
	mustCtl(t, "--endpoints", addrs[2], "session", "kill", id)
	if _, err := do(tctx(t), c, "SESSION.INFO", id); !isCode(err, "NOSESSION") {
		t.Errorf("SESSION.INFO after session kill: %v, want -NOSESSION", err)
	}
	if r := runCtl(t, nil, nil, "--endpoints", addrs[2], "session", "kill", id); r.code != 1 || !strings.Contains(r.stderr, "no such session") {
		t.Errorf("session kill of a killed session: %v", r)
	}

	// member add and remove, with a node that is never started: it stays
	// a non-voter, which costs the quorum nothing.
	raftAddr, clientAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t)), fmt.Sprintf("127.0.0.1:%d", freePort(t))
	mustCtl(t, "--endpoints", addrs[1], "member", "add", "n9", raftAddr, clientAddr)
	eventually(t, 30*time.Second, "n9 to join the configuration", func() bool { ms = members(addrs[0]); return len(ms) == 4 })
	if i := slices.IndexFunc(ms, func(m ctlMember) bool { return m.ID == "n9" }); len(ms) != 4 || i < 0 || ms[i].Voter || ms[i].RaftAddr != raftAddr || ms[i].ClientAddr != clientAddr {
		t.Fatalf("after member add: %+v", ms)
	}
	mustCtl(t, "--endpoints", addrs[2], "member", "remove", "n9")
	eventually(t, 30*time.Second, "n9 to leave the configuration", func() bool { return len(members(addrs[0])) == 3 })
	if r := runCtl(t, nil, nil, "--endpoints", addrs[0], "member", "remove", "n9"); r.code != 1 || !strings.Contains(r.stderr, `no member "n9"`) {
		t.Errorf("member remove of a non-member: %v", r)
	}

	// A stopped node: its line is an error, the others are still shown.
	down := cl.nodes[2]
	down.term()
	for _, cmd := range []string{"status", "health"} {
		r := runCtl(t, nil, nil, "--endpoints", all, "--timeout", "2s", "endpoint", cmd)
		if r.code != 1 || !strings.Contains(r.stderr, down.addr) || !strings.Contains(r.stdout, addrs[0]) || !strings.Contains(r.stdout, addrs[1]) {
			t.Errorf("endpoint %s with %s stopped: %v", cmd, down.addr, r)
		}
	}
	// Commands go to the first endpoint that answers.
	if ms := members(down.addr + "," + addrs[0]); len(ms) != 3 {
		t.Errorf("member list past a stopped endpoint: %+v", ms)
	}
}

// TestCtlBadInput: a bad command line, a bad or unreachable endpoint and
// bad credentials each end with a clear error and a non-zero status, in
// bounded time, and change nothing.
func TestCtlBadInput(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{env: []string{"FENCED_REQUIREPASS=" + testPass}, password: testPass})
	c := n.client(t)
	dead := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	pass := []string{"FENCED_REQUIREPASS=" + testPass}
	const badPass = "not-the-password-4711"
	ep := "--endpoints=" + n.addr
	lockCmd := []string{"lock", "orders", "--", "echo", "ran"}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		code int
		want string // in the output (stderr, or endpoint health's table)
	}{
		{"no command", pass, []string{ep}, 2, "no command"},
		{"unknown command", pass, []string{ep, "frobnicate", "now"}, 2, `unknown command "frobnicate now"`},
		{"group alone", pass, []string{ep, "member"}, 2, `"member" needs a subcommand`},
		{"unknown flag", pass, []string{ep, "--bogus", "member", "list"}, 2, "-bogus"},
		{"lock without NAME", pass, []string{ep, "lock"}, 2, "lock needs a NAME"},
		{"lock without --", pass, []string{ep, "lock", "orders", "echo", "ran"}, 2, "the command goes after --"},
		{"lock without CMD", pass, []string{ep, "lock", "orders", "--"}, 2, "no command after --"},
		{"lock NAME only", pass, []string{ep, "lock", "orders"}, 2, "no command after --"},
		{"lock bad --ttl", pass, []string{ep, "lock", "--ttl", "0s", "orders", "--", "true"}, 2, "--ttl"},
		{"lock bad --wait", pass, []string{ep, "lock", "--wait", "-1s", "orders", "--", "true"}, 2, "--wait"},
		{"lock info without NAME", pass, []string{ep, "lock", "info"}, 2, "lock info takes one NAME"},
		{"session kill without ID", pass, []string{ep, "session", "kill"}, 2, "session kill takes 1 argument"},
		{"member add bad address", pass, []string{ep, "member", "add", "n9", "nowhere", "127.0.0.1:1"}, 2, `"nowhere"`},
		{"bad endpoint", pass, append([]string{"--endpoints", "nocolon"}, lockCmd...), 2, "missing port"},
		{"bad port", pass, []string{"--endpoints", "127.0.0.1:99999", "member", "list"}, 2, "port from 1 to 65535"},
		{"empty endpoints", pass, []string{"--endpoints", " , ", "member", "list"}, 2, "no address"},
		{"bad --write-out", pass, []string{ep, "-w", "yaml", "member", "list"}, 2, "table or json"},
		{"bad --timeout", pass, []string{ep, "--timeout", "0s", "member", "list"}, 2, "--timeout"},
		{"--cacert without --tls", pass, []string{ep, "--cacert", "ca.pem", "member", "list"}, 2, "need --tls"},
		{"--cert without --key", pass, []string{ep, "--tls", "--cert", "c.pem", "member", "list"}, 2, "go together"},
		{"missing --cacert file", pass, []string{ep, "--tls", "--cacert", "/nonexistent/ca.pem", "member", "list"}, 2, "--cacert"},
		{"unreachable endpoint", pass, []string{"--endpoints", dead, "--timeout", "2s", "member", "list"}, 1, "no endpoint answered"},
		{"unreachable endpoint, lock", pass, append([]string{"--endpoints", dead, "--timeout", "2s"}, lockCmd...), 1, "no endpoint answered"},
		{"unreachable endpoint, status", pass, []string{"--endpoints", dead, "--timeout", "2s", "endpoint", "status"}, 1, dead},
		{"unreachable endpoint, health", pass, []string{"--endpoints", dead, "--timeout", "2s", "endpoint", "health"}, 1, "unhealthy: " + dead},
		{"no password", nil, []string{ep, "member", "list"}, 1, "NOAUTH"},
		{"wrong password", []string{"FENCED_REQUIREPASS=" + badPass}, []string{ep, "session", "list"}, 1, "WRONGPASS"},
		{"wrong password flag", nil, []string{ep, "--pass", badPass, "session", "kill", "x"}, 1, "WRONGPASS"},
		{"wrong password, lock", []string{"FENCED_REQUIREPASS=" + badPass}, append([]string{ep}, lockCmd...), 1, "WRONGPASS"},
		{"wrong password, health", []string{"FENCED_REQUIREPASS=" + badPass}, []string{ep, "endpoint", "health"}, 1, "WRONGPASS"},
		{"no such session", pass, []string{ep, "session", "kill", "nosuchsession"}, 1, "no such session"},
		{"no such member", pass, []string{ep, "member", "remove", "n9"}, 1, `no member "n9"`},
	} {
		r := runCtl(t, tc.env, nil, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr+r.stdout, tc.want) || strings.Contains(r.stdout, "ran") {
			t.Errorf("%s: %v\nwant exit %d and %q", tc.name, r, tc.code, tc.want)
		}
		if strings.Contains(r.stdout+r.stderr, badPass) {
			t.Errorf("%s: the password is printed: %v", tc.name, r)
		}
	}
	wantFree(t, c, "orders")
	var ms []ctlMember
	if r := runCtl(t, pass, nil, ep, "-w", "json", "member", "list"); r.code != 0 || json.Unmarshal([]byte(r.stdout), &ms) != nil || len(ms) != 1 {
		t.Errorf("member list after the bad input, with the password: %v", r)
	}

	for _, args := range [][]string{{"--help"}, {"help"}, {"lock", "--help"}, {"member", "list", "-h"}} {
		if r := runCtl(t, nil, nil, args...); r.code != 0 || !strings.Contains(r.stdout, "usage: fenced ctl") || r.stderr != "" {
			t.Errorf("%q: %v", args, r)
		}
	}
}

// TestCtlTLS: ctl reaches a node's TLS port with --tls, its CA and a
// client certificate; without TLS, or trusting another CA, it fails.
func TestCtlTLS(t *testing.T) {
	t.Parallel()
	certs, other := makeCerts(t), makeCerts(t)
	n := startTLSNode(t, certs, tlsOpts{noPlain: true})
	tlsArgs := func(dir string) []string {
		return []string{"--endpoints", n.tlsAddr, "--tls", "--cacert", filepath.Join(dir, "ca.crt"),
			"--cert", filepath.Join(certs, "client.crt"), "--key", filepath.Join(certs, "client.key")}
	}
	r := mustCtl(t, append(tlsArgs(certs), "lock", "orders", "--", "sh", "-c", "echo $FENCED_TOKEN")...)
	token(t, r.stdout)
	mustCtl(t, append(tlsArgs(certs), "endpoint", "health")...)
	if r := runCtl(t, nil, nil, "--endpoints", n.tlsAddr, "--timeout", "2s", "member", "list"); r.code != 1 {
		t.Errorf("plain RESP to the TLS port: %v", r)
	}
	if r := runCtl(t, nil, nil, append(tlsArgs(other), "--timeout", "2s", "member", "list")...); r.code != 1 || !strings.Contains(r.stderr, "certificate") {
		t.Errorf("trusting another CA: %v", r)
	}
}
