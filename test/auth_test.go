package test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/internal/plant"
)

// Password authentication on the client port: a node
// started with --requirepass serves only AUTH, HELLO, QUIT and RESET until
// a connection authenticates, with Redis's texts and limits.

const (
	testPass  = "correct horse battery staple"
	noAuthMsg = "NOAUTH Authentication required."
	wrongPass = "WRONGPASS invalid username-password pair or user is disabled."
)

// startAuthNode starts a node with a password; its clients authenticate.
func startAuthNode(t *testing.T, opts nodeOpts) *node {
	t.Helper()
	opts.args = append(opts.args, "--requirepass", testPass)
	opts.password = testPass
	return startNode(t, opts)
}

// raftHash is the node's RAFT.HASH: its applied index and state digest.
func raftHash(t *testing.T, c *redis.Client) any {
	t.Helper()
	v, err := do(tctx(t), c, "RAFT.HASH")
	if err != nil {
		t.Fatalf("RAFT.HASH: %v", err)
	}
	return v
}

// gateArgs is a call of spec that fits its arity and would change the
// state if it ran: keys, locks and sessions named "pwned".
func gateArgs(spec *commands.Spec) []string {
	n := max(spec.Arity, -spec.Arity)
	args := []string{strings.ToUpper(spec.Name)}
	for i := 1; i < n; i++ {
		if i == 1 {
			args = append(args, "pwned")
		} else {
			args = append(args, "1")
		}
	}
	if spec.Name == "shutdown" {
		// Past a gate a planted bug left open, a bare SHUTDOWN would stop
		// the node under the test (seen in CI: TestACLPlantedCaught); ABORT
		// answers an error instead, after the same checks.
		args = append(args, "ABORT")
	}
	return args
}

// noAuthProblems sends, on connections that never authenticated, every
// command of the table that is not NoAuth, each on its own connection and
// then all pipelined on one, and reports every answer that is not -NOAUTH
// and any change of the state (RAFT.HASH, read through an authenticated
// connection). A command added to the table is covered without a word.
func noAuthProblems(t *testing.T, n *node) []string {
	t.Helper()
	authed := n.client(t)
	before := raftHash(t, authed)
	var problems []string
	var all strings.Builder
	var sent [][]string
	for _, spec := range commands.New().All() {
		if spec.Has(commands.NoAuth) {
			continue
		}
		args := gateArgs(spec)
		sent = append(sent, args)
		all.WriteString(encode(args...))
		c := dialRaw(t, n.addr)
		c.send(args...)
		if v, err := c.tryRead(10 * time.Second); err != nil || v.kind != '-' || v.str != noAuthMsg {
			problems = append(problems, fmt.Sprintf("%q before AUTH: %v %v", args, v, err))
		}
		c.nc.Close()
	}
	if len(sent) < 50 {
		t.Fatalf("only %d commands to try: is the table read?", len(sent))
	}
	c := dialRaw(t, n.addr)
	c.write(all.String())
	for _, args := range sent {
		if v, err := c.tryRead(10 * time.Second); err != nil || v.kind != '-' || v.str != noAuthMsg {
			problems = append(problems, fmt.Sprintf("%q pipelined before AUTH: %v %v", args, v, err))
		}
	}
	if after := raftHash(t, authed); !reflect.DeepEqual(before, after) {
		problems = append(problems, fmt.Sprintf("RAFT.HASH changed from %v to %v", before, after))
	}
	if v, err := do(tctx(t), authed, "GET", "pwned"); !errors.Is(err, redis.Nil) {
		problems = append(problems, fmt.Sprintf("the key pwned was set: %v %v", v, err))
	}
	return problems
}

// TestAuthNoAuthGate: before AUTH, every command but AUTH, HELLO, QUIT and
// RESET answers -NOAUTH and changes nothing.
func TestAuthNoAuthGate(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t, nodeOpts{})
	for _, p := range noAuthProblems(t, n) {
		t.Error(p)
	}
}

// TestAuthPlantedGateCaught: with the NOAUTH gate planted open, the same
// attack succeeds (a connection that never authenticated sets a key) and
// noAuthProblems reports it; so TestAuthNoAuthGate is evidence.
func TestAuthPlantedGateCaught(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t, nodeOpts{
		bin: chaosBinary(t, "plant", false), env: []string{"FENCED_PLANT=" + string(plant.AuthSkipped)}, allowCrash: true,
	})
	c := dialRaw(t, n.addr)
	c.send("SET", "pwned-unauthenticated", "1")
	if v := c.read(); v.kind != '+' || v.str != "OK" {
		t.Fatalf("planted: SET before AUTH answered %v; the bug is not planted", v)
	}
	problems := noAuthProblems(t, n)
	if len(problems) == 0 {
		t.Fatal("planted bug auth-skipped went undetected by noAuthProblems")
	}
	// Each of its checks bites: the answers, the state digest, the key.
	all := strings.Join(problems, "\n")
	for _, want := range []string{`["SET" "pwned" "1"] before AUTH`, "pipelined before AUTH", "RAFT.HASH changed", "the key pwned was set"} {
		if !strings.Contains(all, want) {
			t.Errorf("planted: no problem reported about %s:\n%s", want, all)
		}
	}
	t.Logf("planted bug auth-skipped detected: %d problems, e.g. %s; %s", len(problems), problems[0], problems[len(problems)-1])
}

// TestAuthCommands: AUTH and HELLO AUTH with Redis's texts; RESET and QUIT
// before AUTH.
func TestAuthCommands(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t, nodeOpts{})
	type step struct {
		args []string
		want string // kind and text: "+OK", "-ERR ...", "$hi", "null"; "" for HELLO's map
	}
	render := func(v rv) string {
		if v.null {
			return "null"
		}
		return string(v.kind) + v.str
	}
	helloNoAuth := "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"
	noAuth, wrong := "-"+noAuthMsg, "-"+wrongPass
	for name, steps := range map[string][]step{
		"AUTH pass": {
			{[]string{"PING"}, noAuth},
			{[]string{"AUTH", "wrong"}, wrong},
			{[]string{"PING"}, noAuth},
			{[]string{"AUTH", testPass}, "+OK"},
			{[]string{"PING"}, "+PONG"},
			{[]string{"AUTH", "wrong"}, wrong}, // a failure keeps the connection authenticated, as Redis
			{[]string{"PING"}, "+PONG"},
		},
		"AUTH user pass": {
			{[]string{"AUTH", "default", "wrong"}, wrong},
			{[]string{"AUTH", "alice", testPass}, wrong},
			{[]string{"AUTH", "default", testPass, "x"}, "-ERR syntax error"},
			{[]string{"AUTH", "default", testPass}, "+OK"},
			{[]string{"ECHO", "hi"}, "$hi"},
		},
		"HELLO AUTH": {
			{[]string{"HELLO", "3"}, helloNoAuth},
			{[]string{"HELLO"}, helloNoAuth},
			{[]string{"HELLO", "3", "AUTH", "default", "wrong"}, wrong},
			{[]string{"PING"}, noAuth},
			{[]string{"HELLO", "3", "AUTH", "default", testPass, "BOGUS"}, "-ERR Syntax error in HELLO option 'BOGUS'"},
			{[]string{"PING"}, noAuth},
			{[]string{"HELLO", "3", "AUTH", "default", testPass, "SETNAME", "me"}, ""},
			{[]string{"CLIENT", "GETNAME"}, "$me"},
			{[]string{"GET", "missing"}, "null"},
			{[]string{"PING"}, "+PONG"},
			{[]string{"HELLO", "2"}, ""}, // authenticated: HELLO alone is fine
		},
		"RESET": {
			{[]string{"RESET"}, "+RESET"},
			{[]string{"AUTH", testPass}, "+OK"},
			{[]string{"HELLO", "3"}, ""},
			{[]string{"RESET"}, "+RESET"},
			{[]string{"PING"}, noAuth}, // unauthenticated again, as Redis
			{[]string{"GET", "missing"}, noAuth},
		},
	} {
		t.Run(name, func(t *testing.T) {
			c := dialRaw(t, n.addr)
			for _, s := range steps {
				c.send(s.args...)
				v := c.read()
				if s.want == "" {
					if v.kind != '%' && v.kind != '*' {
						t.Fatalf("%q: %v, want the HELLO map", s.args, v)
					}
					continue
				}
				if got := render(v); got != s.want {
					t.Fatalf("%q: %q, want %q", s.args, got, s.want)
				}
			}
		})
	}

	t.Run("QUIT", func(t *testing.T) {
		c := dialRaw(t, n.addr)
		c.write(encode("QUIT") + encode("SET", "after-quit", "1"))
		if v := c.read(); v.kind != '+' || v.str != "OK" {
			t.Fatalf("QUIT before AUTH: %v", v)
		}
		if _, err := c.tryRead(5 * time.Second); !isClosed(err) {
			t.Fatalf("after QUIT: %v, want the connection closed", err)
		}
	})
}

// TestAuthPreAuthLimits: before AUTH a command may have at most 10
// arguments of 16 KiB; more closes the connection (CVE-2021-32675). After
// AUTH, also pipelined right behind it, the normal limits apply.
func TestAuthPreAuthLimits(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t, nodeOpts{})
	keys := func(k int) []string {
		args := []string{"MGET"}
		for i := range k {
			args = append(args, fmt.Sprintf("k%d", i))
		}
		return args
	}
	big := strings.Repeat("x", 17<<10)

	// At the limits: refused with -NOAUTH, the connection stays.
	c := dialRaw(t, n.addr)
	for _, args := range [][]string{keys(9), {"ECHO", strings.Repeat("x", 16<<10)}} {
		c.send(args...)
		if v := c.read(); v.kind != '-' || v.str != noAuthMsg {
			t.Fatalf("%.40q before AUTH: %v", args, v)
		}
	}
	// Past them: closed, and nothing after runs.
	for name, cmd := range map[string]string{
		"11 arguments":    encode(keys(10)...),
		"a 17 KiB bulk":   encode("ECHO", big),
		"a 17 KiB inline": "ECHO " + big + "\r\n",
		"a 17 KiB AUTH":   encode("AUTH", big),
	} {
		c := dialRaw(t, n.addr)
		c.write(cmd + encode("AUTH", testPass) + encode("SET", "after-limit", "1"))
		for {
			v, err := c.tryRead(10 * time.Second)
			if err != nil {
				if !isClosed(err) {
					t.Fatalf("%s before AUTH: %v, want the connection closed", name, err)
				}
				break
			}
			if v.kind != '-' || !strings.HasPrefix(v.str, "ERR Protocol error") {
				t.Fatalf("%s before AUTH: %v, want at most a protocol error, then the close", name, v)
			}
		}
	}
	// After AUTH, pipelined in the same write.
	c = dialRaw(t, n.addr)
	c.write(encode("AUTH", testPass) + encode(keys(10)...) + encode("ECHO", big))
	if v := c.read(); v.kind != '+' || v.str != "OK" {
		t.Fatalf("AUTH: %v", v)
	}
	if v := c.read(); v.kind != '*' || len(v.elems) != 10 {
		t.Fatalf("11 arguments after AUTH: %v", v)
	}
	if v := c.read(); v.str != big {
		t.Fatalf("17 KiB after AUTH: %v", v)
	}
	if v, err := do(tctx(t), n.client(t), "EXISTS", "after-limit"); v != int64(0) || err != nil {
		t.Fatalf("a command sent after the limit ran: EXISTS = %v %v", v, err)
	}
}

// TestAuthGoRedis: go-redis with Password (AUTH in RESP2, HELLO 3 AUTH in
// RESP3) runs a lock cycle; a wrong password gets WRONGPASS.
func TestAuthGoRedis(t *testing.T) {
	t.Parallel()
	n := startAuthNode(t, nodeOpts{})
	for _, proto := range []int{2, 3} {
		for _, user := range []string{"", "default"} {
			o := n.options(proto)
			o.Username = user
			c := redis.NewClient(o)
			defer c.Close()
			ctx := tctx(t)
			sid := mustStr(t, c, "SESSION.OPEN")
			tok := mustInt(t, c, "FLOCK", "orders", sid)
			if got := mustInt(t, c, "FENCE", "orders"); got != tok {
				t.Fatalf("RESP%d user %q: FENCE = %d, want %d", proto, user, got, tok)
			}
			if left := mustInt(t, c, "FUNLOCK", "orders", sid); left != 0 {
				t.Fatalf("RESP%d user %q: FUNLOCK = %d", proto, user, left)
			}
			if err := c.Do(ctx, "SESSION.KILL", sid).Err(); err != nil {
				t.Fatal(err)
			}

			o = n.options(proto)
			o.Username, o.Password = user, "wrong"
			bad := redis.NewClient(o)
			defer bad.Close()
			if err := bad.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
				t.Fatalf("RESP%d user %q, wrong password: %v, want WRONGPASS", proto, user, err)
			}
		}
	}
	o := n.options(3)
	o.Password = ""
	none := redis.NewClient(o)
	defer none.Close()
	if err := none.Set(tctx(t), "k", "v", 0).Err(); !isCode(err, "NOAUTH") {
		t.Fatalf("no password: %v, want NOAUTH", err)
	}
}

// TestAuthEnv: FENCED_REQUIREPASS sets the password out of ps; the flag
// wins over it.
func TestAuthEnv(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{env: []string{"FENCED_REQUIREPASS=" + testPass}, password: testPass})
	if strings.Contains(n.stderr(), "--requirepass") {
		t.Fatal("the test passed the password as a flag")
	}
	if v := mustStr(t, n.client(t), "PING"); v != "PONG" {
		t.Fatalf("with the variable's password: %q", v)
	}
	c := dialRaw(t, n.addr)
	c.send("GET", "k")
	if v := c.read(); v.str != noAuthMsg {
		t.Fatalf("without a password: %v", v)
	}

	flag := startNode(t, nodeOpts{env: []string{"FENCED_REQUIREPASS=from-env"}, args: []string{"--requirepass", testPass}, password: testPass})
	c = dialRaw(t, flag.addr)
	c.send("AUTH", "from-env")
	if v := c.read(); v.str != wrongPass {
		t.Fatalf("the variable's password with the flag set: %v, want refused", v)
	}
	c.send("AUTH", testPass)
	if v := c.read(); v.kind != '+' || v.str != "OK" {
		t.Fatalf("the flag's password: %v", v)
	}
}

// runFenced runs the binary to its exit, without FENCED_REQUIREPASS.
func runFenced(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin := binPath(t) // before the clock starts: the first call builds it
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--data", t.TempDir()}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FENCED_REQUIREPASS=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("fenced %q did not exit: %s", args, out)
	}
	return string(out), err
}

// TestProtectedMode: beyond loopback, the client port and the metrics
// endpoint need a password, and the Raft port peer TLS; with a password,
// fenced serves on every interface (reached here through 127.0.0.1 only).
func TestProtectedMode(t *testing.T) {
	t.Parallel()
	raft := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	for _, args := range [][]string{
		{"--listen", fmt.Sprintf("0.0.0.0:%d", freePort(t))},
		{"--listen", fmt.Sprintf("[::]:%d", freePort(t))},
		{"--listen", fmt.Sprintf(":%d", freePort(t))},
		{"--listen", "127.0.0.1:0", "--metrics", fmt.Sprintf("0.0.0.0:%d", freePort(t))},
	} {
		out, err := runFenced(t, append(args, "--raft-addr", raft)...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			t.Errorf("%q without a password: exit %v, want non-zero\n%s", args, err, out)
		}
		if !strings.Contains(out, "--requirepass") || !strings.Contains(out, args[len(args)-2]) {
			t.Errorf("%q without a password: the error does not name %s and --requirepass:\n%s", args, args[len(args)-2], out)
		}
		if strings.Contains(out, "fenced serving") {
			t.Errorf("%q without a password served", args)
		}
	}

	// The Raft port beyond loopback needs peer TLS, password or not; half
	// a peer TLS configuration refuses to start too.
	for _, args := range [][]string{
		{"--raft-addr", fmt.Sprintf("0.0.0.0:%d", freePort(t)), "--raft-advertise", "10.0.0.1:7379", "--requirepass", testPass},
		{"--raft-addr", raft, "--peer-cert-file", "n1.crt", "--peer-trusted-ca-file", "ca.crt"},
	} {
		out, err := runFenced(t, append(args, "--listen", "127.0.0.1:0")...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 || !strings.Contains(out, "--peer-") || strings.Contains(out, "fenced serving") {
			t.Errorf("%q: exit %v, want non-zero naming the --peer-* flags\n%s", args, err, out)
		}
	}

	port := freePort(t)
	n := startAuthNode(t, nodeOpts{args: []string{"--listen", fmt.Sprintf("0.0.0.0:%d", port)}, noWait: true})
	if host, p, _ := net.SplitHostPort(n.addr); (host != "0.0.0.0" && host != "::") || p != fmt.Sprint(port) {
		t.Fatalf("serving on %s, want every interface, port %d", n.addr, port)
	}
	n.addr = fmt.Sprintf("127.0.0.1:%d", port)
	if err := n.waitReady(tctx(t)); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, n.addr)
	c.send("SET", "k", "v")
	if v := c.read(); v.str != noAuthMsg {
		t.Fatalf("on 0.0.0.0 before AUTH: %v", v)
	}
	if v := mustStr(t, n.client(t), "SET", "k", "v"); v != "OK" {
		t.Fatalf("on 0.0.0.0 with the password: %q", v)
	}
}

// TestCrossProtocol: what a web page can make a browser send to the client
// port (an HTTP POST whose body is a command) closes the connection, and
// nothing in it runs, with or without a password.
func TestCrossProtocol(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string]nodeOpts{"no password": {}, "password": {args: []string{"--requirepass", testPass}, password: testPass}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			n := startNode(t, opts)
			cl := n.client(t)
			before := raftHash(t, cl)
			body := "SET pwned-by-browser 1\r\n"
			post := "POST / HTTP/1.1\r\nHost: " + n.addr + "\r\nUser-Agent: Mozilla/5.0\r\nContent-Type: text/plain\r\n" +
				fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body)) + body
			for what, req := range map[string][]string{
				"POST, one write":        {post},
				"POST, body apart":       {strings.TrimSuffix(post, body), body},
				"GET":                    {"GET /?cmd=x HTTP/1.1\r\nHost: " + n.addr + "\r\n\r\n" + body},
				"POST without a newline": {strings.TrimSuffix(post, "\r\n")},
			} {
				c := dialRaw(t, n.addr)
				for i, part := range req {
					if i > 0 {
						time.Sleep(50 * time.Millisecond)
					}
					// The server may close before the second part.
					c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
					io.WriteString(c.nc, part)
				}
				c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
				out, err := io.ReadAll(c.r)
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Fatalf("%s: the connection is still open (read %q)", what, out)
				}
				if len(out) > 0 {
					t.Fatalf("%s: the server answered %q", what, out)
				}
			}
			if v, err := do(tctx(t), cl, "GET", "pwned-by-browser"); !errors.Is(err, redis.Nil) {
				t.Fatalf("the body ran: GET pwned-by-browser = %v %v", v, err)
			}
			if after := raftHash(t, cl); !reflect.DeepEqual(before, after) {
				t.Fatalf("RAFT.HASH changed from %v to %v", before, after)
			}
			if !strings.Contains(n.stderr(), "possible cross-protocol attack") || !strings.Contains(n.stderr(), "level=WARN") {
				t.Fatalf("no warning logged:\n%s", n.stderr())
			}
		})
	}
}

// TestAuthMetrics: metrics on loopback stay open when a password is set
// (the basic-auth rule beyond loopback is server.TestBasicAuth's).
func TestAuthMetrics(t *testing.T) {
	t.Parallel()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	startAuthNode(t, nodeOpts{args: []string{"--metrics", addr}})
	for _, path := range []string{"/metrics", "/healthz"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s on loopback: %d %s", path, resp.StatusCode, body)
		}
	}
}
