package raftstore

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/fenced/fenced/lockstate"
)

// records is a slog handler that keeps what it is given.
type records struct {
	level slog.Leveler
	attrs []slog.Attr
	mu    *sync.Mutex
	got   *[]slog.Record
}

func newRecords(level slog.Leveler) *records {
	return &records{level: level, mu: new(sync.Mutex), got: new([]slog.Record)}
}

func (h *records) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }
func (h *records) WithGroup(string) slog.Handler                { return h }
func (h *records) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return &c
}

func (h *records) Handle(_ context.Context, r slog.Record) error {
	c := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	c.AddAttrs(h.attrs...) // as a text handler prints them: With's first
	r.Attrs(func(a slog.Attr) bool { c.AddAttrs(a); return true })
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.got = append(*h.got, c)
	return nil
}

// take returns the records so far as "LEVEL msg k=v ..." and forgets them.
func (h *records) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range *h.got {
		s := r.Level.String() + " " + r.Message
		r.Attrs(func(a slog.Attr) bool { s += " " + a.String(); return true })
		out = append(out, s)
	}
	*h.got = nil
	return out
}

func TestRaftLoggerLevels(t *testing.T) {
	all := []hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn, hclog.Error}
	logAll := func(l hclog.Logger) {
		for _, lv := range all {
			l.Log(lv, lv.String())
		}
	}
	component := " component=raft"

	// Debug enabled: everything passes, Trace as Debug.
	h := newRecords(slog.LevelDebug)
	l := newRaftLogger(slog.New(h))
	logAll(l)
	want := []string{"DEBUG trace", "DEBUG debug", "INFO info", "WARN warn", "ERROR error"}
	if got := h.take(); strings.Join(got, "|") != strings.Join(want, component+"|")+component {
		t.Errorf("at Debug: got %q, want %q with%s", got, want, component)
	}
	if !l.IsTrace() || !l.IsDebug() || l.GetLevel() != hclog.Trace {
		t.Errorf("at Debug: IsTrace %v IsDebug %v GetLevel %v", l.IsTrace(), l.IsDebug(), l.GetLevel())
	}

	// Info enabled: raft is held at Warn.
	lv := new(slog.LevelVar)
	h = newRecords(lv)
	l = newRaftLogger(slog.New(h))
	logAll(l)
	l.Info("info", "k", 1)
	if got := h.take(); strings.Join(got, "|") != "WARN warn"+component+"|ERROR error"+component {
		t.Errorf("at Info: got %q", got)
	}
	if l.IsDebug() || l.IsInfo() || !l.IsWarn() || !l.IsError() || l.GetLevel() != hclog.Warn {
		t.Errorf("at Info: IsDebug %v IsInfo %v IsWarn %v IsError %v GetLevel %v", l.IsDebug(), l.IsInfo(), l.IsWarn(), l.IsError(), l.GetLevel())
	}

	// The default follows the slog level as it changes.
	lv.Set(slog.LevelDebug)
	if !l.IsTrace() || l.GetLevel() != hclog.Trace {
		t.Errorf("after turning slog down to Debug: IsTrace %v GetLevel %v", l.IsTrace(), l.GetLevel())
	}
	lv.Set(slog.LevelError)
	if l.IsWarn() || !l.IsError() || l.GetLevel() != hclog.Error {
		t.Errorf("at slog Error: IsWarn %v GetLevel %v", l.IsWarn(), l.GetLevel())
	}
	lv.Set(slog.LevelInfo)

	// SetLevel moves the floor for every derived logger; the slog handler
	// still filters.
	sub := l.With("a", 1).Named("x")
	l.SetLevel(hclog.Info)
	sub.Info("now on")
	sub.Debug("still off")
	if got := h.take(); len(got) != 1 || got[0] != "INFO now on component=raft.x a=1" {
		t.Errorf("after SetLevel(Info): got %q", got)
	}
	if sub.GetLevel() != hclog.Info {
		t.Errorf("derived GetLevel = %v, want info", sub.GetLevel())
	}
	l.SetLevel(hclog.Off)
	logAll(sub)
	if got := h.take(); len(got) != 0 || sub.GetLevel() != hclog.Off {
		t.Errorf("after SetLevel(Off): got %q, GetLevel %v", got, sub.GetLevel())
	}
	l.SetLevel(hclog.NoLevel)
	if l.IsInfo() || !l.IsWarn() {
		t.Errorf("SetLevel(NoLevel) did not restore the default: IsInfo %v IsWarn %v", l.IsInfo(), l.IsWarn())
	}
}

type stringer struct{ s string }

func (s *stringer) String() string { return s.s }

func TestRaftLoggerWithNamed(t *testing.T) {
	h := newRecords(slog.LevelDebug)
	root := newRaftLogger(slog.New(h))
	if root.Name() != "raft" || len(root.ImpliedArgs()) != 0 {
		t.Fatalf("root: name %q implied %v", root.Name(), root.ImpliedArgs())
	}
	w := root.With("peer", "n2")
	n := w.Named("snapshot")
	r := n.ResetNamed("transport").With("try", 3)
	if n.Name() != "raft.snapshot" || r.Name() != "transport" {
		t.Errorf("names %q, %q", n.Name(), r.Name())
	}
	if got := fmt.Sprint(r.ImpliedArgs()); got != "[peer n2 try 3]" {
		t.Errorf("ImpliedArgs = %s", got)
	}
	root.Info("root")
	w.Info("with")
	n.Warn("named", "index", 7)
	r.Error("reset")
	want := []string{
		"INFO root component=raft",
		"INFO with component=raft peer=n2",
		"WARN named component=raft.snapshot peer=n2 index=7",
		"ERROR reset component=transport peer=n2 try=3",
	}
	if got := h.take(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// hclog's value wrappers and Stringers render as hclog renders them.
	var nilStringer *stringer
	root.Info("values", "f", hclog.Fmt("%d/%d", 1, 2), "h", hclog.Hex(255), "q", hclog.Quote(`a"b`),
		"s", &stringer{"node n1"}, "nil", nilStringer, "d", time.Second)
	if got := h.take(); len(got) != 1 || got[0] != `INFO values component=raft f=1/2 h=0xff q="a\"b" s=node n1 nil=<nil> d=1s` {
		t.Errorf("values: got %q", got)
	}

	// The standard logger and writer log through slog too.
	root.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}).Print("[WARN] inferred")
	fmt.Fprintln(root.StandardWriter(nil), "[ERROR] plain")
	fmt.Fprintln(root.StandardWriter(&hclog.StandardLoggerOptions{ForceLevel: hclog.Error}), "[INFO] forced")
	want = []string{"WARN inferred component=raft", "INFO [ERROR] plain component=raft", "ERROR forced component=raft"}
	if got := h.take(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("standard logger: got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// syncBuffer is a bytes.Buffer safe for raft's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// captureStderr sends os.Stderr, and hclog's default output, which raft's
// own loggers would use, into a pipe until the test ends, and returns what
// was written there.
func captureStderr(t *testing.T) (written func() string) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	oldStderr, oldDefault := os.Stderr, hclog.DefaultOutput
	os.Stderr, hclog.DefaultOutput = w, w
	var out bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&out, r); close(done) }()
	var once sync.Once
	restore := func() {
		once.Do(func() {
			os.Stderr, hclog.DefaultOutput = oldStderr, oldDefault
			w.Close()
			<-done
			r.Close()
		})
	}
	t.Cleanup(restore)
	return func() string { restore(); return out.String() }
}

// TestRaftLogsThroughSlog runs a real node and finds raft's own lines in
// the node's slog logger, at the levels it promises, and none on stderr.
func TestRaftLogsThroughSlog(t *testing.T) {
	run := func(t *testing.T, level slog.Level, snapshot bool) string {
		var buf syncBuffer
		cfg := testNodeConfig(t.TempDir())
		cfg.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level}))
		stderr := captureStderr(t)
		n, err := Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if n != nil {
				n.Close()
			}
		}()
		for deadline := time.Now().Add(10 * time.Second); !n.CanPropose(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("node did not become ready: %+v", n.Status())
			}
		}
		if snapshot {
			propose(t, n, lockstate.Entry{Op: lockstate.OpSessionOpen, Session: sessionID(0), TTL: 60_000})
			if err := n.Snapshot(); err != nil {
				t.Fatal(err)
			}
		}
		err = n.Close()
		n = nil
		if err != nil {
			t.Fatal(err)
		}
		if s := stderr(); s != "" {
			t.Errorf("written to stderr:\n%s", s)
		}
		return buf.String()
	}
	has := func(t *testing.T, log string, parts ...string) {
		t.Helper()
		for _, line := range strings.Split(log, "\n") {
			if !strings.Contains(line, parts[0]) {
				continue
			}
			for _, p := range parts[1:] {
				if !strings.Contains(line, p) {
					t.Errorf("line %q lacks %q", line, p)
				}
			}
			return
		}
		t.Errorf("no line with %q in:\n%s", parts[0], log)
	}

	t.Run("Info", func(t *testing.T) {
		log := run(t, slog.LevelInfo, false)
		// A single-node start warns of nothing: the heartbeat timeout
		// before its first election is demoted to Info, below raft's floor.
		if strings.Contains(log, "level=WARN") || strings.Contains(log, "level=ERROR") || strings.Contains(log, "heartbeat timeout") {
			t.Errorf("a single-node start logged a warning or raft's heartbeat timeout:\n%s", log)
		}
		has(t, log, `level=INFO msg="leader ready"`, "term=")
		if strings.Contains(log, "entering leader state") {
			t.Errorf("raft's Info lines reached a logger at Info:\n%s", log)
		}
	})
	t.Run("Debug", func(t *testing.T) {
		log := run(t, slog.LevelDebug, true)
		has(t, log, `level=INFO msg="heartbeat timeout reached, starting election" component=raft`, `last-leader-id=""`)
		has(t, log, `level=INFO msg="entering leader state" component=raft`, `leader="Node at `)
		has(t, log, `level=INFO msg="starting snapshot up to" component=raft`, "index=")
		// The snapshot store's lines, with the attrs raft's With adds.
		has(t, log, `level=INFO msg="creating new snapshot" component=raft`, "path=")
	})
}

// TestRaftLoggerFirstElection: the heartbeat timeout is a warning only
// when a leader was known, the one that was lost.
func TestRaftLoggerFirstElection(t *testing.T) {
	h := newRecords(slog.LevelInfo)
	l := newRaftLogger(slog.New(h))
	const msg = "heartbeat timeout reached, starting election"
	l.Warn(msg, "last-leader-addr", raft.ServerAddress(""), "last-leader-id", raft.ServerID(""))
	l.Warn(msg, "last-leader-addr", raft.ServerAddress("127.0.0.1:7001"), "last-leader-id", raft.ServerID("n1"))
	l.Warn("some other warning")
	got := h.take()
	want := []string{
		`WARN heartbeat timeout reached, starting election component=raft last-leader-addr=127.0.0.1:7001 last-leader-id=n1`,
		`WARN some other warning component=raft`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
