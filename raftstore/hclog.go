package raftstore

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// raftLogger is hashicorp/raft's logger interface (hclog.Logger) on top of
// the node's slog logger, so that raft's lines go where the node's own go,
// with the same handler, and nowhere else.
type raftLogger struct {
	base    *slog.Logger // the node's logger, without this logger's attrs
	out     *slog.Logger // base with the name and implied args
	name    string
	implied []any
	// floor is the lowest hclog level passed on, NoLevel for the default
	// (defaultRaftFloor, asked each time, so a slog.LevelVar turned down
	// to Debug brings raft along). Every logger derived from one root
	// shares it, as hclog's SetLevel requires.
	floor *atomic.Int32
}

// newRaftLogger returns the logger raft and its transport and snapshot
// store use, named "raft".
//
// Raft is chatty at Info (every election, every snapshot, every pipeline
// start). Its levels map one to one onto slog's (Trace and Debug to Debug),
// but below Warn it is heard only when the slog logger is enabled for
// Debug: a node logging at Info gets raft's warnings and errors, one
// debugging gets all of raft. One warning is demoted (see level): raft warns
// of a heartbeat timeout on every start, before any leader was known.
func newRaftLogger(l *slog.Logger) hclog.Logger {
	return newRaftLoggerWith(l, "raft", nil, new(atomic.Int32))
}

func defaultRaftFloor(l *slog.Logger) hclog.Level {
	if l.Enabled(context.Background(), slog.LevelDebug) {
		return hclog.Trace
	}
	return hclog.Warn
}

func newRaftLoggerWith(base *slog.Logger, name string, implied []any, floor *atomic.Int32) *raftLogger {
	out := base
	if name != "" {
		out = out.With("component", name)
	}
	if len(implied) > 0 {
		out = out.With(slogArgs(implied)...)
	}
	return &raftLogger{base: base, out: out, name: name, implied: implied, floor: floor}
}

// slogLevel maps an hclog level onto slog's.
func slogLevel(l hclog.Level) slog.Level {
	switch {
	case l <= hclog.Debug:
		return slog.LevelDebug
	case l == hclog.Info:
		return slog.LevelInfo
	case l == hclog.Warn:
		return slog.LevelWarn
	default:
		return slog.LevelError
	}
}

func (r *raftLogger) enabled(l hclog.Level) bool {
	floor := hclog.Level(r.floor.Load())
	if floor == hclog.NoLevel {
		floor = defaultRaftFloor(r.base)
	}
	if l == hclog.NoLevel || l >= hclog.Off || l < floor {
		return false
	}
	return r.out.Enabled(context.Background(), slogLevel(l))
}

// log is called directly by each exported method, so that the record's
// source is raft's caller.
func (r *raftLogger) log(l hclog.Level, msg string, args []any) {
	l = level(l, msg, args)
	if !r.enabled(l) {
		return
	}
	var pcs [1]uintptr
	runtime.Callers(3, pcs[:]) // runtime.Callers, log, the exported method
	rec := slog.NewRecord(time.Now(), slogLevel(l), msg, pcs[0])
	rec.Add(slogArgs(args)...)
	_ = r.out.Handler().Handle(context.Background(), rec)
}

// level is the level msg is logged at: raft's own, except for a heartbeat
// timeout with no last leader. Raft starts every node as a follower that
// waits one heartbeat timeout before its first election, so every start of
// a single node, and of each node of a cluster that starts together, warned
// of an event that is the normal way to elect the first leader. A follower
// that loses a leader it knew still warns (last-leader-addr is set).
func level(l hclog.Level, msg string, args []any) hclog.Level {
	if l != hclog.Warn || msg != "heartbeat timeout reached, starting election" {
		return l
	}
	for i := 0; i+1 < len(args); i += 2 {
		if k, _ := args[i].(string); (k == "last-leader-addr" || k == "last-leader-id") && fmt.Sprint(args[i+1]) != "" {
			return l
		}
	}
	return hclog.Info
}

// slogArgs converts hclog's argument values that slog would not render as
// hclog does: its formatting wrappers, and Stringers (raft passes *Raft,
// whose fields are unexported, so JSON would print {}).
func slogArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		if i%2 == 0 && i+1 < len(args) {
			out[i] = a // a key
			continue
		}
		switch v := a.(type) {
		case hclog.Format:
			if f, ok := firstString(v); ok {
				a = fmt.Sprintf(f, v[1:]...)
			} else {
				a = fmt.Sprint(v...)
			}
		case hclog.Hex:
			a = "0x" + strconv.FormatInt(int64(v), 16)
		case hclog.Octal:
			a = "0" + strconv.FormatInt(int64(v), 8)
		case hclog.Binary:
			a = "0b" + strconv.FormatInt(int64(v), 2)
		case hclog.Quote:
			a = strconv.Quote(string(v))
		case error, slog.LogValuer, time.Duration, time.Time:
		case fmt.Stringer:
			a = fmt.Sprint(v) // fmt survives a nil receiver
		}
		out[i] = a
	}
	return out
}

func firstString(v []any) (string, bool) {
	if len(v) == 0 {
		return "", false
	}
	s, ok := v[0].(string)
	return s, ok
}

func (r *raftLogger) Log(l hclog.Level, msg string, args ...any) { r.log(l, msg, args) }
func (r *raftLogger) Trace(msg string, args ...any)              { r.log(hclog.Trace, msg, args) }
func (r *raftLogger) Debug(msg string, args ...any)              { r.log(hclog.Debug, msg, args) }
func (r *raftLogger) Info(msg string, args ...any)               { r.log(hclog.Info, msg, args) }
func (r *raftLogger) Warn(msg string, args ...any)               { r.log(hclog.Warn, msg, args) }
func (r *raftLogger) Error(msg string, args ...any)              { r.log(hclog.Error, msg, args) }

func (r *raftLogger) IsTrace() bool { return r.enabled(hclog.Trace) }
func (r *raftLogger) IsDebug() bool { return r.enabled(hclog.Debug) }
func (r *raftLogger) IsInfo() bool  { return r.enabled(hclog.Info) }
func (r *raftLogger) IsWarn() bool  { return r.enabled(hclog.Warn) }
func (r *raftLogger) IsError() bool { return r.enabled(hclog.Error) }

func (r *raftLogger) ImpliedArgs() []any { return append([]any(nil), r.implied...) }

func (r *raftLogger) With(args ...any) hclog.Logger {
	implied := append(append([]any(nil), r.implied...), args...)
	return newRaftLoggerWith(r.base, r.name, implied, r.floor)
}

func (r *raftLogger) Name() string { return r.name }

// Named appends to the name, as hclog does: "raft" becomes "raft.snapshot".
func (r *raftLogger) Named(name string) hclog.Logger {
	if r.name != "" {
		name = r.name + "." + name
	}
	return newRaftLoggerWith(r.base, name, r.implied, r.floor)
}

func (r *raftLogger) ResetNamed(name string) hclog.Logger {
	return newRaftLoggerWith(r.base, name, r.implied, r.floor)
}

// SetLevel sets the lowest level passed on to slog; NoLevel restores the
// default. The slog handler still filters what it is not enabled for.
func (r *raftLogger) SetLevel(l hclog.Level) { r.floor.Store(int32(l)) }

// GetLevel returns the lowest level that is logged, counting both the floor
// and the slog handler; Off if none is.
func (r *raftLogger) GetLevel() hclog.Level {
	for l := hclog.Trace; l <= hclog.Error; l++ {
		if r.enabled(l) {
			return l
		}
	}
	return hclog.Off
}

func (r *raftLogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(r.StandardWriter(opts), "", 0)
}

// StandardWriter returns a writer whose every write is one line logged
// through this logger: at opts.ForceLevel if set, else at the level its
// "[WARN]"-style prefix names if opts.InferLevels, else at Info.
func (r *raftLogger) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	w := &stdWriter{r: r}
	if opts != nil {
		w.force, w.infer = opts.ForceLevel, opts.InferLevels
	}
	return w
}

type stdWriter struct {
	r     *raftLogger
	force hclog.Level
	infer bool
}

var levelPrefixes = []struct {
	prefix string
	level  hclog.Level
}{
	{"[TRACE]", hclog.Trace}, {"[DEBUG]", hclog.Debug}, {"[INFO]", hclog.Info},
	{"[WARN]", hclog.Warn}, {"[ERROR]", hclog.Error}, {"[ERR]", hclog.Error},
}

func (w *stdWriter) Write(p []byte) (int, error) {
	msg := string(bytes.TrimRight(p, " \t\n"))
	level := hclog.Info
	if w.force != hclog.NoLevel || w.infer {
		for _, lp := range levelPrefixes {
			if rest, ok := strings.CutPrefix(msg, lp.prefix); ok {
				msg, level = strings.TrimSpace(rest), lp.level
				break
			}
		}
	}
	if w.force != hclog.NoLevel {
		level = w.force
	}
	w.r.Log(level, msg)
	return len(p), nil
}
