package script

import "strings"

// A script's first line may be a shebang, "#!lua flags=no-writes,...",
// as in Redis 7. The line is checked and removed, keeping its newline so
// that line numbers stay the user's.
//
// Two parsers exist because what a shebang means is replicated semantics:
// below cluster version 3 (LibsVersion) the line is split on blanks and its
// flags are accepted but mean nothing, exactly as every release before did;
// from version 3 it is split as Redis's sdssplitargs splits it (quotes and
// escapes), and the flags take effect (no-writes, allow-oom).

// LibsVersion is the cluster version from which scripts see Redis 7's
// libraries (cjson, cmsgpack, bit, struct), their shebang is parsed as
// Redis 7 parses it, and its flags take effect.
const LibsVersion = 3

// Flags are a script's shebang flags (Redis's SCRIPT_FLAG_*).
type Flags uint8

const (
	// FlagNoWrites: the script may not run write commands; it may run by
	// EVAL_RO/EVALSHA_RO and while the state is over maxmemory.
	FlagNoWrites Flags = 1 << iota
	// FlagAllowOOM: the script runs even while the state is over maxmemory
	// (its writes that grow the state are still refused one by one).
	FlagAllowOOM
	// FlagAllowStale, FlagNoCluster and FlagAllowCrossSlot are accepted
	// and change nothing: fenced never serves stale data, is no cluster
	// and has one slot.
	FlagAllowStale
	FlagNoCluster
	FlagAllowCrossSlot
)

var flagNames = []struct {
	name string
	flag Flags
}{
	{"no-writes", FlagNoWrites}, {"allow-oom", FlagAllowOOM}, {"allow-stale", FlagAllowStale},
	{"no-cluster", FlagNoCluster}, {"allow-cross-slot-keys", FlagAllowCrossSlot},
}

// Shebang is what a script's first line declares.
type Shebang struct {
	// Present is true for a script that starts with "#!": without one a
	// script keeps Redis's legacy EVAL behaviour (it may write, and runs
	// whatever the memory in use).
	Present bool
	Flags   Flags
}

// Has reports whether every flag in f is set.
func (s Shebang) Has(f Flags) bool { return s.Flags&f == f }

// ParseShebang reads src's shebang as Redis 7's evalExtractShebangFlags
// does. It answers the body to compile (src without the shebang line but
// its newline), the shebang, and on error the whole error reply.
func ParseShebang(src string) (body string, sb Shebang, errReply string) {
	if !strings.HasPrefix(src, "#!") {
		return src, Shebang{}, ""
	}
	end := strings.IndexByte(src, '\n')
	if end < 0 {
		return "", Shebang{}, "ERR Invalid script shebang"
	}
	parts, ok := splitArgs(src[:end])
	if !ok || len(parts) == 0 {
		return "", Shebang{}, "ERR Invalid engine in script shebang"
	}
	// Redis compares and prints these as C strings.
	if e := cString(parts[0]); e != "#!lua" {
		return "", Shebang{}, "ERR Unexpected engine in script shebang: " + e
	}
	sb = Shebang{Present: true}
	for _, p := range parts[1:] {
		rest, found := strings.CutPrefix(p, "flags=")
		if !found || len(cString(p)) < len("flags=") {
			return "", Shebang{}, "ERR Unknown lua shebang option: " + cString(p)
		}
		if rest == "" {
			continue
		}
		for _, f := range strings.Split(rest, ",") {
			name := cString(f)
			known := false
			for _, fn := range flagNames {
				if fn.name == name {
					sb.Flags |= fn.flag
					known = true
					break
				}
			}
			if !known {
				return "", Shebang{}, "ERR Unexpected flag in script shebang: " + name
			}
		}
	}
	return src[end:], sb, ""
}

// cString is s up to its first NUL byte.
func cString(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

func isHex(c byte) bool { // C's isxdigit
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func hexVal(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// splitArgs splits line as Redis's sdssplitargs does: blanks separate
// arguments, "double quotes" take \xHH and \n \r \t \b \a escapes, 'single
// quotes' take \', and a closing quote must be followed by a blank or the
// end. It reads line as a C string (up to a NUL). ok is false where
// sdssplitargs answers NULL (unbalanced quotes).
func splitArgs(line string) (args []string, ok bool) {
	line = cString(line)
	at := func(i int) byte {
		if i < len(line) {
			return line[i]
		}
		return 0
	}
	p := 0
	for {
		for p < len(line) && isSpace(int(line[p])) {
			p++
		}
		if p >= len(line) {
			return args, true
		}
		var cur []byte
		inq, insq, done := false, false, false
		for !done {
			c := at(p)
			switch {
			case inq:
				switch {
				case c == '\\' && at(p+1) == 'x' && isHex(at(p+2)) && isHex(at(p+3)):
					cur = append(cur, hexVal(at(p+2))*16+hexVal(at(p+3)))
					p += 3
				case c == '\\' && at(p+1) != 0:
					p++
					e := at(p)
					switch e {
					case 'n':
						e = '\n'
					case 'r':
						e = '\r'
					case 't':
						e = '\t'
					case 'b':
						e = '\b'
					case 'a':
						e = '\a'
					}
					cur = append(cur, e)
				case c == '"':
					if n := at(p + 1); n != 0 && !isSpace(int(n)) {
						return nil, false
					}
					done = true
				case c == 0:
					return nil, false
				default:
					cur = append(cur, c)
				}
			case insq:
				switch {
				case c == '\\' && at(p+1) == '\'':
					p++
					cur = append(cur, '\'')
				case c == '\'':
					if n := at(p + 1); n != 0 && !isSpace(int(n)) {
						return nil, false
					}
					done = true
				case c == 0:
					return nil, false
				default:
					cur = append(cur, c)
				}
			default:
				switch c {
				case ' ', '\n', '\r', '\t', 0:
					done = true
				case '"':
					inq = true
				case '\'':
					insq = true
				default:
					cur = append(cur, c)
				}
			}
			if p < len(line) {
				p++
			}
		}
		args = append(args, string(cur))
	}
}

// stripShebangV1 is the shebang check of cluster versions 1 and 2: the
// line is split on blanks, and its flags are checked but mean nothing.
func stripShebangV1(src string) (string, string) {
	if !strings.HasPrefix(src, "#!") {
		return src, ""
	}
	end := strings.IndexByte(src, '\n')
	if end < 0 {
		return "", "ERR Invalid script shebang"
	}
	parts := strings.Fields(src[:end])
	if len(parts) == 0 {
		return "", "ERR Invalid engine in script shebang"
	}
	if parts[0] != "#!lua" {
		return "", "ERR Unexpected engine in script shebang: " + parts[0]
	}
	for _, p := range parts[1:] {
		if !strings.HasPrefix(p, "flags=") {
			return "", "ERR Unknown lua shebang option: " + p
		}
		if p == "flags=" {
			continue
		}
		for _, f := range strings.Split(p[len("flags="):], ",") {
			switch f {
			case "no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys":
			default:
				return "", "ERR Unexpected flag in script shebang: " + f
			}
		}
	}
	return src[end:], ""
}
