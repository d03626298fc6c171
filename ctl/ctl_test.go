package ctl

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// run is Main with captured output.
func run(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Main(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// refused is an address where nothing listens: a connection to it fails
// at once, which shows that parsing let the command through.
const refused = "127.0.0.1:1"

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string // in stderr
	}{
		{[]string{}, 2, "no command"},
		{[]string{"member", "list", "extra"}, 2, "member list takes 0 argument(s), got 1"},
		{[]string{"endpoint", "status", "--ttl", "1s"}, 2, "-ttl"},
		{[]string{"lock", "--cluster", "x", "--", "true"}, 2, "-cluster"},
		{[]string{"lock", "a", "b", "--", "true"}, 2, `lock takes one NAME, got ["a" "b"]`},
		{[]string{"lock", "", "--", "true"}, 2, "lock needs a NAME"},
		{[]string{"lock", "info", "x", "--wait", "1s"}, 2, "no --ttl or --wait"},
		{[]string{"--endpoints", ":6379", "member", "list"}, 2, "HOST:PORT"},
		{[]string{"--tls", "--key", "k.pem", "member", "list"}, 2, "go together"},
		// Global flags after the command and its operands count.
		{[]string{"member", "list", "--endpoints", refused, "--timeout", "1s"}, 1, "no endpoint answered: " + refused},
		{[]string{"session", "kill", "id", "--endpoints=" + refused}, 1, refused},
		// What follows -- is an operand, also when it starts with -.
		{[]string{"--endpoints", refused, "session", "kill", "--", "-id"}, 1, refused},
		// With --, "lock info" is a lock called info.
		{[]string{"--endpoints", refused, "--timeout", "1s", "lock", "info", "--", "true"}, 1, "no endpoint answered"},
		{[]string{"--endpoints", refused, "lock", "info", "x"}, 1, "no endpoint answered"},
	} {
		code, _, stderr := run(tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
		if code == 2 && !strings.Contains(stderr, "fenced ctl --help") {
			t.Errorf("%q: a usage error without the hint: %q", tc.args, stderr)
		}
		if strings.Contains(stderr, "ctl: ctl:") || strings.Contains(stderr, "usage: usage:") {
			t.Errorf("%q: stuttering message %q", tc.args, stderr)
		}
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"lock", "-h"}, {"session", "kill", "--help"}} {
		code, stdout, stderr := run(args...)
		if code != 0 || !strings.HasPrefix(stdout, "usage: fenced ctl") || stderr != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
	// The password never appears in help, even when set.
	if _, stdout, _ := run("--pass", "s3cret", "--help"); strings.Contains(stdout, "s3cret") {
		t.Errorf("help shows the password")
	}
}

func TestValidate(t *testing.T) {
	g := defaultGlobals()
	g.endpoints = " 127.0.0.1:6379 ,, [::1]:6380,localhost:7000 "
	if err := g.Validate(); err != nil || strings.Join(g.addrs, " ") != "127.0.0.1:6379 [::1]:6380 localhost:7000" {
		t.Errorf("Validate: %v, addrs %q", err, g.addrs)
	}
	for _, bad := range []string{"", "host", "host:", "host:0", "host:x", ":1", "127.0.0.1:65536"} {
		g := defaultGlobals()
		g.endpoints = bad
		if err := g.Validate(); !errors.Is(err, ErrUsage) {
			t.Errorf("--endpoints %q: %v, want ErrUsage", bad, err)
		}
	}
}
