package test

import (
	"bytes"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// redis-cli against fenced: interactively, on a terminal —
// where it fetches COMMAND DOCS at start for its hints and redraws the
// line as one types — in RESP2 and with -3, and with a command on its
// command line. `script` gives it the terminal.

// ptyCLI is redis-cli running on a pseudo-terminal.
type ptyCLI struct {
	t    *testing.T
	in   io.WriteCloser
	mu   sync.Mutex
	out  bytes.Buffer
	seen int // output already matched
}

func (p *ptyCLI) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func startPtyCLI(t *testing.T, args ...string) *ptyCLI {
	t.Helper()
	for _, bin := range []string{"script", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			compatSkip(t, "%s is not installed (apt-get install redis-tools bsdutils)", bin)
		}
	}
	// A window size spares linenoise its cursor-position query, which
	// nobody would answer.
	cmd := exec.Command("script", "-qfc", "stty cols 200 rows 50; exec redis-cli "+strings.Join(args, " "), "/dev/null")
	p := &ptyCLI{t: t}
	cmd.Stdout, cmd.Stderr = p, p
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.in = in
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return p
}

// expect waits until the output after what was already matched contains
// want.
func (p *ptyCLI) expect(want string) {
	p.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.mu.Lock()
		s := p.out.String()
		i := strings.Index(s[p.seen:], want)
		if i >= 0 {
			p.seen += i + len(want)
		}
		p.mu.Unlock()
		if i >= 0 {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("redis-cli never printed %q; output:\n%s", want, strings.ReplaceAll(s, "\r", ""))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// send types line and Enter.
func (p *ptyCLI) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\r"); err != nil {
		p.t.Fatal(err)
	}
}

func TestRedisCliInteractive(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	host, port, _ := strings.Cut(n.addr, ":")
	for _, proto := range []string{"-2", "-3"} {
		t.Run(proto, func(t *testing.T) {
			p := startPtyCLI(t, "-h", host, "-p", port, proto)
			prompt := n.addr + "> "
			p.expect(prompt)
			key := "cli" + proto
			for _, step := range []struct{ send, want string }{
				{"PING", "PONG"},
				{"SET " + key + " v NX PX 60000", "OK"},
				{"SET " + key + " w NX PX 60000", "(nil)"},
				{"GET " + key, `"v"`},
				{"FENCE " + key, "(integer) "},
				{"EVAL \"return redis.call('get', KEYS[1])\" 1 " + key, `"v"`},
				{"COMMAND DOCS fence", "Reply the fencing token"},
				{"GET nothing", "(nil)"},
				{"BOGUS", "(error) ERR unknown command 'BOGUS'"},
			} {
				p.send(step.send)
				p.expect(step.want)
				p.expect(prompt)
			}
			if proto == "-3" {
				p.send("HELLO 3")
				p.expect(`"proto" => (integer) 3`)
				p.send("SESSION.INFO nope")
				p.expect("(error) NOSESSION")
			}
			p.send("QUIT")
		})
	}
}

func TestRedisCliCommandLine(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		compatSkip(t, "redis-cli is not installed (apt-get install redis-tools)")
	}
	n := startNode(t, nodeOpts{})
	host, port, _ := strings.Cut(n.addr, ":")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"COMMAND", "DOCS", "set"}, "summary"},
		{[]string{"-3", "HELLO", "3"}, "proto"},
		{[]string{"SET", "k", "v"}, "OK"},
		{[]string{"--no-raw", "FENCE", "k"}, "(integer) "},
		{[]string{"-3", "--no-raw", "GET", "none"}, "(nil)"},
	} {
		out, err := exec.Command("redis-cli", append([]string{"-h", host, "-p", port}, tc.args...)...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("redis-cli %s: %v\n%s", strings.Join(tc.args, " "), err, out)
		}
	}
}
