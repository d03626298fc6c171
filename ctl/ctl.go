// Package ctl is `fenced ctl`, the admin CLI in the fenced binary, as
// etcdctl is etcd's: membership, endpoint status and health, sessions,
// lock info, and `lock NAME -- CMD`, which holds a lock while a command
// runs. It is a client of a running cluster: it speaks RESP to the nodes'
// client ports (go-redis, and package client for the lock) and imports
// nothing of the server.
package ctl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenced/fenced/internal/flagargs"
)

// Sentinel errors; Main maps them to exit statuses.
var (
	// ErrUsage: the command line is wrong (exit status 2).
	ErrUsage = errors.New("ctl: usage")
	// ErrUnreachable: no endpoint answered (exit status 1).
	ErrUnreachable = errors.New("ctl: no endpoint answered")
	// ErrFailed: a node answered, and what it said is a failure: an
	// error reply, an unhealthy endpoint, a session that does not exist
	// (exit status 1).
	ErrFailed = errors.New("ctl: failed")
)

// envPassword is read when --pass is not given: the variable `fenced
// snapshot save` and the server read, and which ps does not show.
const envPassword = "FENCED_REQUIREPASS"

const usage = `usage: fenced ctl [flags] COMMAND [ARGS]

An admin client of a running fenced cluster, as etcdctl is of etcd.

Commands:
  member list                          members: id, Raft and client address, voter, leader
  member add ID RAFT-ADDR CLIENT-ADDR  add a node as a non-voter (RAFT.JOIN); the leader makes
                                       it a voter once it has caught up
  member remove ID                     remove a member (RAFT.REMOVE); its id is never reused
  endpoint status [--cluster]          per endpoint: id, role, leader, term, commit and applied
                                       index, version
  endpoint health [--cluster]          per endpoint: answers PING, settled, can persist, and
                                       serves a linearizable read (DBSIZE)
  session list                         open sessions: id, name, TTL, remaining, locks, waits
  session kill ID                      end a session, releasing its locks
  lock info NAME                       a lock's holder, token, hold count and waiters
  lock [--ttl D] [--wait D] NAME -- CMD [ARG...]
                                       hold NAME while CMD runs, with its fencing token in
                                       $FENCED_TOKEN (fenced ctl lock --help)

Flags, before or after the command:
  --endpoints HOST:PORT[,HOST:PORT...]  client addresses of nodes (default 127.0.0.1:6379); the
                                        first that answers serves a command, endpoint status
                                        and health ask each one (--cluster: every member)
  --user USER        ACL user to authenticate as
  --pass PASSWORD    its password (default: $FENCED_REQUIREPASS, which ps does not show)
  --tls              connect with TLS (the nodes' --tls-listen port)
  --cacert FILE      CA bundle (PEM) the nodes' certificates must chain to
  --cert FILE, --key FILE
                     client certificate and key (PEM), if the nodes ask for one
  --timeout D        bound on each connection attempt and each request (default 5s)
  -w, --write-out F  table (default) or json

Exit status: 0 on success; 1 when a request fails, no endpoint answers or one is
unhealthy; 2 for a bad command line; lock exits with CMD's status.
`

const lockUsage = `usage: fenced ctl [flags] lock [--ttl D] [--wait D] NAME -- CMD [ARG...]

Opens a session, takes the lock NAME (waiting in its FIFO queue, as etcdctl lock
waits), then runs CMD with $FENCED_TOKEN set to the lock's fencing token and
$FENCED_LOCK to NAME, stdin, stdout and stderr passed through. When CMD exits,
the lock is released and the session closed, and ctl exits with CMD's status
(128+N when signal N ended it; 126 when CMD cannot run, 127 when not found).

  --ttl D    the session's time to live (default 10s); it is renewed every TTL/3
  --wait D   give up when the lock is not obtained within D (default 0: wait)

Signals: SIGINT, SIGTERM and SIGHUP are passed on to CMD, and ctl releases the
lock once CMD has exited; while still waiting for the lock they abandon the wait.
If ctl itself is killed (SIGKILL), CMD is killed with it (Linux) and the lock is
freed when the session's TTL runs out on the server.
If the session is lost while CMD runs (killed, or no heartbeat answered for a
whole TTL), another holder may get the lock: ctl sends CMD SIGTERM, SIGKILL 5s
later if it still runs, and exits 1. Writes carrying the old FENCED_TOKEN are
then refused by a resource that checks tokens.
`

// Main runs `fenced ctl ARGS` and returns the process's exit status.
// Results go to stdout, errors to stderr; stdin is lock's CMD's.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// go-redis logs failed dials by itself, through a logger of its
	// package; ctl reports every error once, so it is silenced for this
	// process, which is ctl's alone.
	redis.SetLogger(quietLogger{})
	r := &runner{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv}
	code, err := r.run(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err == nil:
		return code
	}
	// The sentinels' "ctl: " prefix reads as "fenced ctl: ".
	msg := "fenced ctl: " + strings.TrimPrefix(err.Error(), "ctl: ")
	if errors.Is(err, ErrUsage) {
		msg += " (fenced ctl --help)"
		code = 2
	} else if code == 0 {
		code = 1
	}
	fmt.Fprintln(stderr, msg)
	return code
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// runner is one invocation: its flags, streams and connections.
type runner struct {
	g      globals
	opts   cmdOpts
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	pool   *pool // made by connect
}

// cmdOpts are the flags of single commands.
type cmdOpts struct {
	cluster   bool          // endpoint status|health: every member's client address
	ttl, wait time.Duration // lock
}

// command is one row of the command table.
type command struct {
	path  string // "member list"
	nargs int    // operands, exactly
	usage string // operands and flags, for errors
	flags func(fs *flag.FlagSet, o *cmdOpts)
	run   func(r *runner, operands []string) error
}

func commandTable() []command {
	clusterFlag := func(fs *flag.FlagSet, o *cmdOpts) {
		fs.BoolVar(&o.cluster, "cluster", false, "every member's client address, as member list finds them")
	}
	return []command{
		{path: "member list", run: (*runner).memberList},
		{path: "member add", nargs: 3, usage: "ID RAFT-ADDR CLIENT-ADDR", run: (*runner).memberAdd},
		{path: "member remove", nargs: 1, usage: "ID", run: (*runner).memberRemove},
		{path: "endpoint status", usage: "[--cluster]", flags: clusterFlag, run: (*runner).endpointStatus},
		{path: "endpoint health", usage: "[--cluster]", flags: clusterFlag, run: (*runner).endpointHealth},
		{path: "session list", run: (*runner).sessionList},
		{path: "session kill", nargs: 1, usage: "ID", run: (*runner).sessionKill},
	}
}

// run parses the command line and runs the command. The int is lock's
// exit status (CMD's); other commands report through the error alone.
func (r *runner) run(args []string) (int, error) {
	r.g = defaultGlobals()
	fs := r.flagSet("fenced ctl")
	if err := fs.Parse(args); err != nil {
		return 0, r.flagError(err, usage)
	}
	words := fs.Args()
	switch {
	case len(words) == 0:
		return 0, fmt.Errorf("%w: no command", ErrUsage)
	case words[0] == "help":
		fmt.Fprint(r.stdout, usage)
		return 0, flag.ErrHelp
	}
	rest, tail, dashed := splitDash(words)
	if words[0] == "lock" { // lock info NAME, or lock NAME -- CMD
		return r.lockCommand(rest[1:], tail, dashed)
	}
	if len(rest) < 2 {
		return 0, fmt.Errorf("%w: %q needs a subcommand", ErrUsage, words[0])
	}
	path := rest[0] + " " + rest[1]
	i := slices.IndexFunc(commandTable(), func(c command) bool { return c.path == path })
	if i < 0 {
		return 0, fmt.Errorf("%w: unknown command %q", ErrUsage, strings.Join(rest[:2], " "))
	}
	c := commandTable()[i]
	cfs := r.flagSet("fenced ctl " + c.path)
	if c.flags != nil {
		c.flags(cfs, &r.opts)
	}
	cmdUsage := strings.TrimSpace(fmt.Sprintf("fenced ctl [flags] %s %s", c.path, c.usage))
	operands, err := flagargs.Parse(cfs, rest[2:])
	if err != nil {
		return 0, r.flagError(err, "usage: "+cmdUsage+"\n")
	}
	// What follows -- are operands, as usual (an id that starts with -).
	operands = append(operands, tail...)
	if len(operands) != c.nargs {
		return 0, fmt.Errorf("%w: %s takes %d argument(s), got %d: %s", ErrUsage, c.path, c.nargs, len(operands), cmdUsage)
	}
	if err := r.ready(); err != nil {
		return 0, err
	}
	defer r.close()
	return 0, c.run(r, operands)
}

// ready completes the flags from the environment and checks them.
func (r *runner) ready() error {
	if r.g.pass == "" {
		r.g.pass = r.getenv(envPassword)
	}
	return r.g.Validate()
}

// flagSet is a flag set with the global flags, which may therefore come
// after the command too. Its output is discarded: errors are returned.
func (r *runner) flagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	r.g.register(fs)
	return fs
}

// flagError turns a flag parsing error into a usage error, or prints the
// help text for -h.
func (r *runner) flagError(err error, help string) error {
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(r.stdout, help)
		return err
	}
	return fmt.Errorf("%w: %v", ErrUsage, err)
}

// splitDash splits args at the first "--".
func splitDash(args []string) (head, tail []string, found bool) {
	i := slices.Index(args, "--")
	if i < 0 {
		return args, nil, false
	}
	return args[:i:i], args[i+1:], true // capped: an append to head must not write over tail
}
