package server

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// flagGroup is one section of --help: its flags in the order shown.
type flagGroup struct {
	title string
	flags []flagHelp
}

// flagHelp is what --help adds to a flag's own usage string: the default
// as people write it (def, when the flag's DefValue is raw bytes), and an
// example.
type flagHelp struct {
	name, def, example string
}

// flagGroups is --help's layout. Every flag is in one group or in
// hiddenFlags (TestUsageCoversEveryFlag).
func flagGroups() []flagGroup {
	return []flagGroup{
		{"Node", []flagHelp{
			{name: "id", example: "--id n2"},
			{name: "data", example: "--data /var/lib/fenced"},
			{name: "listen", example: "--listen 0.0.0.0:6379 (beyond loopback: with --requirepass)"},
			{name: "advertise", example: "--advertise 10.0.0.5:6379"},
			{name: "raft-addr", example: "--raft-addr 10.0.0.5:7379 (beyond loopback: with peer TLS)"},
			{name: "raft-advertise"},
			{name: "config", example: "--config /etc/fenced.conf"},
		}},
		{"Cluster", []flagHelp{
			{name: "bootstrap"},
			{name: "join", example: "--id n2 --join 10.0.0.4:7379"},
			{name: "redirect"},
			{name: "snapshot-threshold"},
			{name: "trailing-logs"},
		}},
		{"Clients & limits", []flagHelp{
			{name: "timeout", example: "--timeout 300"},
			{name: "write-timeout", example: "--write-timeout 30s"},
			{name: "client-output-buffer-limit", def: `"normal 0 0 0" "pubsub 32mb 8mb 60"`, example: `--client-output-buffer-limit "pubsub 64mb 16mb 60"`},
			{name: "maxmemory", def: "1gb", example: "--maxmemory 512mb"},
			{name: "proto-max-bulk-len", def: "512kb", example: "--proto-max-bulk-len 4mb"},
			{name: "disk-reserve", def: "128mb", example: "--disk-reserve 1gb"},
		}},
		{"Security", []flagHelp{
			{name: "requirepass", example: "FENCED_REQUIREPASS=secret fenced --listen 0.0.0.0:6379"},
			{name: "tls-listen", example: "--tls-listen 0.0.0.0:6380 --tls-cert-file node.crt --tls-key-file node.key --tls-ca-cert-file ca.crt"},
			{name: "tls-cert-file"},
			{name: "tls-key-file"},
			{name: "tls-ca-cert-file"},
			{name: "tls-auth-clients", example: "--tls-auth-clients optional"},
			{name: "peer-cert-file", example: "--peer-cert-file n1.crt --peer-key-file n1.key --peer-trusted-ca-file ca.crt"},
			{name: "peer-key-file"},
			{name: "peer-trusted-ca-file"},
		}},
		{"Operations", []flagHelp{
			{name: "metrics", example: "--metrics 127.0.0.1:9121"},
			{name: "log-level", example: "--log-level debug"},
			{name: "log-format", example: "--log-format json"},
			{name: "version"},
		}},
	}
}

// hiddenFlags are accepted but not shown: they exist for tests.
func hiddenFlags() map[string]bool { return map[string]bool{"clock-offset": true} }

// usageIndent is where descriptions start; a longer flag puts its
// description on the next line.
const usageIndent = 34

// writeUsage writes --help: the flags of fs by group, with double dashes
// (Go's flag package accepts both and prints one).
func writeUsage(w io.Writer, fs *flag.FlagSet) {
	var b strings.Builder
	b.WriteString(`Usage: fenced [flags]
       fenced recover --data DIR --peers FILE   (see fenced recover --help)
       fenced snapshot save|restore|status ...  (see fenced snapshot --help)

fenced is a lock server that speaks the Redis protocol; every change is
committed through Raft. With no flags it runs a single-node cluster on
127.0.0.1:6379 with its data in ./fenced-data.
`)
	for _, g := range flagGroups() {
		fmt.Fprintf(&b, "\n%s:\n", g.title)
		for _, h := range g.flags {
			f := fs.Lookup(h.name)
			if f == nil {
				continue
			}
			arg, usage := flag.UnquoteUsage(f)
			left := "  --" + f.Name
			if arg != "" {
				left += " " + arg
			}
			if len(left) > usageIndent-2 {
				b.WriteString(left + "\n" + strings.Repeat(" ", usageIndent))
			} else {
				b.WriteString(left + strings.Repeat(" ", usageIndent-len(left)))
			}
			b.WriteString(usage)
			def := h.def
			if def == "" && !zeroDefault(f.DefValue) {
				def = f.DefValue
			}
			if def != "" {
				fmt.Fprintf(&b, " (default %s)", def)
			}
			b.WriteString("\n")
			if h.example != "" {
				fmt.Fprintf(&b, "%se.g. %s\n", strings.Repeat(" ", usageIndent), h.example)
			}
		}
	}
	b.WriteString(`
  -h, --help                      print this help and exit

A flag's value may follow it (--listen ADDR) or an equals sign (--listen=ADDR).
`)
	io.WriteString(w, b.String())
}

// zeroDefault reports a default not worth printing: none, or one that the
// description states ("0 = ..."), or a bool, whose description says when it
// is on (--bootstrap's "true" holds only on an empty data directory).
func zeroDefault(v string) bool {
	switch v {
	case "", "0", "0s", "false", "true":
		return true
	}
	return false
}

// gitRevision returns the commit the binary was built from, as the go
// command records it (vcs.revision, when built inside a git checkout), and
// whether the tree had changes; "unknown" without one (go build
// -buildvcs=false, or a build outside the repository).
func gitRevision() (rev string, modified bool) {
	rev = "unknown"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return rev, false
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	return rev, modified
}

// writeVersion writes --version: fenced's version, the git revision and
// the Go release and platform it was built with.
func writeVersion(w io.Writer) {
	rev, modified := gitRevision()
	if modified {
		rev += " (modified)"
	}
	fmt.Fprintf(w, "fenced version %s\ngit revision %s\n%s %s/%s\n", Version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
