// Package server wires fenced together: it opens the Raft node, starts the
// cluster clock and ticker, and serves RESP connections by dispatching each
// command of the command table to its handler. It owns the mapping of
// errors to RESP codes and the per-node registry of waiting FLOCKs.
package server

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/raftstore"
	"github.com/fenced/fenced/resp"
)

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("server: invalid configuration")

// Config is a node's configuration. The zero value is not valid; start from
// DefaultConfig.
type Config struct {
	ID     string // node id, never reused
	Listen string // client (RESP) address
	// TLS is the second client port, RESP over TLS (tls.go); with it,
	// Listen may be "" to serve TLS only.
	TLS ClientTLS
	// Reload, when TLS is on, reloads its certificate, key and CA on each
	// receive (Run connects SIGHUP to it; see notifyReload).
	Reload <-chan os.Signal
	// Advertise is the client address the other nodes and redirected
	// clients use, if not Listen's (a NAT, or the fault tests' proxy).
	Advertise string
	RaftAddr  string // Raft address
	// RaftAdvertise is the Raft address other nodes dial, if not RaftAddr
	// (the fault tests put a proxy there).
	RaftAdvertise string
	Data          string        // data directory
	Bootstrap     bool          // start a new cluster if the data directory is empty
	Join          string        // Raft (peer) address of a member to join
	Metrics       string        // HTTP address for /metrics, /healthz, /readyz; "" = off
	ClockOffset   time.Duration // shifts this node's wall clock (tests only)
	Redirect      bool          // a follower answers -MOVED instead of forwarding
	// Peer TLS (etcd's flag names): this node's certificate and key, and
	// the CA every peer's certificate must chain to. All three or none.
	PeerCertFile, PeerKeyFile, PeerCAFile string
	// RequirePass is the hash of the default user's password
	// (--requirepass); nil: none, every connection is the default user.
	// The password itself is never kept.
	RequirePass *PasswordHash

	// Log compaction: snapshot after this many new entries, keeping this
	// many behind the snapshot for followers that lag a little. Zero means
	// raftstore's defaults.
	SnapshotThreshold uint64
	TrailingLogs      uint64
	// DiskReserve is the free space kept in the data directory
	// (--disk-reserve): below it the node answers writes -MISCONF.
	DiskReserve uint64

	DefaultTTL time.Duration // SESSION.OPEN without TTL
	MinTTL     time.Duration
	MaxTTL     time.Duration
	MaxConns   int
	Limits     resp.Limits
	// WriteTimeout disconnects a client that takes nothing of its replies
	// or messages for that long (--write-timeout; 0: never).
	WriteTimeout time.Duration
	// IdleTimeout closes a client connection that sent no command for that
	// long (--timeout, Redis's timeout in seconds; 0, the default: never).
	// Subscribers and clients blocked in a wait (FLOCK WAIT, BLPOP) are
	// not idle.
	IdleTimeout time.Duration
	// OutputLimits bound each client's pending output in bytes
	// (--client-output-buffer-limit, Redis's classes and defaults).
	OutputLimits OutputLimits
	// MaxMemory bounds the replicated state's size, as counted by
	// lockstate.State.Used (--maxmemory; 0: none). Writes that would grow
	// it further answer -OOM; see DefaultMaxMemory.
	MaxMemory int64
	State     lockstate.Config
	// LogLevel and LogFormat (LogText or LogJSON; "" is text) are
	// --log-level and --log-format, which NewLogger builds Logger from.
	LogLevel  slog.Level
	LogFormat string
	// Logger is what the node logs through, Raft and Pebble included;
	// nil: Start uses NewLogger on os.Stderr.
	Logger *slog.Logger
}

// DefaultConfig returns the configuration of `fenced` with no flags: a
// single node on 127.0.0.1:6379 with its data under ./fenced-data.
func DefaultConfig() Config {
	return Config{
		ID:         "node1",
		Listen:     "127.0.0.1:6379",
		TLS:        defaultClientTLS(),
		RaftAddr:   "127.0.0.1:7379",
		Data:       "./fenced-data",
		Bootstrap:  true,
		DefaultTTL: 10 * time.Second,
		MinTTL:     500 * time.Millisecond,
		MaxTTL:     24 * time.Hour,
		MaxConns:   10000,
		Limits:     resp.DefaultLimits(),
		State:      lockstate.DefaultConfig(),
		// Redis has no write timeout: its output buffer limits end a
		// subscriber that does not read, and a normal client's replies
		// wait in memory. fenced blocks on the socket instead, so a client
		// that stops reading would hold its connection for good.
		WriteTimeout: DefaultWriteTimeout,
		OutputLimits: DefaultOutputLimits(),
		MaxMemory:    DefaultMaxMemory,
		DiskReserve:  raftstore.DefaultDiskReserve,
		LogLevel:     slog.LevelInfo,
		LogFormat:    LogText,
	}
}

// DefaultMaxMemory is --maxmemory's default, 1 GiB of state. Redis's is 0
// (none), since one Redis that runs out of memory is one process the
// operator restarts. Every fenced replica holds the same state and loads
// all of it at start-up, so a state that outgrows the machines takes every
// node down at once and keeps them down: the default is a bound, fixed
// rather than derived from the machine so that every node has the same
// one, and large for a lock service (a million sessions with locks count
// about 300 MB). --maxmemory 0 removes it.
const DefaultMaxMemory = 1 << 30

// DefaultWriteTimeout is --write-timeout's default.
const DefaultWriteTimeout = 60 * time.Second

// OutputLimits are Redis's client-output-buffer-limit classes that fenced
// has: normal clients and subscribers (a connection subscribed to at least
// one channel).
type OutputLimits struct {
	Normal, PubSub resp.OutputLimit
}

// DefaultOutputLimits are Redis's defaults: "normal 0 0 0" (no limit) and
// "pubsub 32mb 8mb 60".
func DefaultOutputLimits() OutputLimits {
	return OutputLimits{PubSub: resp.OutputLimit{Hard: 32 << 20, Soft: 8 << 20, SoftFor: 60 * time.Second}}
}

// Validate reports the first invalid field, naming it and its bound.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
	}
	switch {
	case c.ID == "" || strings.ContainsAny(c.ID, " \t\r\n"):
		return bad("--id must be a non-empty word, got %q", c.ID)
	case c.Data == "":
		return bad("--data must not be empty")
	case c.MinTTL <= 0 || c.MaxTTL < c.MinTTL:
		return bad("TTL bounds must satisfy 0 < min (%v) <= max (%v)", c.MinTTL, c.MaxTTL)
	case c.DefaultTTL < c.MinTTL || c.DefaultTTL > c.MaxTTL:
		return bad("default TTL %v is outside [%v, %v]", c.DefaultTTL, c.MinTTL, c.MaxTTL)
	case c.MaxConns <= 0:
		return bad("max connections must be positive")
	case c.WriteTimeout < 0:
		return bad("--write-timeout must be 0 (none) or positive, got %v", c.WriteTimeout)
	case c.IdleTimeout < 0:
		return bad("--timeout must be 0 (none) or a positive number of seconds, got %v", c.IdleTimeout)
	case c.LogFormat != "" && c.LogFormat != LogText && c.LogFormat != LogJSON:
		return bad("--log-format must be %s or %s, got %q", LogText, LogJSON, c.LogFormat)
	}
	for _, l := range []struct {
		class string
		lim   resp.OutputLimit
	}{{"normal", c.OutputLimits.Normal}, {"pubsub", c.OutputLimits.PubSub}} {
		if l.lim.Hard < 0 || l.lim.Soft < 0 || l.lim.SoftFor < 0 {
			return bad("--client-output-buffer-limit %s: limits must be 0 (none) or positive, got %d %d %v", l.class, l.lim.Hard, l.lim.Soft, l.lim.SoftFor)
		}
	}
	peerTLS := c.PeerCertFile != "" || c.PeerKeyFile != "" || c.PeerCAFile != ""
	if peerTLS {
		for _, f := range []struct{ flag, v string }{{"--peer-cert-file", c.PeerCertFile}, {"--peer-key-file", c.PeerKeyFile}, {"--peer-trusted-ca-file", c.PeerCAFile}} {
			if f.v == "" {
				return bad("peer TLS needs %s too (--peer-cert-file, --peer-key-file and --peer-trusted-ca-file go together)", f.flag)
			}
		}
	}
	if err := c.TLS.validate(c.Listen); err != nil {
		return err
	}
	// Protected mode, as in Redis: what clients reach (the client ports and
	// the metrics endpoint) is served beyond loopback only with a password.
	for _, a := range []struct{ flag, addr string }{{"--listen", c.Listen}, {"--tls-listen", c.TLS.Listen}, {"--advertise", c.Advertise}, {"--metrics", c.Metrics}} {
		if a.addr == "" { // a port that is off, or no advertised address
			continue
		}
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			return bad("%s %q: %v", a.flag, a.addr, err)
		}
		if c.RequirePass == nil && !isLoopbackAddr(a.addr) {
			return bad("%s %q: a non-loopback address needs a password: set --requirepass (or FENCED_REQUIREPASS), or serve on loopback only (protected mode)", a.flag, a.addr)
		}
	}
	for _, a := range []struct{ flag, addr string }{{"--raft-addr", c.RaftAddr}, {"--raft-advertise", c.RaftAdvertise}} {
		if a.addr == "" && a.flag == "--raft-advertise" {
			continue
		}
		host, _, err := net.SplitHostPort(a.addr)
		if err != nil {
			return bad("%s %q: %v", a.flag, a.addr, err)
		}
		// Whoever reaches the Raft port can rewrite the cluster: beyond
		// this machine, only peers with a certificate of its CA.
		if !loopback(host) && !peerTLS {
			return bad("%s %q: a non-loopback Raft address needs peer TLS (--peer-cert-file, --peer-key-file, --peer-trusted-ca-file)", a.flag, a.addr)
		}
	}
	if c.Join != "" {
		if _, _, err := net.SplitHostPort(c.Join); err != nil {
			return bad("--join %q: %v", c.Join, err)
		}
	}
	return nil
}

// envRequirePass is the environment variable that --requirepass reads, so
// that the password stays out of ps.
const envRequirePass = "FENCED_REQUIREPASS"

// passwordFlag is the flag.Value of --requirepass: it keeps only the
// password's hash. An empty password means none, as Redis's requirepass "".
type passwordFlag struct{ dst **PasswordHash }

func (f passwordFlag) String() string { return "" } // never shows a password

func (f passwordFlag) Set(v string) error {
	if v == "" {
		*f.dst = nil
		return nil
	}
	h := HashPassword(v)
	*f.dst = &h
	return nil
}

// secondsFlag is --timeout: whole seconds, as Redis's timeout.
type secondsFlag struct{ dst *time.Duration }

func (f secondsFlag) String() string {
	if f.dst == nil {
		return "0"
	}
	return strconv.FormatInt(int64(*f.dst/time.Second), 10)
}

func (f secondsFlag) Set(v string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil || n < 0 {
		return errors.New("want a whole number of seconds, 0 or more (0 = no timeout)")
	}
	*f.dst = time.Duration(n) * time.Second
	return nil
}

// sizeFlag is a size in bytes with Redis's units (512mb, 2gb; parseMemory):
// --maxmemory and --disk-reserve.
type sizeFlag[T int64 | uint64] struct{ dst *T }

func (f sizeFlag[T]) String() string {
	if f.dst == nil {
		return "0"
	}
	return strconv.FormatUint(uint64(*f.dst), 10)
}

func (f sizeFlag[T]) Set(v string) error {
	n, err := parseMemory(strings.TrimSpace(v))
	if err != nil {
		return errors.New("want bytes, or a number with a unit such as 64mb or 2gb")
	}
	*f.dst = T(n)
	return nil
}

// outputLimitsFlag is --client-output-buffer-limit: one or more groups of
// "class hard soft seconds", as Redis's client-output-buffer-limit.
type outputLimitsFlag struct{ dst *OutputLimits }

func (f outputLimitsFlag) String() string {
	if f.dst == nil {
		return ""
	}
	s := func(class string, l resp.OutputLimit) string {
		return fmt.Sprintf("%s %d %d %d", class, l.Hard, l.Soft, int64(l.SoftFor/time.Second))
	}
	return s("normal", f.dst.Normal) + " " + s("pubsub", f.dst.PubSub)
}

func (f outputLimitsFlag) Set(v string) error {
	w := strings.Fields(v)
	if len(w) == 0 || len(w)%4 != 0 {
		return errors.New(`want "class hard soft seconds", for example "pubsub 32mb 8mb 60"`)
	}
	out := *f.dst
	for ; len(w) > 0; w = w[4:] {
		var l resp.OutputLimit
		var err error
		if l.Hard, err = parseMemory(w[1]); err == nil {
			l.Soft, err = parseMemory(w[2])
		}
		var secs int64
		if err == nil {
			secs, err = strconv.ParseInt(w[3], 10, 32)
			if err == nil && secs < 0 {
				err = errors.New("negative")
			}
		}
		if err != nil {
			return fmt.Errorf("bad hard, soft or seconds in %q: sizes are bytes or with a unit (k, kb, m, mb, g, gb), seconds a whole number, all 0 or more", strings.Join(w[:4], " "))
		}
		l.SoftFor = time.Duration(secs) * time.Second
		switch strings.ToLower(w[0]) {
		case "normal":
			out.Normal = l
		case "pubsub":
			out.PubSub = l
		case "replica", "slave":
			// Redis's replicas are fenced's Raft peers, which do not use
			// the client port: accepted, so Redis configuration files
			// load, and unused.
		default:
			return fmt.Errorf("unknown client class %q: want normal or pubsub", w[0])
		}
	}
	*f.dst = out
	return nil
}

// parseMemory reads a size as Redis's configuration does: bytes, or a
// number with a unit, k/m/g (powers of 1000) or kb/mb/gb (powers of 1024),
// in any case.
func parseMemory(s string) (int64, error) {
	t := strings.ToLower(s)
	mul := int64(1)
	for _, u := range []struct {
		suffix string
		mul    int64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1000}, {"m", 1000 * 1000}, {"g", 1000 * 1000 * 1000}, {"b", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mul = strings.TrimSuffix(t, u.suffix), u.mul
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mul {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mul, nil
}

// loopback reports whether host names this machine only.
func loopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// ParseFlags turns command-line arguments (without the program name) into a
// Config: defaults, then the environment (FENCED_REQUIREPASS), then the
// --config file, then the flags. Flags given on the command line win over
// the file, and both over the environment. The Config's Logger is left
// nil: Start builds it from --log-level and --log-format.
//
// --help (-h) and --version write to out and return flag.ErrHelp: what was
// asked for is done, and the process exits 0. Errors are returned, not
// written.
func ParseFlags(args []string, out io.Writer) (Config, error) {
	return parseFlags(args, os.Getenv, out)
}

func parseFlags(args []string, getenv func(string) string, out io.Writer) (Config, error) {
	cfg := DefaultConfig()
	passwordFlag{&cfg.RequirePass}.Set(getenv(envRequirePass))
	fs, configFile, version := cfg.flagSet()
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			writeUsage(out, fs)
			return cfg, err
		}
		// The flag package names a flag with one dash; fenced's are
		// written with two everywhere else.
		msg := regexp.MustCompile(`(flag|for|defined:|argument:) -(\w)`).ReplaceAllString(err.Error(), "$1 --$2")
		return cfg, fmt.Errorf("%w: %s (fenced --help lists the flags)", ErrConfig, msg)
	}
	if *version {
		writeVersion(out)
		return cfg, flag.ErrHelp
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("%w: unexpected argument %q", ErrConfig, fs.Arg(0))
	}
	if *configFile != "" {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if err := applyConfigFile(fs, *configFile, set); err != nil {
			return cfg, err
		}
	}
	if cfg.Join != "" {
		cfg.Bootstrap = false
	}
	return cfg, cfg.Validate()
}

// flagSet returns fenced's flags, writing into cfg, and the two that are
// not settings: --config and --version.
func (cfg *Config) flagSet() (fs *flag.FlagSet, configFile *string, version *bool) {
	fs = flag.NewFlagSet("fenced", flag.ContinueOnError)
	// The flag package prints the error and its whole listing on a bad
	// flag; the caller prints the error once, and --help prints usage.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	configFile = fs.String("config", "", "read flags from `FILE`, lines of \"key value\" (# comments); the command line wins")
	version = fs.Bool("version", false, "print the version and git revision, and exit")
	fs.StringVar(&cfg.ID, "id", cfg.ID, "`NAME` of this node, unique in its cluster and never reused")
	fs.StringVar(&cfg.Listen, "listen", cfg.Listen, "`ADDR` of the client (RESP) port; \"\" turns the plaintext port off")
	cfg.TLS.register(fs)
	fs.StringVar(&cfg.RaftAddr, "raft-addr", cfg.RaftAddr, "`ADDR` of the Raft (peer) port")
	fs.StringVar(&cfg.Advertise, "advertise", "", "`ADDR` the other nodes and redirected clients reach the client port at, if not --listen")
	fs.StringVar(&cfg.RaftAdvertise, "raft-advertise", "", "`ADDR` the other nodes dial for Raft, if not --raft-addr")
	fs.StringVar(&cfg.Data, "data", cfg.Data, "`DIR` of this node's data: Raft log, snapshots, state")
	fs.BoolVar(&cfg.Bootstrap, "bootstrap", cfg.Bootstrap, "on an empty --data, start a new cluster with this node as its only voter (on unless --join; =false waits to be added)")
	fs.StringVar(&cfg.Join, "join", "", "join the cluster of the member at this Raft `ADDR`, as a new node")
	fs.StringVar(&cfg.PeerCertFile, "peer-cert-file", "", "this node's certificate `FILE` (PEM) for mutual TLS with the other nodes")
	fs.StringVar(&cfg.PeerKeyFile, "peer-key-file", "", "the key `FILE` (PEM) of --peer-cert-file")
	fs.StringVar(&cfg.PeerCAFile, "peer-trusted-ca-file", "", "CA bundle `FILE` (PEM) every peer's certificate must chain to")
	fs.StringVar(&cfg.Metrics, "metrics", "", "`ADDR` serving HTTP /metrics, /healthz, /readyz (and /debug/pprof on loopback)")
	fs.Var(logLevelFlag{&cfg.LogLevel}, "log-level", "lowest `LEVEL` logged: debug, info, warn or error; debug adds Raft's and Pebble's own messages")
	fs.Var(logFormatFlag{&cfg.LogFormat}, "log-format", "`FORMAT` of every log line on stderr: text (key=value) or json (one object per line)")
	fs.DurationVar(&cfg.ClockOffset, "clock-offset", 0, "shift this node's wall clock (tests only; changes no expiry)")
	fs.BoolVar(&cfg.Redirect, "redirect", false, "followers answer -MOVED with the leader's address instead of forwarding (Redis Cluster clients)")
	fs.Uint64Var(&cfg.SnapshotThreshold, "snapshot-threshold", 0, "take a snapshot after `N` new log entries (0 = 16384)")
	fs.Uint64Var(&cfg.TrailingLogs, "trailing-logs", 0, "log entries kept behind a snapshot for lagging followers (`N`, 0 = 10240)")
	fs.DurationVar(&cfg.WriteTimeout, "write-timeout", cfg.WriteTimeout, "disconnect a client that takes none of its replies or messages for this `DURATION` (0 = never)")
	fs.Var(secondsFlag{&cfg.IdleTimeout}, "timeout", "close a client idle for this many `SECONDS` (0 = never; not subscribers nor blocked clients)")
	fs.Var(sizeFlag[int64]{&cfg.MaxMemory}, "maxmemory", "`BYTES` of replicated state past which writes answer -OOM (0 = no limit); the leader's setting applies")
	fs.Var(outputLimitsFlag{&cfg.OutputLimits}, "client-output-buffer-limit", "`\"CLASS HARD SOFT SECONDS\"`: close a client whose pending output passes HARD bytes, or SOFT for SECONDS (CLASS normal or pubsub; 0 = none; repeatable)")
	fs.Var(protoBulkFlag{&cfg.Limits.MaxBulk}, "proto-max-bulk-len", "`BYTES` in one argument of a client's command, 512kb to 4mb (Redis's setting; CONFIG SET changes it)")
	fs.Var(sizeFlag[uint64]{&cfg.DiskReserve}, "disk-reserve", "`BYTES` kept free in the data directory: below them writes answer -MISCONF until space is back")
	fs.Var(passwordFlag{&cfg.RequirePass}, "requirepass", "the default user's `PASSWORD` (needed beyond loopback); ps shows flags: prefer "+envRequirePass+" or --config (flag and file win over the variable)")
	return fs, configFile, version
}

func applyConfigFile(fs *flag.FlagSet, path string, fromFlags map[string]bool) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		// "key value", "key\tvalue", "key = value" and "key=value" alike.
		key, value := text, ""
		if i := strings.IndexAny(text, " \t="); i >= 0 {
			key, value = text[:i], text[i:]
		}
		key = strings.TrimPrefix(key, "--")
		value = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(value), "="))
		if key == "config" || key == "version" || fs.Lookup(key) == nil {
			return fmt.Errorf("%w: %s:%d: unknown key %q", ErrConfig, path, line, key)
		}
		if fromFlags[key] {
			continue
		}
		if value == "" && key == "bootstrap" {
			value = "true"
		}
		if value == `""` { // as in Redis's files: `listen ""` turns the port off
			value = ""
		}
		if err := fs.Set(key, value); err != nil {
			return fmt.Errorf("%w: %s:%d: %s: %v", ErrConfig, path, line, key, err)
		}
	}
	return sc.Err()
}
