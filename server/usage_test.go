package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
)

func noEnv(string) string { return "" }

// TestLogFlags: --log-level and --log-format parse in any case, from the
// command line or the --config file, and refuse anything else naming the
// flag.
func TestLogFlags(t *testing.T) {
	c, err := parseFlags(nil, noEnv, io.Discard)
	if err != nil || c.LogLevel != slog.LevelInfo || c.LogFormat != LogText {
		t.Fatalf("defaults: level %v format %q err %v, want INFO text", c.LogLevel, c.LogFormat, err)
	}
	for _, tc := range []struct {
		args   []string
		level  slog.Level
		format string
	}{
		{[]string{"--log-level", "debug"}, slog.LevelDebug, LogText},
		{[]string{"--log-level=WARN", "--log-format=JSON"}, slog.LevelWarn, LogJSON},
		{[]string{"-log-level", "error", "-log-format", "text"}, slog.LevelError, LogText},
		{[]string{"--config", writeFile(t, "log-level debug\nlog-format json\n")}, slog.LevelDebug, LogJSON},
		{[]string{"--log-level", "info", "--config", writeFile(t, "log-level debug\n")}, slog.LevelInfo, LogText},
	} {
		c, err := parseFlags(tc.args, noEnv, io.Discard)
		if err != nil || c.LogLevel != tc.level || c.LogFormat != tc.format {
			t.Errorf("%q: level %v format %q err %v, want %v %q", tc.args, c.LogLevel, c.LogFormat, err, tc.level, tc.format)
		}
	}
	for _, args := range [][]string{
		{"--log-level", "verbose"}, {"--log-level", ""}, {"--log-level", "-4"}, {"--log-level", "INFO+2"},
		{"--log-format", "xml"}, {"--log-format", ""}, {"--log-format", "logfmt"},
		{"--config", writeFile(t, "log-format yaml\n")},
	} {
		_, err := parseFlags(args, noEnv, io.Discard)
		name := strings.TrimPrefix(args[0], "--")
		if name == "config" {
			name = "log-format"
		}
		if !errors.Is(err, ErrConfig) || !strings.Contains(fmt.Sprint(err), name) {
			t.Errorf("%q: %v, want a configuration error naming %s", args, err, name)
		}
	}
	bad := DefaultConfig()
	bad.LogFormat = "xml"
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "--log-format") {
		t.Errorf("Validate of LogFormat xml: %v, want an error naming --log-format", err)
	}
}

// TestNewLogger: the JSON format writes one object per line with slog's
// keys; the level filters.
func TestNewLogger(t *testing.T) {
	var b bytes.Buffer
	c := DefaultConfig()
	c.LogFormat, c.LogLevel = LogJSON, slog.LevelWarn
	l := c.NewLogger(&b)
	l.Info("hidden")
	l.Warn("shown", "k", 1)
	var m map[string]any
	if err := json.Unmarshal(b.Bytes(), &m); err != nil || m["msg"] != "shown" || m["level"] != "WARN" || m["k"] != 1.0 || m["time"] == nil {
		t.Errorf("JSON logger wrote %q (%v)", b.String(), err)
	}
	b.Reset()
	c.LogFormat, c.LogLevel = LogText, slog.LevelInfo
	c.NewLogger(&b).Info("fenced serving", "listen", "127.0.0.1:1")
	if !strings.Contains(b.String(), `level=INFO msg="fenced serving" listen=127.0.0.1:1`) {
		t.Errorf("text logger wrote %q", b.String())
	}
}

// TestUsage: --help and -h write the grouped, double-dash help and return
// flag.ErrHelp (exit 0); test-only flags are not in it; every other flag
// is, once.
func TestUsage(t *testing.T) {
	for _, arg := range []string{"--help", "-h", "-help"} {
		var out strings.Builder
		_, err := parseFlags([]string{arg}, noEnv, &out)
		if !errors.Is(err, flag.ErrHelp) {
			t.Errorf("%s: %v, want flag.ErrHelp", arg, err)
		}
		help := out.String()
		for _, want := range []string{"Usage: fenced", "\nNode:\n", "\nCluster:\n", "\nClients & limits:\n", "\nSecurity:\n", "\nOperations:\n",
			"  --listen ADDR ", "--log-level LEVEL", "--log-format FORMAT", "--version", "e.g. --listen 0.0.0.0:6379", "(default 127.0.0.1:6379)"} {
			if !strings.Contains(help, want) {
				t.Errorf("%s: help lacks %q:\n%s", arg, want, help)
			}
		}
		for _, bad := range []string{"clock-offset", "\n  -l", "(default true)", "(default false)", "134217728"} {
			if strings.Contains(help, bad) {
				t.Errorf("%s: help contains %q:\n%s", arg, bad, help)
			}
		}
	}
	// Every flag is shown exactly once or is hidden.
	var help strings.Builder
	parseFlags([]string{"--help"}, noEnv, &help)
	shown := map[string]int{}
	for _, line := range strings.Split(help.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "  --"); ok {
			name, _, _ := strings.Cut(rest, " ")
			shown[name]++
		}
	}
	for _, name := range allFlags(t) {
		switch {
		case hiddenFlags()[name] && shown[name] != 0:
			t.Errorf("hidden --%s is shown", name)
		case !hiddenFlags()[name] && shown[name] != 1:
			t.Errorf("--%s is shown %d times, want once (add it to flagGroups or hiddenFlags)", name, shown[name])
		}
	}
	// A hidden flag is still accepted.
	if c, err := parseFlags([]string{"--clock-offset", "2s"}, noEnv, io.Discard); err != nil || c.ClockOffset.String() != "2s" {
		t.Errorf("--clock-offset 2s: %v %v", c.ClockOffset, err)
	}
}

// allFlags lists the flags parseFlags defines.
func allFlags(t *testing.T) []string {
	t.Helper()
	c := DefaultConfig()
	fs, _, _ := c.flagSet()
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if len(names) < 30 {
		t.Fatalf("only %d flags: %q", len(names), names)
	}
	return names
}

// TestVersionFlag: --version writes the version and the git revision and
// returns flag.ErrHelp (exit 0), whatever else is on the line.
func TestVersionFlag(t *testing.T) {
	var out strings.Builder
	_, err := parseFlags([]string{"--listen", "nonsense", "--version"}, noEnv, &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--version: %v, want flag.ErrHelp", err)
	}
	rev, _ := gitRevision()
	if !strings.HasPrefix(out.String(), "fenced version "+Version+"\ngit revision "+rev) {
		t.Errorf("--version wrote %q", out.String())
	}
	if _, err := parseFlags([]string{"--config", writeFile(t, "version\n")}, noEnv, io.Discard); !errors.Is(err, ErrConfig) {
		t.Errorf("version in a --config file: %v, want refused", err)
	}
}
