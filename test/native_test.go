package test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// Acceptance a: the built binary, driven with go-redis (RESP2 and RESP3)
// through SESSION.OPEN, SESSION.INFO/LIST/HEARTBEAT/KILL, FLOCK, FUNLOCK,
// FENCE and LOCK.INFO as the README's Commands describe: reply types,
// values and the fields of LOCK.INFO and SESSION.INFO.
func TestNativeCommands(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			c := n.clientProto(t, proto)
			lock := fmt.Sprintf("orders-%d", proto)
			lock2 := fmt.Sprintf("payments-%d", proto)

			before := time.Now()
			s := openSession(t, c, 5000, "worker-1")
			si := getSessionInfo(t, c, s)
			if si.ID != s || si.Name != "worker-1" || si.TTL != 5000 {
				t.Errorf("SESSION.INFO = %+v, want id %s, name worker-1, ttl 5000", si, s)
			}
			if si.Remaining <= 0 || si.Remaining > 5000 {
				t.Errorf("SESSION.INFO remaining = %d, want in (0, 5000]", si.Remaining)
			}
			created, err := time.Parse(time.RFC3339Nano, si.Created)
			if err != nil {
				t.Errorf("SESSION.INFO created = %q: %v", si.Created, err)
			} else if created.Before(before.Add(-time.Minute)) || created.After(time.Now().Add(time.Minute)) {
				t.Errorf("SESSION.INFO created = %v, want about now (%v)", created, before)
			}
			if len(si.Locks) != 0 || len(si.Waiting) != 0 {
				t.Errorf("new session holds %v and waits on %v, want nothing", si.Locks, si.Waiting)
			}
			// Default TTL is 10000 ms.
			s2 := openSession(t, c, 0, "")
			if si2 := getSessionInfo(t, c, s2); si2.TTL != 10000 || si2.Name != "" {
				t.Errorf("SESSION.OPEN without options: %+v, want ttl 10000 and empty name", si2)
			}
			// Out-of-range TTLs are errors (bounds 500 ms .. 24 h).
			mustErr(t, c, "ERR", "SESSION.OPEN", "TTL", 499)
			mustErr(t, c, "ERR", "SESSION.OPEN", "TTL", 24*3600*1000+1)

			// A lock never taken: FENCE is null, LOCK.INFO describes a free lock.
			mustNil(t, c, "FENCE", lock)
			if li := getLockInfo(t, c, lock); li.Held || li.Count != 0 || len(li.Waiters) != 0 {
				t.Errorf("LOCK.INFO of a free lock = %+v", li)
			}

			tok := mustInt(t, c, "FLOCK", lock, s)
			if tok <= 0 {
				t.Fatalf("FLOCK token = %d, want > 0", tok)
			}
			if got := mustInt(t, c, "FENCE", lock); got != tok {
				t.Errorf("FENCE %s = %d, want %d", lock, got, tok)
			}
			if got := mustInt(t, c, "FENCE", lock, s); got != tok {
				t.Errorf("FENCE %s session = %d, want %d", lock, got, tok)
			}
			mustErr(t, c, "NOTOWNER", "FENCE", lock, s, "OWNER", "other-task")
			mustErr(t, c, "NOTOWNER", "FENCE", lock, s2)
			want := lockInfo{Held: true, Holder: s, Owner: "", Count: 1, Limit: 0, Token: tok}
			if li := getLockInfo(t, c, lock); !equalLockInfo(li, want) {
				t.Errorf("LOCK.INFO after FLOCK = %+v, want %+v", li, want)
			}
			if si := getSessionInfo(t, c, s); !slices.Equal(si.Locks, []string{lock}) {
				t.Errorf("SESSION.INFO locks = %v, want [%s]", si.Locks, lock)
			}
			if typ := mustStr(t, c, "TYPE", lock); typ != "fencedlock" {
				t.Errorf("TYPE of a held lock = %q, want fencedlock", typ)
			}

			// Names are case-insensitive; a reentrant acquire gives the same token.
			if got := mustInt(t, c, "flock", lock, s); got != tok {
				t.Errorf("reentrant flock = %d, want %d", got, tok)
			}
			want.Count = 2
			if li := getLockInfo(t, c, lock); !equalLockInfo(li, want) {
				t.Errorf("LOCK.INFO after reentrant FLOCK = %+v, want %+v", li, want)
			}
			// Held by another owner, no WAIT: null at once, nothing queued.
			mustNil(t, c, "FLOCK", lock, s2)
			mustNil(t, c, "FLOCK", lock, s, "OWNER", "other-task")
			if li := getLockInfo(t, c, lock); !equalLockInfo(li, want) {
				t.Errorf("LOCK.INFO after refused FLOCKs = %+v, want %+v", li, want)
			}

			// FUNLOCK answers the remaining count.
			if got := mustInt(t, c, "FUNLOCK", lock, s); got != 1 {
				t.Errorf("first FUNLOCK = %d, want 1", got)
			}
			if got := mustInt(t, c, "funlock", lock, s); got != 0 {
				t.Errorf("second FUNLOCK = %d, want 0", got)
			}
			mustNil(t, c, "FENCE", lock)
			if li := getLockInfo(t, c, lock); li.Held || li.Count != 0 || len(li.Waiters) != 0 {
				t.Errorf("LOCK.INFO after full release = %+v, want free", li)
			}
			mustErr(t, c, "NOTOWNER", "FUNLOCK", lock, s)

			// Options in any order and any case; an owner tag.
			tok2 := mustInt(t, c, "FLOCK", lock2, s2, "limit", 2, "Owner", "t1")
			if tok2 <= tok {
				t.Errorf("token of a later grant %d, want > %d", tok2, tok)
			}
			want2 := lockInfo{Held: true, Holder: s2, Owner: "t1", Count: 1, Limit: 2, Token: tok2}
			if li := getLockInfo(t, c, lock2); !equalLockInfo(li, want2) {
				t.Errorf("LOCK.INFO of a tagged lock = %+v, want %+v", li, want2)
			}
			if got := mustInt(t, c, "FENCE", lock2, s2, "OWNER", "t1"); got != tok2 {
				t.Errorf("FENCE with owner tag = %d, want %d", got, tok2)
			}
			mustErr(t, c, "NOTOWNER", "FENCE", lock2, s2) // the empty tag is another owner
			if si := getSessionInfo(t, c, s2); !slices.Equal(si.Locks, []string{lock2}) {
				t.Errorf("SESSION.INFO locks = %v, want [%s]", si.Locks, lock2)
			}

			list := sessionList(t, c)
			if !sort.StringsAreSorted(list) || !slices.Contains(list, s) || !slices.Contains(list, s2) {
				t.Errorf("SESSION.LIST = %v, want sorted and containing %s and %s", list, s, s2)
			}
			if got := mustInt(t, c, "SESSION.HEARTBEAT", s); got != 5000 {
				t.Errorf("SESSION.HEARTBEAT = %d, want 5000", got)
			}
			if got := mustInt(t, c, "FUNLOCK", lock2, s2, "FENCE", tok2, "OWNER", "t1"); got != 0 {
				t.Errorf("FUNLOCK with FENCE = %d, want 0", got)
			}
			if got := mustInt(t, c, "SESSION.KILL", s); got != 1 {
				t.Errorf("SESSION.KILL of an open session = %d, want 1", got)
			}
			if got := mustInt(t, c, "SESSION.KILL", s); got != 0 {
				t.Errorf("SESSION.KILL again = %d, want 0", got)
			}
			mustErr(t, c, "NOSESSION", "SESSION.INFO", s)
			mustErr(t, c, "NOSESSION", "SESSION.HEARTBEAT", s)
			if slices.Contains(sessionList(t, c), s) {
				t.Errorf("SESSION.LIST still lists killed session %s", s)
			}
			mustInt(t, c, "SESSION.KILL", s2)
		})
	}
}

// Acceptance a (wire level): the reply types on the wire, in RESP2 and,
// after HELLO 3, RESP3: the session id is a bulk string, tokens and counts
// are integers, a null is $-1 in RESP2 and _ in RESP3, LOCK.INFO is a flat
// array of pairs in RESP2 and a map in RESP3, errors start with their code.
func TestNativeWireTypes(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	rc := dialRaw(t, n.addr)

	rc.send("SESSION.OPEN", "TTL", "10000")
	sv := rc.read()
	if sv.kind != '$' || len(sv.str) != 32 {
		t.Fatalf("SESSION.OPEN reply %v, want a 32-byte bulk string", sv)
	}
	s := sv.str
	rc.send("FENCE", "wire")
	if v := rc.read(); v.kind != '$' || !v.null {
		t.Errorf("RESP2 FENCE of a free lock = %v, want $-1", v)
	}
	rc.send("FLOCK", "wire", s)
	tv := rc.read()
	if tv.kind != ':' || tv.num <= 0 {
		t.Fatalf("FLOCK reply %v, want a positive integer", tv)
	}
	rc.send("LOCK.INFO", "wire")
	li := rc.read()
	if li.kind != '*' || len(li.elems) != 12 {
		t.Fatalf("RESP2 LOCK.INFO = %v, want a flat array of 6 pairs", li)
	}
	rc.send("LOCK.INFO", "free-wire")
	li = rc.read()
	if li.kind != '*' || len(li.elems) != 12 || li.elems[0].str != "holder" || li.elems[1].kind != '$' || !li.elems[1].null {
		t.Errorf("RESP2 LOCK.INFO of a free lock = %v, want holder $-1", li)
	}
	rc.send("FUNLOCK", "wire", "0123456789abcdef0123456789abcdef")
	if v := rc.read(); v.kind != '-' || !strings.HasPrefix(v.str, "NOSESSION ") {
		t.Errorf("FUNLOCK with an unknown session = %v, want -NOSESSION ...", v)
	}
	rc.send("FLOCK", "wire", s, "OWNER", "x")
	if v := rc.read(); v.kind != '$' || !v.null {
		t.Errorf("RESP2 FLOCK of a held lock = %v, want $-1", v)
	}

	rc.send("HELLO", "3")
	if v := rc.read(); v.kind != '%' {
		t.Fatalf("HELLO 3 = %v, want a map", v)
	}
	rc.send("FENCE", "free-wire")
	if v := rc.read(); v.kind != '_' {
		t.Errorf("RESP3 FENCE of a free lock = %v, want _", v)
	}
	rc.send("LOCK.INFO", "wire")
	li = rc.read()
	if li.kind != '%' || len(li.elems) != 12 {
		t.Fatalf("RESP3 LOCK.INFO = %v, want a map of 6 pairs", li)
	}
	fields := map[string]rv{}
	for i := 0; i < len(li.elems); i += 2 {
		fields[li.elems[i].str] = li.elems[i+1]
	}
	if v := fields["holder"]; v.kind != '$' || v.str != s {
		t.Errorf("holder = %v, want bulk %s", v, s)
	}
	if v := fields["token"]; v.kind != ':' || v.num != tv.num {
		t.Errorf("token = %v, want :%d", v, tv.num)
	}
	if v := fields["count"]; v.kind != ':' || v.num != 1 {
		t.Errorf("count = %v, want :1", v)
	}
	if v := fields["waiters"]; v.kind != '*' || len(v.elems) != 0 {
		t.Errorf("waiters = %v, want an empty array", v)
	}
	rc.send("SESSION.INFO", s)
	if v := rc.read(); v.kind != '%' || len(v.elems) != 14 {
		t.Errorf("RESP3 SESSION.INFO = %v, want a map of 7 pairs", v)
	}
	rc.send("FLOCK", "wire", s, "OWNER", "x")
	if v := rc.read(); v.kind != '_' {
		t.Errorf("RESP3 FLOCK of a held lock = %v, want _", v)
	}
	rc.send("FUNLOCK", "wire", s, "OWNER", "x")
	if v := rc.read(); v.kind != '-' || !strings.HasPrefix(v.str, "NOTOWNER ") {
		t.Errorf("FUNLOCK by a non-owner = %v, want -NOTOWNER ...", v)
	}
}

// Acceptance a: the binary with no flags, started in an empty working
// directory, serves on 127.0.0.1:6379 and keeps its data in ./fenced-data.
func TestNoFlagsDefaults(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"127.0.0.1:6379", "127.0.0.1:7379"} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Skipf("%s is busy (%v); cannot check the defaults", addr, err)
		}
		ln.Close()
	}
	wd := t.TempDir()
	n := startNode(t, nodeOpts{noFlags: true, workDir: wd})
	if n.addr != "127.0.0.1:6379" || n.raftAddr != "127.0.0.1:7379" {
		t.Errorf("no-flags node serves %s (raft %s), want 127.0.0.1:6379 (raft 127.0.0.1:7379)", n.addr, n.raftAddr)
	}
	c := n.client(t)
	s := openSession(t, c, 0, "")
	if tok := mustInt(t, c, "FLOCK", "defaults", s); tok <= 0 {
		t.Errorf("FLOCK token %d, want > 0", tok)
	}
	n.term()
	fi, err := os.Stat(filepath.Join(wd, "fenced-data"))
	if err != nil || !fi.IsDir() {
		t.Fatalf("./fenced-data in the working directory: %v", err)
	}
	entries, err := os.ReadDir(filepath.Join(wd, "fenced-data"))
	if err != nil || len(entries) == 0 {
		t.Errorf("./fenced-data is empty (%v)", err)
	}
	// The data is really there: a restart still has the lock.
	n.restart()
	c = n.client(t)
	if li := getLockInfo(t, c, "defaults"); !li.Held || li.Holder != s {
		t.Errorf("after restart, LOCK.INFO = %+v, want held by %s", li, s)
	}
}

func equalLockInfo(a, b lockInfo) bool {
	if a.Held != b.Held || a.Holder != b.Holder || a.Owner != b.Owner || a.Count != b.Count ||
		a.Limit != b.Limit || a.Token != b.Token || len(a.Waiters) != len(b.Waiters) {
		return false
	}
	for i := range a.Waiters {
		if a.Waiters[i] != b.Waiters[i] {
			return false
		}
	}
	return true
}

// Acceptance a: malformed native commands answer an
// error whose first word is one uppercase code (ERR for bad arguments), and
// change nothing.
func TestErrorReplies(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	s := openSession(t, c, 60000, "e")
	tok := mustInt(t, c, "FLOCK", "err-lock", s)
	before := getLockInfo(t, c, "err-lock")
	codeRE := regexp.MustCompile(`^[A-Z]+( |$)`)
	for _, args := range [][]any{
		{"FLOCK"},
		{"FLOCK", "err-lock"},
		{"FLOCK", "err-lock", s, "BOGUS", 1},
		{"FLOCK", "err-lock", s, "WAIT"},
		{"FLOCK", "err-lock", s, "WAIT", -1},
		{"FLOCK", "err-lock", s, "WAIT", "soon"},
		{"FLOCK", "err-lock", s, "LIMIT", -1},
		{"FLOCK", "err-lock", s, "LIMIT", "1.5"},
		{"FUNLOCK", "err-lock", s, "FENCE", 0},
		{"FUNLOCK", "err-lock", s, "FENCE", "x"},
		{"FUNLOCK", "err-lock", s, "OWNER"},
		{"FENCE", "err-lock", s, "TAG", "x"},
		{"LOCK.INFO"},
		{"LOCK.INFO", "a", "b"},
		{"LOCK.FORCEUNLOCK", "err-lock", "x"},
		{"SESSION.OPEN", "TTL", 0},
		{"SESSION.OPEN", "TTL", "x"},
		{"SESSION.OPEN", "NAME"},
		{"SESSION.HEARTBEAT"},
		{"NOSUCHCOMMAND", "x"},
	} {
		_, err := do(tctx(t), c, args...)
		if !isCode(err, "ERR") {
			t.Errorf("%v: %v, want -ERR ...", args, err)
		}
		if err != nil && !codeRE.MatchString(err.Error()) {
			t.Errorf("%v: error %q does not start with an uppercase code word", args, err)
		}
	}
	if li := getLockInfo(t, c, "err-lock"); !equalLockInfo(li, before) || li.Token != tok {
		t.Errorf("after bad commands LOCK.INFO = %+v, want %+v", li, before)
	}
	if si := getSessionInfo(t, c, s); !slices.Equal(si.Locks, []string{"err-lock"}) {
		t.Errorf("after bad commands SESSION.INFO = %+v", si)
	}
	if list := sessionList(t, c); len(list) != 1 {
		t.Errorf("bad SESSION.OPENs opened sessions: %v", list)
	}
}

// LOCK.FORCEUNLOCK lock token releases the lock, whatever
// its count, only if token is current (-STALEFENCE otherwise), and hands it
// to the next waiter.
func TestForceUnlock(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	const l = "force"
	h := openSession(t, c, 60000, "h")
	w := openSession(t, c, 60000, "w")
	old := mustInt(t, c, "FLOCK", l, h)
	mustInt(t, c, "FUNLOCK", l, h)
	tok := mustInt(t, c, "FLOCK", l, h)
	mustInt(t, c, "FLOCK", l, h)
	wc := n.soloClient(t)
	r := async(wc, "FLOCK", l, w, "WAIT", 0)
	waitQueued(t, c, l, w)
	mustErr(t, c, "STALEFENCE", "LOCK.FORCEUNLOCK", l, old)
	if li := getLockInfo(t, c, l); li.Holder != h || li.Count != 2 || li.Token != tok {
		t.Fatalf("after a stale FORCEUNLOCK: %+v", li)
	}
	if got := mustInt(t, c, "LOCK.FORCEUNLOCK", l, tok); got != 1 {
		t.Fatalf("LOCK.FORCEUNLOCK = %d, want 1", got)
	}
	wt := replyInt(t, await(t, r, "waiter"), "waiter")
	if wt <= tok {
		t.Fatalf("waiter token %d, want > %d", wt, tok)
	}
	want := lockInfo{Held: true, Holder: w, Count: 1, Token: wt}
	if li := getLockInfo(t, c, l); !equalLockInfo(li, want) {
		t.Fatalf("LOCK.INFO = %+v, want %+v", li, want)
	}
	mustErr(t, c, "NOTOWNER", "FUNLOCK", l, h)
	if si := getSessionInfo(t, c, h); len(si.Locks) != 0 {
		t.Fatalf("forced-out holder still lists %v", si.Locks)
	}
}
