package test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// snapResult is what `fenced snapshot save|restore|status` printed.
type snapResult struct {
	index  int64
	hash   string
	stdout string
}

var (
	snapIndexRE = regexp.MustCompile(`(?m)^applied_index: (\d+)$`)
	snapHashRE  = regexp.MustCompile(`(?m)^hash: ([0-9a-f]{64})$`)
)

// fencedSnapshot runs `fenced snapshot ARGS` to its exit, with env and
// without the tests' FENCED_REQUIREPASS, and returns its stdout, stderr and
// exit error.
func fencedSnapshot(t *testing.T, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	bin := binPath(t) // before the clock starts: the first call builds it
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"snapshot"}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FENCED_REQUIREPASS=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("fenced snapshot %q did not exit: %s %s", args, out.String(), errb.String())
	}
	return out.String(), errb.String(), err
}

// mustSnapshot runs `fenced snapshot ARGS`, which must succeed and print
// an applied index and a hash.
func mustSnapshot(t *testing.T, env []string, args ...string) snapResult {
	t.Helper()
	out, errOut, err := fencedSnapshot(t, env, args...)
	if err != nil {
		t.Fatalf("fenced snapshot %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	mi, mh := snapIndexRE.FindStringSubmatch(out), snapHashRE.FindStringSubmatch(out)
	if mi == nil || mh == nil {
		t.Fatalf("fenced snapshot %s printed no index or hash:\n%s", strings.Join(args, " "), out)
	}
	idx, _ := strconv.ParseInt(mi[1], 10, 64)
	return snapResult{index: idx, hash: mh[1], stdout: out}
}

// nodeHash is a node's RAFT.HASH: its applied index and state digest.
func nodeHash(t *testing.T, c *redis.Client) (int64, string) {
	t.Helper()
	v, err := do(tctx(t), c, "RAFT.HASH")
	arr, ok := v.([]any)
	if err != nil || !ok || len(arr) != 2 {
		t.Fatalf("RAFT.HASH: %v %v", v, err)
	}
	idx, _ := arr[0].(int64)
	return idx, fmt.Sprint(arr[1])
}

// loadOp is one acknowledged write of the backup test's load.
type loadOp struct {
	key, val    string // a SET of a key written once
	token       int64  // a FLOCK's grant
	sent, acked time.Time
}

// backupLoad runs writers against nodes until stop is closed: each opens a
// session, then takes and releases a lock of its own (FLOCK, FUNLOCK …
// FENCE) and sets a key it never writes again, recording every
// acknowledged write with when it was sent and answered.
//
// count tells how many writes have been recorded so far; the four clients
// each have at most one iteration (two writes) under way.
func backupLoad(t *testing.T, nodes []*node, stop <-chan struct{}) (wait func() []loadOp, count func() int) {
	var mu sync.Mutex
	var ops []loadOp
	var wg sync.WaitGroup
	for w := range 4 {
		c := nodes[w%len(nodes)].client(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			sess, err := c.Do(ctx, "SESSION.OPEN", "TTL", 120000).Text()
			if err != nil {
				t.Errorf("load %d: SESSION.OPEN: %v", w, err)
				return
			}
			lock := fmt.Sprintf("load:lock%d", w)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				sent := time.Now()
				tok, err := c.Do(ctx, "FLOCK", lock, sess).Int64()
				if err != nil {
					t.Errorf("load %d: FLOCK: %v", w, err)
					return
				}
				op := loadOp{token: tok, sent: sent, acked: time.Now()}
				if err := c.Do(ctx, "FUNLOCK", lock, sess, "FENCE", tok).Err(); err != nil {
					t.Errorf("load %d: FUNLOCK: %v", w, err)
					return
				}
				key, val := fmt.Sprintf("load:w%d:%d", w, i), fmt.Sprintf("v%d", i)
				sent = time.Now()
				if err := c.Do(ctx, "SET", key, val).Err(); err != nil {
					t.Errorf("load %d: SET: %v", w, err)
					return
				}
				mu.Lock()
				ops = append(ops, op, loadOp{key: key, val: val, sent: sent, acked: time.Now()})
				mu.Unlock()
			}
		}()
	}
	wait = func() []loadOp {
		wg.Wait()
		return ops
	}
	count = func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(ops)
	}
	return wait, count
}

// `fenced snapshot save` from a 3-node cluster under load (sent
// to a follower, which forwards it to the leader), then `fenced snapshot
// restore` into a new directory and a node started on it: it holds the
// state of the snapshot's index (the same RAFT.HASH as save, status and
// restore report), every write acknowledged before the save began and none
// sent after it ended, and its tokens continue above the snapshot's index
// and every token granted before the save. A node then joins it.
func TestSnapshotSaveRestore(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	leader := c.leader(20 * time.Second)
	follower := c.followers(leader)[0]
	lc := leader.client(t)

	// State the load never touches: keys, and locks held by a session.
	holder := openSession(t, lc, 120000, "holder")
	held := map[string]int64{}
	for i := range 5 {
		mustStr(t, lc, "SET", fmt.Sprintf("pre:k%d", i), fmt.Sprintf("val%d", i))
		l := fmt.Sprintf("pre:lock%d", i)
		held[l] = mustInt(t, lc, "FLOCK", l, holder)
	}

	stop := make(chan struct{})
	wait, count := backupLoad(t, []*node{leader, follower, c.followers(leader)[1]}, stop)
	// Enough writes on either side of the save to tell, however slowly a
	// loaded machine makes them (a fixed 300 ms once saw only 8 before):
	// every write recorded before the save began was acknowledged before
	// it, and of those recorded after it ended, all but the four clients'
	// iterations under way (two writes each) were sent after it.
	eventually(t, 60*time.Second, "10 writes before the save", func() bool { return count() >= 10 })
	file := filepath.Join(t.TempDir(), "backup.snap")
	saveStart := time.Now()
	saved := mustSnapshot(t, nil, "save", file, "--addr", follower.addr)
	saveEnd := time.Now()
	atEnd := count()
	eventually(t, 60*time.Second, "writes sent after the save", func() bool { return count() >= atEnd+4*2+2 })
	close(stop)
	ops := wait()
	if t.Failed() {
		t.FailNow()
	}
	if _, err := os.Stat(file + ".part"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("save left %s.part behind: %v", file, err)
	}

	// Linearizable: what was acknowledged before the save began is in it,
	// what was sent after it ended is not.
	var before, after int
	var maxTokBefore, maxTok int64
	for _, op := range ops {
		maxTok = max(maxTok, op.token)
		switch {
		case op.acked.Before(saveStart):
			before++
			maxTokBefore = max(maxTokBefore, op.token)
		case op.sent.After(saveEnd):
			after++
		}
	}
	if before < 10 || after < 2 {
		t.Fatalf("load too light to tell: %d writes acknowledged before the save, %d sent after it", before, after)
	}
	if maxTokBefore > saved.index {
		t.Errorf("token %d granted before the save, above the snapshot's index %d: the snapshot misses an acknowledged write", maxTokBefore, saved.index)
	}
	if maxTok <= saved.index {
		t.Errorf("no token above the snapshot's index %d (max %d): the load did not go on during the save", saved.index, maxTok)
	}

	status := mustSnapshot(t, nil, "status", file)
	if status.index != saved.index || status.hash != saved.hash {
		t.Errorf("status %d %s, save reported %d %s", status.index, status.hash, saved.index, saved.hash)
	}

	data := filepath.Join(t.TempDir(), "restored")
	raftAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	restored := mustSnapshot(t, nil, "restore", file, "--data", data, "--id", "r1", "--raft-addr", raftAddr)
	if restored.index != saved.index || restored.hash != saved.hash {
		t.Errorf("restore %d %s, save reported %d %s", restored.index, restored.hash, saved.index, saved.hash)
	}

	r := startNode(t, nodeOpts{args: []string{"--id", "r1", "--data", data, "--raft-addr", raftAddr}, noWait: true})
	rc := r.client(t)
	// Before it leads and records its address (a new entry), the node's
	// state is the snapshot's: the leader's no-op is not applied to it.
	if idx, h := nodeHash(t, rc); idx == saved.index {
		if h != saved.hash {
			t.Errorf("restored node at index %d has hash %s, save reported %s", idx, h, saved.hash)
		}
	} else if idx < saved.index {
		t.Errorf("restored node at index %d, below the snapshot's %d", idx, saved.index)
	} else {
		t.Logf("restored node already at index %d (snapshot %d): its hash was not compared", idx, saved.index)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.waitReady(ctx); err != nil {
		t.Fatalf("restored node never served: %v", err)
	}

	for i := range 5 {
		if v, err := rc.Get(tctx(t), fmt.Sprintf("pre:k%d", i)).Result(); err != nil || v != fmt.Sprintf("val%d", i) {
			t.Errorf("pre:k%d = %q %v after restore", i, v, err)
		}
	}
	for l, tok := range held {
		if got := mustInt(t, rc, "FENCE", l); got != tok {
			t.Errorf("FENCE %s = %d after restore, want %d", l, got, tok)
		}
	}
	missing, present := 0, 0
	for _, op := range ops {
		if op.key == "" {
			continue
		}
		v, err := rc.Get(tctx(t), op.key).Result()
		switch {
		case op.acked.Before(saveStart) && (err != nil || v != op.val):
			missing++
		case op.sent.After(saveEnd) && !errors.Is(err, redis.Nil):
			present++
		}
	}
	if missing > 0 || present > 0 {
		t.Errorf("after restore: %d keys acknowledged before the save are missing, %d sent after it are present", missing, present)
	}
	if st := mustRaftStatus(t, r); !slices.Equal(st.memberIDs(), []string{"r1"}) {
		t.Errorf("restored cluster's members %v, want r1 alone", st.memberIDs())
	}

	// Tokens continue above the snapshot's: a new lock, and a held one
	// taken over once its holder is gone.
	sess := openSession(t, rc, 60000, "after")
	if tok := mustInt(t, rc, "FLOCK", "after:new", sess); tok <= saved.index || tok <= maxTokBefore {
		t.Errorf("token %d after restore, want above the snapshot's index %d and the tokens before it (%d)", tok, saved.index, maxTokBefore)
	}
	mustInt(t, rc, "SESSION.KILL", holder)
	if tok := mustInt(t, rc, "FLOCK", "pre:lock0", sess); tok <= held["pre:lock0"] || tok <= saved.index {
		t.Errorf("pre:lock0 taken over with token %d, want above %d and %d", tok, held["pre:lock0"], saved.index)
	}

	// Others join the restored node and install its snapshot.
	rcl := &cluster{t: t, nodes: []*node{r}, ids: []string{"r1"}}
	r2 := rcl.add("r2")
	rcl.waitVoters(2)
	waitSameHash(t, r2, r, 20*time.Second)
	t.Logf("snapshot index %d, %s records; %d writes acknowledged before the save, %d sent after; max token %d before, %d overall",
		saved.index, status.records(), before, after, maxTokBefore, maxTok)
}

func (s snapResult) records() string {
	if m := regexp.MustCompile(`(?m)^records: (\d+)$`).FindStringSubmatch(s.stdout); m != nil {
		return m[1]
	}
	return "?"
}

// TestSnapshotRefusals: RAFT.BACKUP is admin-only (a non-admin user gets
// -NOPERM, directly and through fenced snapshot save, which then writes
// nothing) and takes no arguments; restore refuses a non-empty directory
// and a corrupt file, each with a message that says so and nothing left
// behind; status refuses a corrupt file. --bump-index starts the tokens
// that much higher.
func TestSnapshotRefusals(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t, nodeOpts{})
	admin := n.client(t)
	setUser(t, admin, "app", "on", ">app-pass", "+@all", "-@admin", "~*", "&*")
	sess := openSession(t, admin, 120000, "")
	tok := mustInt(t, admin, "FLOCK", "l", sess)
	mustStr(t, admin, "SET", "k", "v")

	if _, err := do(tctx(t), userClient(t, n, "app", "app-pass"), "RAFT.BACKUP"); !isCode(err, "NOPERM") {
		t.Errorf("RAFT.BACKUP as a non-admin: %v, want -NOPERM", err)
	}
	if _, err := do(tctx(t), admin, "RAFT.BACKUP", "now"); err == nil || !strings.Contains(err.Error(), "wrong number of arguments") {
		t.Errorf("RAFT.BACKUP now: %v, want an arity error", err)
	}
	file := filepath.Join(t.TempDir(), "backup.snap")
	for _, tc := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"--user", "app", "--pass", "app-pass"}, "NOPERM"},
		{nil, nil, "NOAUTH"},
		{[]string{"FENCED_REQUIREPASS=wrong"}, nil, "WRONGPASS"},
		{nil, []string{"--pass", testPass, "extra"}, "usage"},
	} {
		args := append([]string{"save", file, "--addr", n.addr}, tc.args...)
		if out, errOut, err := fencedSnapshot(t, tc.env, args...); err == nil || !strings.Contains(errOut, tc.want) {
			t.Errorf("snapshot %q: %v, want a failure saying %s:\n%s%s", args, err, tc.want, out, errOut)
		}
		if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a refused save wrote %s", file)
		}
	}
	saved := mustSnapshot(t, []string{"FENCED_REQUIREPASS=" + testPass}, "save", file, "--addr", n.addr)

	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "keep"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, err := fencedSnapshot(t, nil, "restore", file, "--data", full, "--id", "r1"); err == nil || !strings.Contains(errOut, "not empty") {
		t.Errorf("restore into a non-empty directory: %v %s", err, errOut)
	}
	if entries, _ := os.ReadDir(full); len(entries) != 1 {
		t.Errorf("a refused restore changed the non-empty directory: %v", entries)
	}

	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x01
	corrupt := filepath.Join(t.TempDir(), "corrupt.snap")
	if err := os.WriteFile(corrupt, b, 0o600); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "new")
	for _, args := range [][]string{{"status", corrupt}, {"restore", corrupt, "--data", target, "--id", "r1"}} {
		if _, errOut, err := fencedSnapshot(t, nil, args...); err == nil || !strings.Contains(errOut, "bad snapshot") {
			t.Errorf("%q: %v %s, want a bad snapshot refused", args, err, errOut)
		}
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused restore left %s behind", target)
	}

	// --bump-index: the new log, and so the tokens, start that far above.
	const bump = 1_000_000
	raftAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	restored := mustSnapshot(t, nil, "restore", file, "--data", target, "--id", "r1", "--raft-addr", raftAddr, "--bump-index", strconv.Itoa(bump))
	if restored.index != saved.index+bump || restored.hash != saved.hash {
		t.Errorf("restore --bump-index %d: %d %s, want %d %s", bump, restored.index, restored.hash, saved.index+bump, saved.hash)
	}
	r := startNode(t, nodeOpts{args: []string{"--id", "r1", "--data", target, "--raft-addr", raftAddr}})
	rc := r.client(t)
	if got := mustInt(t, rc, "FENCE", "l"); got != tok {
		t.Errorf("FENCE l = %d after restore, want %d", got, tok)
	}
	s2 := openSession(t, rc, 60000, "")
	if got := mustInt(t, rc, "FLOCK", "new", s2); got <= saved.index+bump {
		t.Errorf("token %d after restore --bump-index %d, want above %d", got, bump, saved.index+bump)
	}
}
