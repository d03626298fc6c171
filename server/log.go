package server

import (
	"errors"
	"io"
	"log/slog"
	"strings"
)

// Log formats (--log-format).
const (
	LogText = "text" // slog's TextHandler: key=value, as before the flag
	LogJSON = "json" // slog's JSONHandler: one object per line
)

// NewLogger returns the logger a node built from c logs through: slog's
// text or JSON handler on w at c.LogLevel. Raft's and Pebble's messages go
// through it too (raftstore), so one format covers every line.
func (c Config) NewLogger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: c.LogLevel}
	if c.LogFormat == LogJSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// logLevelFlag is --log-level: the four levels slog names, in any case.
type logLevelFlag struct{ dst *slog.Level }

func (f logLevelFlag) String() string {
	if f.dst == nil {
		return "info"
	}
	return strings.ToLower(f.dst.String())
}

func (f logLevelFlag) Set(v string) error {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "debug":
		*f.dst = slog.LevelDebug
	case "info":
		*f.dst = slog.LevelInfo
	case "warn":
		*f.dst = slog.LevelWarn
	case "error":
		*f.dst = slog.LevelError
	default:
		return errors.New("want debug, info, warn or error")
	}
	return nil
}

// logFormatFlag is --log-format.
type logFormatFlag struct{ dst *string }

func (f logFormatFlag) String() string {
	if f.dst == nil {
		return LogText
	}
	return *f.dst
}

func (f logFormatFlag) Set(v string) error {
	switch v := strings.ToLower(strings.TrimSpace(v)); v {
	case LogText, LogJSON:
		*f.dst = v
		return nil
	}
	return errors.New("want text or json")
}
