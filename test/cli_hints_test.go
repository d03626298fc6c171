package test

import (
	"io"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// redis-cli's HELP and hints against fenced. Once a server answers COMMAND
// DOCS, redis-cli 7 takes every command's help from it alone (redis-cli.c,
// cliInitHelp: its own help.h only serves servers without COMMAND DOCS),
// and draws the hint from the "arguments" tree. So the hint for FLOCK
// exists only if fenced documents its arguments, and HELP SET reads as
// against Redis only if fenced answers Redis's docs for SET.

// typeText types s without Enter.
func (p *ptyCLI) typeText(s string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, s); err != nil {
		p.t.Fatal(err)
	}
}

// reply sends line and returns what redis-cli printed for it, up to the
// next prompt: the line editor redraws the prompt at each key typed, so
// the output starts at the newline of Enter.
func (p *ptyCLI) reply(line, prompt string) string {
	p.t.Helper()
	p.send(line)
	p.expect("\n")
	return cliElapsed.ReplaceAllString(p.upTo(prompt), "")
}

// cliElapsed is the line redis-cli adds after a command that took half a
// second or more (repl in redis-cli.c: "(%.2fs)"), as HELP can on a loaded
// machine: it measures the machine, not the server, so it is dropped.
var cliElapsed = regexp.MustCompile(`\(\d+\.\d\ds\)\r?\n$`)

// upTo waits for want after what was already matched and returns the
// output before it.
func (p *ptyCLI) upTo(want string) string {
	p.t.Helper()
	p.mu.Lock()
	from := p.seen
	p.mu.Unlock()
	p.expect(want)
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()[from : p.seen-len(want)]
}

// The grey of a hint (linenoise: color 90, not bold) and the reset after.
const hintOn, hintOff = "\x1b[0;90;49m", "\x1b[0m"

// helpBlock is cliOutputCommandHelp's text for one command, as redis-cli
// prints it for HELP <command>.
func helpBlock(name, params, summary, since, group string) string {
	return "  \x1b[1m" + name + "\x1b[0m \x1b[90m" + params + "\x1b[0m\r\r\n" +
		"  \x1b[33msummary:\x1b[0m " + summary + "\r\r\n" +
		"  \x1b[33msince:\x1b[0m " + since + "\r\r\n" +
		"  \x1b[33mgroup:\x1b[0m " + group + "\r\r\n"
}

const setSyntax = "key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|KEEPTTL]"

func TestRedisCliHints(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	host, port, _ := strings.Cut(n.addr, ":")
	for _, proto := range []string{"-2", "-3"} {
		t.Run(proto, func(t *testing.T) {
			p := startPtyCLI(t, "-h", host, "-p", port, proto)
			prompt := n.addr + "> "
			p.expect(prompt)

			// The hint is drawn after what was typed, and follows along.
			p.typeText("FLOCK ")
			p.expect("FLOCK " + hintOn + "lock session [OWNER tag] [WAIT ms] [LIMIT n] [REQ id]" + hintOff)
			p.typeText("l1 ")
			p.expect("FLOCK l1 " + hintOn + "session [OWNER tag] [WAIT ms] [LIMIT n] [REQ id]" + hintOff)
			p.typeText("\x15") // Ctrl-U: the line is dropped, nothing is run
			p.typeText("SESSION.OPEN ")
			p.expect("SESSION.OPEN " + hintOn + "[TTL ms] [NAME label]" + hintOff)
			p.typeText("\x15")
			p.typeText("SET ")
			p.expect("SET " + hintOn + setSyntax + hintOff)
			p.typeText("\x15")
			p.typeText("CONFIG GET ")
			p.expect("CONFIG GET " + hintOn + "parameter [parameter ...]" + hintOff)
			p.typeText("\x15")

			p.send("HELP SET")
			p.expect(helpBlock("SET", setSyntax, "Set the string value of a key", "1.0.0", "string"))
			p.expect(prompt)
			p.send("HELP FLOCK")
			p.expect(helpBlock("FLOCK", "lock session [OWNER tag] [WAIT ms] [LIMIT n] [REQ id]",
				"Acquire a fenced lock; reply the fencing token", "0.1.0", "fenced"))
			p.expect(prompt)
			p.send("HELP FENCE")
			p.expect(helpBlock("FENCE", "key [session [OWNER tag]|IFEQ value]",
				"Reply the fencing token of a lock's holder, or of a key (IFEQ: only while it holds value)", "0.1.0", "fenced"))
			p.expect(prompt)
			// A group lists its commands: fenced's own under @fenced.
			list := p.reply("HELP @fenced", prompt)
			for _, name := range []string{"FLOCK", "FUNLOCK", "FENCE", "LOCK.INFO", "SESSION.OPEN", "RAFT.STATUS"} {
				if !strings.Contains(list, "\x1b[1m"+name+"\x1b[0m") {
					t.Errorf("HELP @fenced lacks %s:\n%s", name, list)
				}
			}
			if strings.Contains(list, "\x1b[1mSET\x1b[0m") {
				t.Errorf("HELP @fenced lists SET:\n%s", list)
			}
			// No command was run by the hints: the line was dropped each time.
			p.send("EXISTS l1")
			p.expect("(integer) 0")
			p.send("QUIT")
		})
	}
}

// TestRedisCliHelpLikeRedis: HELP for commands Redis also has prints what
// the same redis-cli prints against a real redis-server 7.0, byte for byte.
func TestRedisCliHelpLikeRedis(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("redis-server"); err != nil {
		compatSkip(t, "no redis-server to compare with (apt-get install redis-server)")
	}
	rd := startRedisServer(t)
	n := startNode(t, nodeOpts{})
	topics := []string{"SET", "GET", "EXPIRE", "SCAN", "HELLO", "EVAL", "BLPOP", "CONFIG GET", "SLOWLOG GET", "SCRIPT FLUSH", "ACL LOG"}
	help := func(addr string) map[string]string {
		host, port, _ := strings.Cut(addr, ":")
		p := startPtyCLI(t, "-h", host, "-p", port)
		prompt := addr + "> "
		p.expect(prompt)
		out := map[string]string{}
		for _, topic := range topics {
			out[topic] = p.reply("HELP "+topic, prompt)
		}
		p.send("QUIT")
		return out
	}
	want, got := help(rd.leader), help(n.addr)
	for _, topic := range topics {
		if !strings.Contains(want[topic], "summary:") {
			t.Fatalf("HELP %s against redis-server printed no help: %q", topic, want[topic])
		}
		if got[topic] != want[topic] {
			t.Errorf("HELP %s\nfenced: %q\n redis: %q", topic, got[topic], want[topic])
		}
	}
}
