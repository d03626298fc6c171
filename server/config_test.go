package server

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced/resp"
)

// TestConnLimitFlags: Redis's defaults, Redis's syntax and units for
// --client-output-buffer-limit (one class or several, repeated, from the
// config file), --timeout in seconds, --write-timeout.
func TestConnLimitFlags(t *testing.T) {
	c, err := parseFlags(nil, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := OutputLimits{PubSub: resp.OutputLimit{Hard: 32 << 20, Soft: 8 << 20, SoftFor: time.Minute}}
	if c.OutputLimits != want || c.WriteTimeout != time.Minute || c.IdleTimeout != 0 {
		t.Errorf("defaults: %+v, write %v, idle %v", c.OutputLimits, c.WriteTimeout, c.IdleTimeout)
	}
	c, err = parseFlags([]string{"--client-output-buffer-limit", "normal 1kb 1k 0 pubsub 2MB 1m 5",
		"--client-output-buffer-limit", "replica 256mb 64mb 60", "--timeout", "7", "--write-timeout", "250ms"},
		func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want = OutputLimits{Normal: resp.OutputLimit{Hard: 1024, Soft: 1000}, PubSub: resp.OutputLimit{Hard: 2 << 20, Soft: 1000000, SoftFor: 5 * time.Second}}
	if c.OutputLimits != want || c.IdleTimeout != 7*time.Second || c.WriteTimeout != 250*time.Millisecond {
		t.Errorf("flags: %+v, idle %v, write %v", c.OutputLimits, c.IdleTimeout, c.WriteTimeout)
	}
	file := filepath.Join(t.TempDir(), "fenced.conf")
	os.WriteFile(file, []byte("client-output-buffer-limit pubsub 0 0 0\ntimeout 300\n"), 0o600)
	c, err = parseFlags([]string{"--config", file}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.OutputLimits.PubSub != (resp.OutputLimit{}) || c.IdleTimeout != 300*time.Second {
		t.Errorf("config file: %+v, idle %v", c.OutputLimits, c.IdleTimeout)
	}
}

// TestMaxMemoryFlag: the default bound, Redis's units, 0 for none, the
// config file.
func TestMaxMemoryFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int64
	}{
		{nil, 1 << 30},
		{[]string{"--maxmemory", "0"}, 0},
		{[]string{"--maxmemory", "100"}, 100},
		{[]string{"--maxmemory", "512mb"}, 512 << 20},
		{[]string{"--maxmemory", "2GB"}, 2 << 30},
		{[]string{"--maxmemory", "3g"}, 3_000_000_000},
	} {
		cfg, err := parseFlags(c.args, func(string) string { return "" }, io.Discard)
		if err != nil || cfg.MaxMemory != c.want {
			t.Errorf("%q: %d, %v; want %d", c.args, cfg.MaxMemory, err, c.want)
		}
	}
	file := filepath.Join(t.TempDir(), "fenced.conf")
	os.WriteFile(file, []byte("maxmemory 64mb\n"), 0o600)
	cfg, err := parseFlags([]string{"--config", file}, func(string) string { return "" }, io.Discard)
	if err != nil || cfg.MaxMemory != 64<<20 {
		t.Errorf("config file: %d, %v", cfg.MaxMemory, err)
	}
	for _, bad := range []string{"-1", "lots", "1.5gb", "99999999999gb", ""} {
		if _, err := parseFlags([]string{"--maxmemory", bad}, func(string) string { return "" }, io.Discard); err == nil {
			t.Errorf("--maxmemory %q accepted", bad)
		}
	}
}

// TestProtoMaxBulkLenFlag: fenced's default, Redis's units, fenced's range
// (512kb to 4mb), the config file; a value out of range is refused in
// Redis's words.
func TestProtoMaxBulkLenFlag(t *testing.T) {
	env := func(string) string { return "" }
	for _, c := range []struct {
		args []string
		want int
	}{
		{nil, 512 << 10},
		{[]string{"--proto-max-bulk-len", "524288"}, 512 << 10},
		{[]string{"--proto-max-bulk-len", "1mb"}, 1 << 20},
		{[]string{"--proto-max-bulk-len", "4MB"}, 4 << 20},
		{[]string{"--proto-max-bulk-len", "4000k"}, 4_000_000},
	} {
		cfg, err := parseFlags(c.args, env, io.Discard)
		if err != nil || cfg.Limits.MaxBulk != c.want {
			t.Errorf("%q: %d, %v; want %d", c.args, cfg.Limits.MaxBulk, err, c.want)
		}
	}
	file := filepath.Join(t.TempDir(), "fenced.conf")
	os.WriteFile(file, []byte("proto-max-bulk-len 2mb\n"), 0o600)
	if cfg, err := parseFlags([]string{"--config", file}, env, io.Discard); err != nil || cfg.Limits.MaxBulk != 2<<20 {
		t.Errorf("config file: %d, %v", cfg.Limits.MaxBulk, err)
	}
	for bad, want := range map[string]string{
		"524287": "argument must be between 524288 and 4194304 inclusive", "5mb": "argument must be between 524288 and 4194304 inclusive",
		"512mb": "argument must be between 524288 and 4194304 inclusive", "-1": "argument must be a memory value",
		"lots": "argument must be a memory value", "1.5mb": "argument must be a memory value", "": "argument must be a memory value",
	} {
		_, err := parseFlags([]string{"--proto-max-bulk-len", bad}, env, io.Discard)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "proto-max-bulk-len") {
			t.Errorf("--proto-max-bulk-len %q: %v, want %q", bad, err, want)
		}
	}
}
