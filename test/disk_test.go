package test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenced/fenced/raftstore/raftstoretest"
)

// mountTmpfs mounts a tmpfs of size bytes on dir (created), and unmounts it
// when the test ends: registered before the test starts its nodes, the
// unmount runs after their cleanup has stopped them. Where mounting is not
// permitted the test is skipped, unless CI or FENCED_REQUIRE_DISK is set:
// there the disk tests must run.
func mountTmpfs(t *testing.T, dir string, size int64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		msg := fmt.Sprintf("cannot mount a tmpfs on %s (%v: %s): the disk-full test needs root or CAP_SYS_ADMIN", dir, err, strings.TrimSpace(string(out)))
		if os.Getenv("CI") != "" || os.Getenv("FENCED_REQUIRE_DISK") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg + "; set FENCED_REQUIRE_DISK=1 to make this a failure")
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
}

// resizeTmpfs changes the size of the tmpfs on dir, as an operator who
// gives the disk room (or another process that takes it) would.
func resizeTmpfs(t *testing.T, dir string, size int64) {
	t.Helper()
	out, err := exec.Command("mount", "-o", fmt.Sprintf("remount,size=%d", size), dir).CombinedOutput()
	if err != nil {
		t.Fatalf("remount %s to %d bytes: %v: %s", dir, size, err, out)
	}
}

// usedBytes is what the filesystem of dir holds.
func usedBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Blocks-st.Bfree) * st.Bsize
}

// readyz is the node's /readyz answer: status code and body.
func readyz(t testing.TB, metrics string) (int, string) {
	t.Helper()
	cl := http.Client{Timeout: 3 * time.Second}
	resp, err := cl.Get("http://" + metrics + "/readyz")
	if err != nil {
		t.Fatalf("GET /readyz: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// infoField is one field of the node's INFO section.
func infoField(t testing.TB, c *redis.Client, section, field string) string {
	t.Helper()
	s, err := c.Info(tctx(t), section).Result()
	if err != nil {
		t.Fatalf("INFO %s: %v", section, err)
	}
	for line := range strings.Lines(s) {
		if v, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), field+":"); ok {
			return v
		}
	}
	t.Fatalf("INFO %s has no %s:\n%s", section, field, s)
	return ""
}

// setRetrying sets key through c, retrying answers that say nothing was
// applied while leadership moves (-TRYAGAIN, -CLUSTERDOWN).
func setRetrying(t *testing.T, c *redis.Client, key string, val any) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err = c.Set(tctx(t), key, val, 0).Err(); err == nil || !(isCode(err, "TRYAGAIN") || isCode(err, "CLUSTERDOWN")) {
			break
		}
	}
	if err != nil {
		t.Fatalf("SET %s: %v", key, err)
	}
}

// TestDiskFull: the data directory of one node of three is a
// tmpfs of its own. Writes through that node, the leader, fill it until
// its free space is below --disk-reserve: it answers writes -MISCONF with
// the reason, stays up, serves reads, says why on /readyz and in INFO, and
// hands leadership on, while the other nodes keep taking writes. Then its
// tmpfs is shrunk below half the reserve, so it appends nothing more and
// falls behind, still up and serving reads. Once the tmpfs is grown again
// it takes writes without a restart and catches up: RAFT.HASH is equal on
// all three.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	const (
		mib     = 1 << 20
		reserve = 96 * mib
		value   = 256 << 10
	)
	mnt := filepath.Join(t.TempDir(), "tmpfs")
	// Pebble preallocates each WAL (110 % of its 16 MiB memtable) and
	// keeps several, new and recycled: about 90 MiB of WALs once a few
	// memtables have been flushed. Beyond them the SETs' data fills it.
	mountTmpfs(t, mnt, 224*mib)
	metrics := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	start := time.Now()
	c := startCluster(t, 3, []string{"--data", filepath.Join(mnt, "data"), "--disk-reserve", strconv.Itoa(reserve), "--metrics", metrics})
	n1 := c.nodes[0]
	c1 := n1.client(t)
	if l := c.leader(10 * time.Second); l != n1 {
		if _, err := do(tctx(t), c1, "RAFT.TRANSFER", "n1"); err != nil {
			t.Fatalf("RAFT.TRANSFER n1: %v", err)
		}
		eventually(t, 10*time.Second, "n1 leads", func() bool { return c.leader(10*time.Second) == n1 })
	}
	if code, body := readyz(t, metrics); code != http.StatusOK {
		t.Fatalf("/readyz before the disk fills: %d %q", code, body)
	}

	// Fill: values that do not compress, so that Pebble's flushes take
	// space as they would with real data.
	usedBefore := usedBytes(t, mnt)
	buf := make([]byte, value)
	var filled int
	var misconf error
	for ; filled < 800; filled++ {
		rand.Read(buf)
		err := c1.Set(tctx(t), fmt.Sprintf("fill:%d", filled), buf, 0).Err()
		for retries := 0; (isCode(err, "TRYAGAIN") || isCode(err, "CLUSTERDOWN")) && retries < 100; retries++ {
			// Pebble took the space between the check and the proposal,
			// and n1 is handing leadership on: nothing was applied.
			time.Sleep(50 * time.Millisecond)
			err = c1.Set(tctx(t), fmt.Sprintf("fill:%d", filled), buf, 0).Err()
		}
		if isCode(err, "MISCONF") {
			misconf = err
			break
		}
		if err != nil {
			t.Fatalf("SET fill:%d through n1: %v", filled, err)
		}
	}
	if misconf == nil {
		t.Fatalf("%d SETs of %d bytes and n1 (%d bytes used of its tmpfs) never answered -MISCONF", filled, value, usedBytes(t, mnt))
	}
	t.Logf("n1 answered -MISCONF after %d SETs of %d KiB (%.1fs), its tmpfs filled from %d to %d MiB: %v",
		filled, value>>10, time.Since(start).Seconds(), usedBefore>>20, usedBytes(t, mnt)>>20, misconf)
	if !strings.Contains(misconf.Error(), "Errors writing to the data directory") || !strings.Contains(misconf.Error(), "below --disk-reserve") {
		t.Errorf("-MISCONF does not say why: %v", misconf)
	}

	// The node is up, says why, refuses every write, and serves reads.
	checkMisconf := func(phase string) {
		t.Helper()
		if !n1.alive() {
			t.Fatalf("%s: n1 exited", phase)
		}
		if err := c1.Set(tctx(t), "w:n1", "x", 0).Err(); !isCode(err, "MISCONF") {
			t.Errorf("%s: SET through n1 answered %v, want -MISCONF", phase, err)
		}
		if err := c1.Do(tctx(t), "SESSION.OPEN", "TTL", 5000).Err(); !isCode(err, "MISCONF") {
			t.Errorf("%s: SESSION.OPEN through n1 answered %v, want -MISCONF", phase, err)
		}
		if got, err := c1.Get(tctx(t), "fill:0").Bytes(); err != nil || len(got) != value {
			t.Errorf("%s: GET fill:0 through n1: %d bytes, %v", phase, len(got), err)
		}
		if code, body := readyz(t, metrics); code != http.StatusServiceUnavailable || !strings.Contains(body, "below --disk-reserve") {
			t.Errorf("%s: /readyz answered %d %q, want 503 with the reason", phase, code, body)
		}
		if v := infoField(t, c1, "persistence", "rdb_last_bgsave_status"); v != "err" {
			t.Errorf("%s: INFO rdb_last_bgsave_status:%s, want err", phase, v)
		}
		if v := infoField(t, c1, "persistence", "disk_error"); !strings.Contains(v, "below --disk-reserve") {
			t.Errorf("%s: INFO disk_error:%s, want the reason", phase, v)
		}
	}
	// n1 hands leadership on (a read meanwhile may be answered
	// -CLUSTERDOWN, as in any election); the others keep taking writes.
	if err := c1.Set(tctx(t), "w:n1", "x", 0).Err(); !isCode(err, "MISCONF") {
		t.Errorf("SET through n1 while it hands leadership on answered %v, want -MISCONF", err)
	}
	var leader *node
	eventually(t, 15*time.Second, "a leader other than n1", func() bool {
		leader = c.leader(10 * time.Second)
		return leader != n1
	})
	checkMisconf("below the reserve")
	for i, n := range c.nodes[1:] {
		setRetrying(t, n.client(t), fmt.Sprintf("soft:%d", i), "v")
	}

	// Another process takes the rest of the disk: below half the reserve
	// n1 appends nothing more, and falls behind the others.
	// The tmpfs is shrunk to 24 MiB more than n1 holds: below half the
	// reserve, and still room for the flush of a full memtable, which
	// Pebble retries without pause when it fails. n1's Pebble must be
	// still first (a flush ending deletes WALs), or the space it frees
	// after the shrink could lift n1 above half the reserve.
	var used int64
	eventually(t, 10*time.Second, "n1's disk use settles", func() bool {
		used = usedBytes(t, mnt)
		for range 5 {
			time.Sleep(100 * time.Millisecond)
			if usedBytes(t, mnt) != used {
				return false
			}
		}
		return true
	})
	resizeTmpfs(t, mnt, used+24*mib)
	cl := leader.client(t)
	for i := range 20 {
		setRetrying(t, cl, fmt.Sprintf("hard:%d", i), i)
	}
	leaderApplied := mustRaftStatus(t, leader).int(t, "applied_index")
	if free := 24*mib - (usedBytes(t, mnt) - used); free >= reserve/2 {
		t.Fatalf("n1's Pebble gave back space after the shrink: %d MiB free", free>>20)
	}
	if st := mustRaftStatus(t, n1); st.int(t, "last_index") >= leaderApplied {
		t.Errorf("n1 appended up to %d with its disk full (leader applied %d)", st.int(t, "last_index"), leaderApplied)
	}
	checkMisconf("disk full")
	// A read through n1 is the leader's, so it sees what n1 has not.
	if v, err := c1.Get(tctx(t), "hard:19").Result(); err != nil || v != "19" {
		t.Errorf("GET hard:19 through n1 = %q, %v; want 19", v, err)
	}
	for i, n := range c.nodes[1:] {
		setRetrying(t, n.client(t), fmt.Sprintf("other:%d", i), "v")
	}

	// Room again: writes through n1 resume without a restart.
	resizeTmpfs(t, mnt, 512*mib)
	recovered := time.Now()
	eventually(t, 10*time.Second, "n1 takes writes again", func() bool {
		return c1.Set(tctx(t), "w:n1", "back", 0).Err() == nil
	})
	if code, body := readyz(t, metrics); code != http.StatusOK {
		t.Errorf("/readyz after space is back: %d %q", code, body)
	}
	if v := infoField(t, c1, "persistence", "disk_error"); v != "" {
		t.Errorf("INFO disk_error:%s after space is back, want empty", v)
	}
	checkSameState(t, c.nodes)
	t.Logf("n1 took writes %.1fs after the remount and caught up; whole test %.1fs", time.Since(recovered).Seconds(), time.Since(start).Seconds())
	if s := n1.stderr(); strings.Contains(s, "panic:") || strings.Contains(s, "goroutine ") {
		t.Errorf("n1 printed a panic")
	}
}

// TestCorruptLogTail: a flipped byte in the last log entry, or
// in one before it, stops the start-up with one message that names the
// entry's index and what to do, and no panic trace (hashicorp/raft panics
// on an entry it cannot read in NewRaft's configuration scan).
func TestCorruptLogTail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		back uint64 // entries before the last
	}{{"last", 0}, {"middle", 3}} {
		t.Run(tc.name, func(t *testing.T) {
			n := startNode(t, nodeOpts{})
			c := n.client(t)
			for i := range 10 {
				if err := c.Set(tctx(t), fmt.Sprint("k", i), i, 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
			n.term()
			index, err := raftstoretest.FlipLogByte(n.dataDir, tc.back)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, n.bin, n.args...)
			cmd.Dir = n.workDir
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Fatalf("start on a corrupt log: %v, want a failed exit; output:\n%s", err, out)
			}
			s := string(out)
			for _, want := range []string{
				fmt.Sprintf("entry %d of the log", index), "corrupt", "RAFT.REMOVE", "new --id", "empty --data", "fenced recover",
			} {
				if !strings.Contains(s, want) {
					t.Errorf("start-up message lacks %q:\n%s", want, s)
				}
			}
			if strings.Contains(s, "panic:") || strings.Contains(s, "goroutine ") {
				t.Errorf("start-up printed a panic trace:\n%s", s)
			}
			if lines := strings.Count(strings.TrimSpace(s), "\n") + 1; !strings.Contains(lastLine(s), "corrupt") {
				t.Errorf("the last of %d lines is not the message:\n%s", lines, s)
			}
		})
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}
