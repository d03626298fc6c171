package server

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The sample configuration in deploy/ is one fenced accepts, with the
// values its comments promise: a TLS-only node of three
// machines with bounded state and JSON logs.
func TestSampleConfig(t *testing.T) {
	env := func(k string) string {
		if k == envRequirePass {
			return "from-the-unit's-EnvironmentFile"
		}
		return ""
	}
	cfg, err := parseFlags([]string{"--config", "../deploy/fenced.conf"}, env, io.Discard)
	if err != nil {
		t.Fatalf("deploy/fenced.conf: %v", err)
	}
	switch {
	case cfg.ID != "n1" || cfg.Data != "/var/lib/fenced" || cfg.Listen != "" || cfg.TLS.Listen != "10.0.0.1:6380":
		t.Errorf("node: %+v", cfg)
	case cfg.RaftAddr != "10.0.0.1:7379" || cfg.PeerCAFile != "/etc/fenced/ca.crt":
		t.Errorf("peer channel: %q %q", cfg.RaftAddr, cfg.PeerCAFile)
	case cfg.MaxMemory != 1<<30 || cfg.DiskReserve != 128<<20 || cfg.OutputLimits != DefaultOutputLimits():
		t.Errorf("limits: %d %d %+v", cfg.MaxMemory, cfg.DiskReserve, cfg.OutputLimits)
	case cfg.Metrics != "10.0.0.1:9121" || cfg.RequirePass == nil:
		t.Errorf("operations: metrics %q, password %v", cfg.Metrics, cfg.RequirePass != nil)
	}
	if _, err := parseFlags([]string{"--config", "../deploy/fenced.conf"}, func(string) string { return "" }, io.Discard); err == nil {
		t.Error("the sample configuration starts without a password on a non-loopback address")
	}
}

// The sample unit passes systemd-analyze verify (where systemd is there),
// with ExecStart pointing at a binary that exists.
func TestSampleUnit(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	unit, err := os.ReadFile("../deploy/fenced.service")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(unit), "ExecStart=/usr/local/bin/fenced --config /etc/fenced/fenced.conf") ||
		!strings.Contains(string(unit), "EnvironmentFile=/etc/fenced/env") {
		t.Fatalf("the unit no longer starts fenced with the sample configuration and the password file:\n%s", unit)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "fenced.service")
	os.WriteFile(path, []byte(strings.ReplaceAll(string(unit), "/usr/local/bin/fenced", self)), 0o644)
	cmd := exec.Command("systemd-analyze", "verify", path)
	cmd.WaitDelay = 10 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
