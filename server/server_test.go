package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/raftstore"
	"github.com/fenced/fenced/session"
)

func TestHandlersMatchTable(t *testing.T) {
	s := Server{table: commands.New()}
	h := s.handlers()
	names := map[string]bool{}
	for _, spec := range commands.New().All() {
		names[spec.Name] = true
		if h[spec.Name] == nil {
			t.Errorf("command %s has no handler", spec.Name)
		}
	}
	for name := range h {
		if !names[name] {
			t.Errorf("handler %s has no command in the table", name)
		}
	}
}

func TestErrorReply(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{lockstate.ErrNoSession, "NOSESSION session expired; its locks were released"},
		{lockstate.ErrNotOwner, "NOTOWNER not the owner of the lock"},
		{lockstate.ErrLimit, "LIMIT reentrancy limit reached"},
		{lockstate.ErrStaleFence, "STALEFENCE fencing token is not the current one"},
		{lockstate.ErrCancelled, "CANCELLED wait cancelled by a newer request of the same owner"},
		{raftstore.ErrNotReady, "TRYAGAIN leader not ready"},
		{raftstore.ErrNotLeader, "TRYAGAIN not the leader"},
		{raftstore.ErrNoLeader, "CLUSTERDOWN no leader"},
		{raftstore.ErrUncertain, "UNCERTAIN outcome unknown"},
		{ErrNoProto, "NOPROTO unsupported protocol version"},
		// Wrapped errors keep their code, which moves to the front.
		{fmt.Errorf("%w: raft: leadership lost", raftstore.ErrUncertain), "UNCERTAIN outcome unknown: raft: leadership lost"},
		{fmt.Errorf("%w: context deadline exceeded", raftstore.ErrNotReady), "TRYAGAIN leader not ready: context deadline exceeded"},
		{fmt.Errorf("server: forward: %w", raftstore.ErrNoLeader), "CLUSTERDOWN server: forward: no leader"},
		{fmt.Errorf("x: %w", fmt.Errorf("y: %w", lockstate.ErrStaleFence)), "STALEFENCE x: y: fencing token is not the current one"},
		// An error wrapping two sentinels takes the first one's code.
		{fmt.Errorf("%w: %w", raftstore.ErrNotReady, raftstore.ErrUncertain), "TRYAGAIN leader not ready: UNCERTAIN outcome unknown"},
		{ErrForwardLost, "UNCERTAIN outcome unknown: the link to the leader broke after sending"},
		{ErrLeaderUnreachable, "TRYAGAIN cannot reach the leader"},
		{lockstate.ErrWrongType, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		// Anything else is ERR.
		{lockstate.ErrTooManySessions, "ERR too many sessions"},
		{lockstate.ErrSessionExists, "ERR session id already exists"},
		{commands.ErrNotInteger, "ERR value is not an integer or out of range"},
		{fmt.Errorf("%w: unknown option FOO", commands.ErrSyntax), "ERR syntax error: unknown option FOO"},
		{wrapArity("flock"), "ERR wrong number of arguments for 'flock' command"},
		{ErrDBIndex, "ERR DB index is out of range"},
		{fmt.Errorf("%w: TTL must be between 500 and 1000 ms", session.ErrTTLRange), "ERR TTL out of range: TTL must be between 500 and 1000 ms"},
		{raftstore.ErrBadSnapshot, "ERR raftstore: bad snapshot"}, // internal: its package stays
		{raftstore.ErrMembership, "ERR membership"},
		{errors.New("plain"), "ERR plain"},
	} {
		v := errorReply(tc.err)
		if !v.IsError() || v.Text() != tc.want {
			t.Errorf("errorReply(%v) = %v, want -%s", tc.err, v, tc.want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig: %v", err)
	}
	for name, mod := range map[string]func(*Config){
		"empty id":               func(c *Config) { c.ID = "" },
		"id with space":          func(c *Config) { c.ID = "node 1" },
		"id with newline":        func(c *Config) { c.ID = "node\n1" },
		"empty data":             func(c *Config) { c.Data = "" },
		"zero min TTL":           func(c *Config) { c.MinTTL = 0 },
		"negative min TTL":       func(c *Config) { c.MinTTL = -time.Second },
		"max TTL below min":      func(c *Config) { c.MaxTTL = c.MinTTL - 1 },
		"default below min":      func(c *Config) { c.DefaultTTL = c.MinTTL - time.Millisecond },
		"default above max":      func(c *Config) { c.DefaultTTL = c.MaxTTL + time.Millisecond },
		"zero max conns":         func(c *Config) { c.MaxConns = 0 },
		"negative max conns":     func(c *Config) { c.MaxConns = -1 },
		"join without port":      func(c *Config) { c.Join = "127.0.0.1" },
		"listen without port":    func(c *Config) { c.Listen = "127.0.0.1" },
		"listen all":             func(c *Config) { c.Listen = ":6379" },
		"listen 0.0.0.0":         func(c *Config) { c.Listen = "0.0.0.0:6379" },
		"listen non-loopback":    func(c *Config) { c.Listen = "10.1.2.3:6379" },
		"listen ipv6 any":        func(c *Config) { c.Listen = "[::]:6379" },
		"listen hostname":        func(c *Config) { c.Listen = "example.com:6379" },
		"raft non-loopback":      func(c *Config) { c.RaftAddr = "192.168.1.1:7379" },
		"raft without port":      func(c *Config) { c.RaftAddr = "localhost" },
		"metrics without port":   func(c *Config) { c.Metrics = "localhost" },
		"advertise non-loopback": func(c *Config) { c.Advertise = "10.1.2.3:6379" },
		"metrics non-loopback":   func(c *Config) { c.Metrics = "0.0.0.0:9100" },
		"raft non-loopback with a password": func(c *Config) {
			h := HashPassword("pw")
			c.RequirePass, c.RaftAddr = &h, "10.1.2.3:7379"
		},
		"raft-advertise non-loopback with a password": func(c *Config) {
			h := HashPassword("pw")
			c.RequirePass, c.RaftAdvertise = &h, "10.1.2.3:7379"
		},
	} {
		c := DefaultConfig()
		mod(&c)
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: Validate = %v, want ErrConfig", name, err)
		}
	}
	for name, mod := range map[string]func(*Config){
		"localhost":         func(c *Config) { c.Listen = "localhost:6379" },
		"join":              func(c *Config) { c.Join = "127.0.0.1:6380" },
		"ipv6 loopback":     func(c *Config) { c.RaftAddr = "[::1]:7379" },
		"127.0.0.2":         func(c *Config) { c.Listen = "127.0.0.2:0" },
		"ttl bounds equal":  func(c *Config) { c.MinTTL, c.MaxTTL, c.DefaultTTL = time.Second, time.Second, time.Second },
		"default at min":    func(c *Config) { c.DefaultTTL = c.MinTTL },
		"default at max":    func(c *Config) { c.DefaultTTL = c.MaxTTL },
		"metrics":           func(c *Config) { c.Metrics = "127.0.0.1:9100" },
		"one connection":    func(c *Config) { c.MaxConns = 1 },
		"no bootstrap":      func(c *Config) { c.Bootstrap = false },
		"clock offset":      func(c *Config) { c.ClockOffset = -time.Hour },
		"id with dots/dash": func(c *Config) { c.ID = "node-1.a" },
	} {
		c := DefaultConfig()
		mod(&c)
		if err := c.Validate(); err != nil {
			t.Errorf("%s: Validate = %v", name, err)
		}
	}
}

// TestProtectedMode: what clients reach is served beyond loopback only with
// a password, and the refusal names the flag to set.
func TestProtectedMode(t *testing.T) {
	for _, tc := range []struct{ flag, addr string }{
		{"--listen", "0.0.0.0:6379"},
		{"--listen", ":6379"},
		{"--listen", "[::]:6379"},
		{"--listen", "10.1.2.3:6379"},
		{"--listen", "example.com:6379"},
		{"--advertise", "10.1.2.3:6379"},
		{"--metrics", "0.0.0.0:9100"},
		{"--metrics", "192.168.1.5:9100"},
	} {
		set := func(c *Config) {
			switch tc.flag {
			case "--listen":
				c.Listen = tc.addr
			case "--advertise":
				c.Advertise = tc.addr
			case "--metrics":
				c.Metrics = tc.addr
			}
		}
		c := DefaultConfig()
		set(&c)
		err := c.Validate()
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "--requirepass") || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("%s %s without a password: %v, want an ErrConfig naming %s and --requirepass", tc.flag, tc.addr, err, tc.flag)
		}
		h := HashPassword("pw")
		c.RequirePass = &h
		if err := c.Validate(); err != nil {
			t.Errorf("%s %s with a password: %v", tc.flag, tc.addr, err)
		}
	}
	// Raft stays loopback-only with or without a password (peer TLS is
	// another flag's business).
	c := DefaultConfig()
	h := HashPassword("pw")
	c.RequirePass, c.RaftAddr = &h, "0.0.0.0:7379"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--raft-addr") {
		t.Errorf("--raft-addr 0.0.0.0 with a password: %v, want refused", err)
	}
}

func TestParseRequirePass(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "FENCED_REQUIREPASS" {
				return v
			}
			return ""
		}
	}
	hashOf := func(c Config) string {
		if c.RequirePass == nil {
			return "none"
		}
		for _, p := range []string{"flag", "file", "env"} {
			if *c.RequirePass == HashPassword(p) {
				return p
			}
		}
		return "other"
	}
	file := writeFile(t, "requirepass file\n")
	emptyFile := writeFile(t, "requirepass\n")
	for _, tc := range []struct {
		name string
		args []string
		env  string
		want string
	}{
		{"none", nil, "", "none"},
		{"flag", []string{"--requirepass", "flag"}, "", "flag"},
		{"file", []string{"--config", file}, "", "file"},
		{"env", nil, "env", "env"},
		{"flag wins over env", []string{"--requirepass", "flag"}, "env", "flag"},
		{"file wins over env", []string{"--config", file}, "env", "file"},
		{"flag wins over file", []string{"--config", file, "--requirepass", "flag"}, "env", "flag"},
		{"empty flag: no password", []string{"--requirepass", ""}, "env", "none"},
		{"empty in the file: no password", []string{"--config", emptyFile}, "env", "none"},
	} {
		c, err := parseFlags(tc.args, env(tc.env), io.Discard)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := hashOf(c); got != tc.want {
			t.Errorf("%s: the password is %s's, want %s", tc.name, got, tc.want)
		}
	}
	// With one, a non-loopback --listen is served; the help names the
	// variable and the precedence.
	c, err := parseFlags([]string{"--listen", "0.0.0.0:6379"}, env("env"), io.Discard)
	if err != nil || hashOf(c) != "env" {
		t.Errorf("--listen 0.0.0.0 with FENCED_REQUIREPASS: %v", err)
	}
	if _, err := parseFlags([]string{"--listen", "0.0.0.0:6379"}, env(""), io.Discard); err == nil || !strings.Contains(err.Error(), "--requirepass") {
		t.Errorf("--listen 0.0.0.0 without a password: %v, want an error naming --requirepass", err)
	}
	var help strings.Builder
	parseFlags([]string{"--help"}, env(""), &help)
	for _, want := range []string{"--requirepass PASSWORD", "FENCED_REQUIREPASS", "win over the variable"} {
		if !strings.Contains(help.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, help.String())
		}
	}
	// The password itself is nowhere in the Config.
	c, _ = parseFlags([]string{"--requirepass", "hunter2-plain"}, env(""), io.Discard)
	if s := fmt.Sprintf("%+v %#v %v", c, c, *c.RequirePass); strings.Contains(s, "hunter2-plain") {
		t.Errorf("the Config shows the password: %s", s)
	}
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fenced.conf")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseFlags(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		c, err := ParseFlags(nil, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(c, DefaultConfig()) {
			t.Fatalf("no flags: %+v, want DefaultConfig", c)
		}
	})
	t.Run("flags", func(t *testing.T) {
		c, err := ParseFlags([]string{"--id", "n2", "--listen", "127.0.0.1:6380", "--raft-addr=127.0.0.1:7380",
			"-data", "/tmp/d", "--bootstrap=false", "--metrics", "127.0.0.1:9100", "--clock-offset", "-1m30s"}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		want := DefaultConfig()
		want.ID, want.Listen, want.RaftAddr, want.Data = "n2", "127.0.0.1:6380", "127.0.0.1:7380", "/tmp/d"
		want.Bootstrap, want.Metrics, want.ClockOffset = false, "127.0.0.1:9100", -90*time.Second
		if !reflect.DeepEqual(c, want) {
			t.Fatalf("got %+v\nwant %+v", c, want)
		}
	})
	t.Run("config file", func(t *testing.T) {
		p := writeFile(t, `# a comment
id n3

   listen 127.0.0.1:6381
raft-addr = 127.0.0.1:7381
--data	/var/lib/fenced
metrics=127.0.0.1:9101
clock-offset 2s
bootstrap false
`)
		c, err := ParseFlags([]string{"--config", p}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		want := DefaultConfig()
		want.ID, want.Listen, want.RaftAddr, want.Data = "n3", "127.0.0.1:6381", "127.0.0.1:7381", "/var/lib/fenced"
		want.Metrics, want.ClockOffset, want.Bootstrap = "127.0.0.1:9101", 2*time.Second, false
		if !reflect.DeepEqual(c, want) {
			t.Fatalf("got %+v\nwant %+v", c, want)
		}
	})
	t.Run("bare bootstrap key", func(t *testing.T) {
		p := writeFile(t, "bootstrap\n")
		c, err := ParseFlags([]string{"--bootstrap=false", "--config", p}, io.Discard)
		if err != nil || c.Bootstrap {
			t.Fatalf("flag false, file bootstrap: %v %v, want the flag's false", c.Bootstrap, err)
		}
		c, err = ParseFlags([]string{"--config", p}, io.Discard)
		if err != nil || !c.Bootstrap {
			t.Fatalf("file bootstrap: %v %v", c.Bootstrap, err)
		}
	})
	t.Run("flags win over the file", func(t *testing.T) {
		p := writeFile(t, "id file\nlisten 127.0.0.1:1111\ndata /file\n")
		for _, args := range [][]string{
			{"--id", "flag", "--config", p, "--data", "/flag"},
			{"--config", p, "--data", "/flag", "--id", "flag"},
		} {
			c, err := ParseFlags(args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if c.ID != "flag" || c.Data != "/flag" || c.Listen != "127.0.0.1:1111" {
				t.Fatalf("%q: id %q data %q listen %q", args, c.ID, c.Data, c.Listen)
			}
		}
	})
	for name, tc := range map[string]struct {
		file string
		args []string
		msg  string
	}{
		"unknown key":         {file: "id n\nnope 1\n", msg: `:2: unknown key "nope"`},
		"config in config":    {file: "config other.conf\n", msg: `unknown key "config"`},
		"bad value":           {file: "clock-offset soon\n", msg: "clock-offset"},
		"bad bool":            {file: "bootstrap maybe\n", msg: "bootstrap"},
		"invalid result":      {file: "listen 0.0.0.0:6379\n", msg: "protected mode"},
		"missing file":        {args: []string{"--config", "/nonexistent/fenced.conf"}, msg: "no such file"},
		"positional":          {args: []string{"extra"}, msg: `unexpected argument "extra"`},
		"bad flag value":      {args: []string{"--clock-offset", "x"}},
		"unknown flag":        {args: []string{"--nope"}},
		"join bad address":    {args: []string{"--join", "nowhere"}, msg: "--join"},
		"non-loopback flag":   {args: []string{"--raft-addr", "10.0.0.1:7379"}, msg: "--raft-addr"},
		"raft needs peer TLS": {args: []string{"--raft-addr", "10.0.0.1:7379"}, msg: "needs peer TLS"},
		"raft advertise too":  {args: []string{"--raft-advertise", "10.0.0.1:7379"}, msg: "--raft-advertise"},
		"cert without key":    {args: []string{"--peer-cert-file", "a.crt", "--peer-trusted-ca-file", "ca.crt"}, msg: "--peer-key-file"},
		"key without CA":      {args: []string{"--peer-cert-file", "a.crt", "--peer-key-file", "a.key"}, msg: "--peer-trusted-ca-file"},
		"CA alone":            {args: []string{"--peer-trusted-ca-file", "ca.crt"}, msg: "--peer-cert-file"},
	} {
		args := tc.args
		if tc.file != "" {
			args = []string{"--config", writeFile(t, tc.file)}
		}
		_, err := ParseFlags(args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: error %v, want one containing %q", name, err, tc.msg)
		}
		if tc.msg != "" && !errors.Is(err, ErrConfig) {
			t.Errorf("%s: error %v does not wrap ErrConfig", name, err)
		}
	}
}

// startServer runs a single-node server on loopback ports chosen by the
// kernel, with its data in a temporary directory, until the test ends.
func startServer(t *testing.T) *Server { return startServerWith(t, nil) }

// startServerWith is startServer with mod applied to the configuration.
func startServerWith(t *testing.T, mod func(*Config)) *Server {
	t.Helper()
	cfg := DefaultConfig()
	cfg.ID = "test1"
	cfg.Listen = "127.0.0.1:0"
	cfg.RaftAddr = "127.0.0.1:0"
	cfg.Data = t.TempDir()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if mod != nil {
		mod(&cfg)
	}
	s, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("Serve did not return after cancel")
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for !s.node.CanPropose() || !s.start.settled.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the node did not become a settled leader")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return s
}

func newClient(t *testing.T, s *Server, proto int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr:                     s.Addr().String(),
		Protocol:                 proto,
		DisableIdentity:          true,
		MaxRetries:               -1,
		ReadTimeout:              5 * time.Second,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	t.Cleanup(func() { c.Close() })
	return c
}

func TestServerInProcess(t *testing.T) {
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := newClient(t, s, 3)
	conn := c.Conn()
	defer conn.Close()

	do := func(args ...any) any {
		t.Helper()
		v, err := conn.Do(ctx, args...).Result()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return v
	}
	doErr := func(want string, args ...any) {
		t.Helper()
		_, err := conn.Do(ctx, args...).Result()
		if err == nil || err.Error() != want {
			t.Fatalf("%v: error %v, want %q", args, err, want)
		}
	}

	// HELLO 3: the map clients check.
	hello, ok := do("HELLO", "3").(map[any]any)
	if !ok {
		t.Fatalf("HELLO 3 is not a map: %#v", do("HELLO", "3"))
	}
	for k, want := range map[string]any{"server": "redis", "version": redisVersion, "proto": int64(3), "mode": "standalone", "role": "master"} {
		if hello[k] != want {
			t.Errorf("HELLO %s = %#v, want %#v", k, hello[k], want)
		}
	}
	id, _ := hello["id"].(int64)
	if id <= 0 {
		t.Errorf("HELLO id = %#v", hello["id"])
	}
	if mods, ok := hello["modules"].([]any); !ok || len(mods) != 0 {
		t.Errorf("HELLO modules = %#v, want an empty array", hello["modules"])
	}
	if len(hello) != 7 {
		t.Errorf("HELLO has %d fields: %v", len(hello), hello)
	}
	doErr("NOPROTO unsupported protocol version", "HELLO", "4")
	doErr("ERR Protocol version is not an integer or out of range", "HELLO", "x")
	// AUTH as Redis answers it without a configured password.
	if _, ok := do("HELLO", "3", "AUTH", "default", "any", "SETNAME", "me").(map[any]any); !ok {
		t.Errorf("HELLO 3 AUTH default any SETNAME me failed")
	}
	if v := do("CLIENT", "GETNAME"); v != "me" {
		t.Errorf("CLIENT GETNAME after HELLO SETNAME = %#v", v)
	}
	doErr("WRONGPASS invalid username-password pair or user is disabled.", "HELLO", "3", "AUTH", "bob", "x")
	doErr("WRONGPASS invalid username-password pair or user is disabled.", "AUTH", "bob", "x")
	doErr("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?", "AUTH", "x")
	if v := do("AUTH", "default", "x"); v != "OK" {
		t.Errorf("AUTH default x = %#v", v)
	}
	do("RESET")
	do("HELLO", "3")

	if v := do("PING"); v != "PONG" {
		t.Errorf("PING = %#v", v)
	}
	if v := do("PING", "hi"); v != "hi" {
		t.Errorf("PING hi = %#v", v)
	}
	if v := do("ECHO", "a b\r\nc"); v != "a b\r\nc" {
		t.Errorf("ECHO = %#v", v)
	}
	if v := do("SELECT", "0"); v != "OK" {
		t.Errorf("SELECT 0 = %#v", v)
	}
	doErr("ERR DB index is out of range", "SELECT", "1")
	doErr("ERR value is not an integer or out of range", "SELECT", "x")

	// CLIENT on one connection.
	if v, err := conn.Do(ctx, "CLIENT", "GETNAME").Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("CLIENT GETNAME before SETNAME = %#v, %v; want null", v, err)
	}
	if v := do("CLIENT", "SETNAME", "worker-1"); v != "OK" {
		t.Errorf("CLIENT SETNAME = %#v", v)
	}
	if v := do("CLIENT", "GETNAME"); v != "worker-1" {
		t.Errorf("CLIENT GETNAME = %#v", v)
	}
	doErr("ERR Client names cannot contain spaces, newlines or special characters.", "CLIENT", "SETNAME", "a b")
	if v := do("CLIENT", "ID"); v != id {
		t.Errorf("CLIENT ID = %#v, HELLO said %d", v, id)
	}
	if v := do("CLIENT", "SETINFO", "LIB-NAME", "go-redis"); v != "OK" {
		t.Errorf("CLIENT SETINFO LIB-NAME = %#v", v)
	}
	if v := do("CLIENT", "SETINFO", "lib-ver", "9.23.0"); v != "OK" {
		t.Errorf("CLIENT SETINFO lib-ver = %#v", v)
	}
	doErr("ERR Unrecognized option 'nope'", "CLIENT", "SETINFO", "nope", "x")
	doErr("ERR wrong number of arguments for 'client|setname' command", "CLIENT", "SETNAME")
	if v, _ := do("CLIENT", "INFO").(string); !strings.Contains(v, "name=worker-1") || !strings.Contains(v, fmt.Sprintf("id=%d ", id)) {
		t.Errorf("CLIENT INFO = %q", v)
	}
	if v, _ := do("CLIENT", "LIST").(string); !strings.Contains(v, fmt.Sprintf("id=%d addr=", id)) || !strings.HasSuffix(v, "resp=3\n") {
		t.Errorf("CLIENT LIST = %q", v)
	}

	// COMMAND.
	// (the client port's commands: the peer-only ones are not listed)
	if v := do("COMMAND", "COUNT"); v != int64(len(clientCommands())) {
		t.Errorf("COMMAND COUNT = %#v, want %d", v, len(clientCommands()))
	}
	docs, ok := do("COMMAND", "DOCS").(map[any]any)
	if !ok {
		t.Fatalf("COMMAND DOCS = %#v", do("COMMAND", "DOCS"))
	}
	if len(docs) != len(clientCommands()) {
		t.Fatalf("COMMAND DOCS has %d commands, want %d", len(docs), len(clientCommands()))
	}
	if fl, ok := docs["flock"].(map[any]any); !ok || fl["group"] != "fenced" || !strings.HasPrefix(fmt.Sprint(fl["arguments"]), "[map[key_spec_index:0 name:lock type:key] map[name:session type:string]") {
		t.Errorf("COMMAND DOCS flock = %#v", docs["flock"])
	}
	if one, ok := do("COMMAND", "DOCS", "FENCE").(map[any]any); !ok || len(one) != 1 || one["fence"] == nil {
		t.Errorf("COMMAND DOCS FENCE = %#v", one)
	}

	// INFO, TIME, DBSIZE, ROLE.
	info, _ := do("INFO").(string)
	for _, want := range []string{"loading:0", "# Raft", "raft_role:leader", "# Server", "redis_version:"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO lacks %q:\n%s", want, info)
		}
	}
	if raftOnly, _ := do("INFO", "raft").(string); !strings.HasPrefix(raftOnly, "# Raft\r\n") || strings.Contains(raftOnly, "# Server") {
		t.Errorf("INFO raft = %q", raftOnly)
	}
	tm, ok := do("TIME").([]any)
	if !ok || len(tm) != 2 {
		t.Fatalf("TIME = %#v", tm)
	}
	if sec := fmt.Sprint(tm[0]); sec < fmt.Sprint(time.Now().Unix()-5) || len(sec) != len(fmt.Sprint(time.Now().Unix())) {
		t.Errorf("TIME seconds %v, now %d", tm[0], time.Now().Unix())
	}
	if v := do("DBSIZE"); v != int64(0) {
		t.Errorf("DBSIZE = %#v", v)
	}
	role, ok := do("ROLE").([]any)
	if !ok || len(role) != 3 || role[0] != "master" {
		t.Errorf("ROLE = %#v", role)
	}

	doErr("ERR unknown command 'NOPE', with args beginning with: 'a' 'b' ", "NOPE", "a", "b")
	doErr("ERR wrong number of arguments for 'echo' command", "ECHO")

	// SESSION.OPEN TTL bounds: at each limit and one past it.
	for _, ttl := range []string{"500", "86400000"} {
		sid, ok := do("SESSION.OPEN", "TTL", ttl).(string)
		if !ok || len(sid) != 32 || strings.Trim(sid, "0123456789abcdef") != "" {
			t.Errorf("SESSION.OPEN TTL %s = %#v, want 32 hex characters", ttl, sid)
		}
	}
	for _, ttl := range []string{"499", "86400001"} {
		doErr("ERR TTL out of range: TTL must be between 500 and 86400000 ms", "SESSION.OPEN", "TTL", ttl)
	}
	doErr("ERR syntax error: TTL must be positive", "SESSION.OPEN", "TTL", "0")

	// A lock through the wire: grant, FENCE, release, DBSIZE.
	sid := do("SESSION.OPEN", "NAME", "t").(string)
	tok, ok := do("FLOCK", "L", sid).(int64)
	if !ok || tok <= 0 {
		t.Fatalf("FLOCK = %#v", tok)
	}
	if v := do("FENCE", "L"); v != tok {
		t.Errorf("FENCE L = %#v, want %d", v, tok)
	}
	if v := do("DBSIZE"); v != int64(1) {
		t.Errorf("DBSIZE with one lock = %#v", v)
	}
	doErr("STALEFENCE fencing token is not the current one", "FUNLOCK", "L", sid, "FENCE", tok+1)
	if v := do("FUNLOCK", "L", sid, "FENCE", tok); v != int64(0) {
		t.Errorf("FUNLOCK = %#v", v)
	}
	doErr("NOTOWNER not the owner of the lock", "FUNLOCK", "L", sid)
	doErr("NOSESSION session expired; its locks were released", "FLOCK", "L", strings.Repeat("0", 32))
}

// TestServerFirstRead: a read is the first command a new node serves. Its
// log then ends in the leader's no-op and barrier, which the state machine
// never sees; the read must not wait for them.
func TestServerFirstRead(t *testing.T) {
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := newClient(t, s, 2)
	if n, err := c.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Fatalf("DBSIZE = %d, %v", n, err)
	}
	if v, err := c.Do(ctx, "FENCE", "nolock").Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("FENCE of a free lock = %#v, %v; want null", v, err)
	}
}
