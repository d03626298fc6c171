package test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The memory bombs: what a client with write permission can send to make a
// node hold memory that its state does not count. Each vector runs
// against nodes with --maxmemory 64mb while a sampler reads every node's
// RSS, and every sample, during the load and after it, must stay within
// the stated budget (rssBound, README: Memory). Before the log cache was
// bounded in bytes, 150 MSETs of 4 MiB took one node past 1.2 GB, and 400
// PUBLISHes of 512 KiB with no subscriber past 600 MB.

const bombLimit = 64 << 20

// rssSampler records the highest RSS of nodes until stopped.
type rssSampler struct {
	stop  chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	peaks map[*node]int64
}

func sampleRSS(t *testing.T, nodes ...*node) *rssSampler {
	s := &rssSampler{stop: make(chan struct{}), done: make(chan struct{}), peaks: map[*node]int64{}}
	go func() {
		defer close(s.done)
		for {
			for _, n := range nodes {
				if !n.alive() {
					continue
				}
				rss := n.statusBytesOr("VmRSS", 0)
				s.mu.Lock()
				s.peaks[n] = max(s.peaks[n], rss)
				s.mu.Unlock()
			}
			select {
			case <-s.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(s.end)
	return s
}

func (s *rssSampler) end() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
}

// check stops the sampler and fails for every node whose peak passed the
// budget; after the load, each node's RSS is checked again once it has
// been idle for a while.
func (s *rssSampler) check(t *testing.T, what string, nodes ...*node) {
	t.Helper()
	s.checkWith(t, what, 0, nodes...)
}

// checkWith is check with extra bytes allowed: the per-connection terms of
// the budget, for a load whose connections hold what they may.
func (s *rssSampler) checkWith(t *testing.T, what string, extra int64, nodes ...*node) {
	t.Helper()
	s.end()
	bound := rssBound(bombLimit) + extra
	time.Sleep(12 * time.Second) // idle: two rounds of the node's return of free memory
	for _, n := range nodes {
		after := n.statusBytesOr("VmRSS", 0)
		t.Logf("%s: %s peak RSS %d MiB, %d MiB once idle (budget %d MiB)", what, n.label(), s.peaks[n]>>20, after>>20, bound>>20)
		if s.peaks[n] > bound {
			t.Errorf("%s: %s reached %d MiB of RSS, past the budget of %d MiB", what, n.label(), s.peaks[n]>>20, bound>>20)
		}
		if after > bound {
			t.Errorf("%s: %s holds %d MiB of RSS once idle, past the budget of %d MiB", what, n.label(), after>>20, bound>>20)
		}
	}
}

// label names a node in the figures: its client address.
func (n *node) label() string { return "node " + n.addr }

// statusBytesOr is statusBytes for a goroutine that may not fail the
// test: or when the process or field is gone.
func (n *node) statusBytesOr(field string, or int64) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", n.pid()))
	if err != nil {
		return or
	}
	if v, ok := statusField(b, field); ok {
		return v
	}
	return or
}

// msetBomb overwrites eight keys with 500 KiB each, count times: 4 MiB a
// command, 4 MiB of state.
func msetBomb(t *testing.T, c *redis.Client, count int) {
	t.Helper()
	v := strings.Repeat("v", 500<<10)
	args := []any{"MSET"}
	for j := range 8 {
		args = append(args, fmt.Sprint("bomb", j), v)
	}
	for i := range count {
		if err := bombDo(t, c, args...); err != nil {
			t.Fatalf("MSET %d: %v", i, err)
		}
	}
}

// bombDo runs a write of a bomb, again while it is refused for want of a
// leader: with one follower paused, a leader whose other follower misses
// a heartbeat on two loaded cores steps down (make test: "MSET 0: TRYAGAIN
// not the leader"), and go-redis retries only three times in a second.
// The bombs' writes are idempotent, so an -UNCERTAIN one is sent again
// too.
func bombDo(t *testing.T, c *redis.Client, args ...any) error {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := c.Do(tctx(t), args...).Err()
		transient := isCode(err, "TRYAGAIN") || isCode(err, "CLUSTERDOWN") || isCode(err, "UNCERTAIN") || isCode(err, "LOADING")
		if !transient || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// publishBomb publishes count messages of 512 KiB on ch, one at a time.
func publishBomb(t *testing.T, c *redis.Client, ch string, count int) {
	t.Helper()
	msg := strings.Repeat("m", 512<<10)
	for i := range count {
		if err := bombDo(t, c, "PUBLISH", ch, msg); err != nil {
			t.Fatalf("PUBLISH %d: %v", i, err)
		}
	}
}

func TestMemoryBombs(t *testing.T) {
	t.Parallel()
	args := []string{"--maxmemory", "64mb"}

	t.Run("mset", func(t *testing.T) {
		t.Parallel()
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		n := startNode(t, nodeOpts{args: append([]string{"--metrics", addr}, args...)})
		c := n.client(t)
		s := sampleRSS(t, n)
		msetBomb(t, c, 150)
		// What fills the budget is in INFO and /metrics: the log cache
		// holds the last MSETs, up to its bound.
		cache, _ := strconv.ParseInt(infoField(t, c, "memory", "fenced_raft_log_cache_bytes"), 10, 64)
		if cache < 8<<20 || cache > 16<<20 {
			t.Errorf("INFO fenced_raft_log_cache_bytes = %d after 150 MSETs of 4 MiB, want the last ones, within 16 MiB", cache)
		}
		for _, f := range []string{"fenced_proposal_bytes", "fenced_replication_bytes", "fenced_client_input_bytes", "fenced_client_output_bytes", "mem_clients_normal"} {
			if v, err := strconv.ParseInt(infoField(t, c, "memory", f), 10, 64); err != nil || v < 0 {
				t.Errorf("INFO memory %s = %d, %v", f, v, err)
			}
		}
		m := metricsOf(t, addr)
		if v := m.value(t, "fenced_memory_bytes", "part", "raft_log_cache"); v < 8<<20 || v > 16<<20 {
			t.Errorf("fenced_memory_bytes{part=raft_log_cache} = %v, want within 8 and 16 MiB", v)
		}
		for _, part := range []string{"client_input", "client_output", "proposals", "replication"} {
			m.value(t, "fenced_memory_bytes", "part", part)
		}
		s.check(t, "150 MSETs of 8 × 500 KiB", n)
	})

	t.Run("publish", func(t *testing.T) {
		t.Parallel()
		n := startNode(t, nodeOpts{args: args})
		pub := n.soloClient(t)
		s := sampleRSS(t, n)
		// No subscriber at all.
		publishMany(t, pub, "nobody", 512<<10, 400)
		// One that never reads, and four that do.
		slow := dialRaw(t, n.addr)
		slow.send("SUBSCRIBE", "firehose")
		for range 4 {
			sub := n.soloClient(t).Subscribe(tctx(t), "firehose")
			if _, err := sub.Receive(tctx(t)); err != nil {
				t.Fatal(err)
			}
			go func() {
				for range sub.Channel() { // ends when Close closes it
				}
			}()
			t.Cleanup(func() { sub.Close() })
		}
		publishMany(t, pub, "firehose", 512<<10, 400)
		s.check(t, "800 PUBLISHes of 512 KiB, to none, then to one slow and four fast subscribers", n)
	})

	t.Run("scripts-and-append", func(t *testing.T) {
		t.Parallel()
		n := startNode(t, nodeOpts{args: args})
		c := n.client(t)
		s := sampleRSS(t, n)
		v := strings.Repeat("s", 500<<10)
		for i := range 300 {
			if err := bombDo(t, c, "EVAL", "redis.call('SET', KEYS[1], ARGV[1]) return redis.call('SET', KEYS[2], ARGV[1])", 2, "e1", "e2", v); err != nil {
				t.Fatalf("EVAL %d: %v", i, err)
			}
			if i%8 == 0 {
				if err := bombDo(t, c, "DEL", "a"); err != nil {
					t.Fatalf("DEL: %v", err)
				}
			}
			if err := c.Append(tctx(t), "a", v).Err(); err != nil { // not idempotent: never sent twice
				t.Fatalf("APPEND %d: %v", i, err)
			}
		}
		s.check(t, "300 EVALs setting 2 × 500 KiB and APPENDs of 500 KiB", n)
	})

	t.Run("unread-pipeline", func(t *testing.T) {
		t.Parallel()
		n := startNode(t, nodeOpts{args: args})
		s := sampleRSS(t, n)
		// Two clients write big SETs and never read a reply. Each may
		// have about twice the largest command (16 MiB) read and not
		// answered, the budget's per-connection term.
		v := strings.Repeat("p", 500<<10)
		cmd := []byte(encode("SET", "pipe", v))
		var wg sync.WaitGroup
		const conns = 2
		for range conns {
			nc, err := net.Dial("tcp", n.addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { nc.Close() })
			wg.Add(1)
			go func() {
				defer wg.Done()
				nc.SetWriteDeadline(time.Now().Add(15 * time.Second))
				for range 400 { // 200 MiB each
					if _, err := nc.Write(cmd); err != nil {
						return // the deadline: the node stopped reading
					}
				}
			}()
		}
		wg.Wait()
		if v := mustStr(t, n.client(t), "PING"); v != "PONG" {
			t.Fatalf("PING = %q", v)
		}
		s.checkWith(t, "2 clients pipelining SETs of 500 KiB without reading", conns*2*16<<20, n)
	})

	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		c := startCluster(t, 3, args, args, args)
		leader := c.leader(20 * time.Second)
		fs := c.followers(leader)
		s := sampleRSS(t, c.nodes...)
		// Through a follower (its writes forwarded), while the other
		// follower lags, paused, then catches up.
		lagging := fs[1]
		lagging.pause()
		msetBomb(t, fs[0].client(t), 60)
		publishBomb(t, fs[0].soloClient(t), "nobody", 100)
		lagging.resume()
		msetBomb(t, fs[0].client(t), 60)
		lc := lagging.soloClient(t)
		eventually(t, 60*time.Second, "the lagging follower to catch up", func() bool {
			v, err := doWithin(lc, 5*time.Second, "STRLEN", "bomb7")
			return err == nil && v == int64(500<<10)
		})
		s.check(t, "120 MSETs of 4 MiB and 100 PUBLISHes of 512 KiB through a follower, the other one lagging then catching up", c.nodes...)
	})

	t.Run("patterns", func(t *testing.T) {
		t.Parallel()
		n := startNode(t, nodeOpts{args: args})
		s := sampleRSS(t, n)
		// Eight connections hold as many patterns as they may (1,024 of
		// 4 KiB each, 32 MiB together), one matching subscriber never
		// reads, and four read what a pattern brings them.
		long := strings.Repeat("x", 4096-16)
		for i := range 8 {
			raw := dialRaw(t, n.addr)
			cmd := []string{"PSUBSCRIBE"}
			for j := range 1024 {
				cmd = append(cmd, fmt.Sprintf("p%d:%04d:%s*", i, j, long))
			}
			raw.send(cmd...)
		}
		slow := dialRaw(t, n.addr)
		slow.send("PSUBSCRIBE", "fire*")
		for range 4 {
			sub := n.soloClient(t).PSubscribe(tctx(t), "fire*")
			if _, err := sub.Receive(tctx(t)); err != nil {
				t.Fatal(err)
			}
			go func() {
				for range sub.Channel() { // ends when Close closes it
				}
			}()
			t.Cleanup(func() { sub.Close() })
		}
		publishMany(t, n.soloClient(t), "firehose", 512<<10, 400)
		s.check(t, "8 connections of 1,024 patterns of 4 KiB, 400 PUBLISHes of 512 KiB to one slow and four fast pattern subscribers", n)
	})

	t.Run("tracking", func(t *testing.T) {
		t.Parallel()
		n := startNode(t, nodeOpts{args: args})
		s := sampleRSS(t, n)
		// One tracking connection reads 1,000 keys whose names are 500
		// KiB each (the longest argument): the table keeps at most 64 MiB
		// of names, evicting the oldest with an invalidation the
		// connection reads.
		raw := dialRaw(t, n.addr)
		raw.send("HELLO", "3")
		raw.send("CLIENT", "TRACKING", "ON")
		const marker = "all-reads-answered"
		answered := make(chan struct{})
		go func() {
			for {
				line, err := raw.r.ReadSlice('\n')
				if err == bufio.ErrBufferFull {
					continue
				}
				if err != nil {
					return
				}
				if string(line) == marker+"\r\n" {
					close(answered)
					return
				}
			}
		}()
		name := strings.Repeat("t", 500<<10)
		for i := range 1000 {
			raw.write(encode("GET", fmt.Sprintf("%s%03d", name, i)))
		}
		raw.write(encode("ECHO", marker))
		select {
		case <-answered:
		case <-time.After(60 * time.Second):
			t.Fatal("the 1,000 reads were not answered within 60 s")
		}
		s.check(t, "a tracking connection reading 1,000 keys of 500 KiB names", n)
		c := n.client(t)
		if b, _ := strconv.ParseInt(infoField(t, c, "memory", "fenced_tracking_table_bytes"), 10, 64); b <= 0 || b > 64<<20 {
			t.Errorf("INFO fenced_tracking_table_bytes = %d after 1,000 reads of 500 KiB names, want within 64 MiB", b)
		}
	})

	t.Run("snapshot-install", func(t *testing.T) {
		t.Parallel()
		snap := append([]string{"--snapshot-threshold", "64", "--trailing-logs", "8"}, args...)
		c := startCluster(t, 3, snap, snap, snap)
		leader := c.leader(20 * time.Second)
		fs := c.followers(leader)
		s := sampleRSS(t, c.nodes...)
		// A follower restarts after missing more than the log keeps:
		// it is sent a snapshot of 40 MiB of state while the writes
		// go on through the other follower.
		restarting := fs[1]
		restarting.kill()
		wc := fs[0].client(t)
		v := strings.Repeat("b", 500<<10)
		for i := range 80 {
			if err := bombDo(t, wc, "SET", fmt.Sprintf("big%d", i), v); err != nil {
				t.Fatalf("SET big%d: %v", i, err)
			}
		}
		msetBomb(t, wc, 80)
		if _, err := do(tctx(t), leader.client(t), "RAFT.SNAPSHOT"); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { // no t.Fatal off the test's goroutine
			args := []any{"MSET"}
			for j := range 8 {
				args = append(args, fmt.Sprint("bomb", j), v)
			}
			for i := range 80 {
				if err := bombDo(t, wc, args...); err != nil {
					done <- fmt.Errorf("MSET %d: %w", i, err)
					return
				}
			}
			done <- nil
		}()
		restarting.restart()
		rc := restarting.soloClient(t)
		eventually(t, 60*time.Second, "the restarted follower to catch up", func() bool {
			v, err := doWithin(rc, 5*time.Second, "STRLEN", "big79")
			return err == nil && v == int64(500<<10)
		})
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(restarting.stderr(), "installed a snapshot") {
			t.Errorf("the restarted follower did not catch up by snapshot:\n%s", restarting.stderr())
		}
		s.check(t, "a snapshot of 40 MiB installed on a restarted follower during 80 MSETs of 4 MiB", c.nodes...)
	})
}
