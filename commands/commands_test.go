package commands

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// args splits a command line on spaces; a word of two single quotes stands
// for an empty argument.
func args(line string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(line) {
		if f == "''" {
			f = ""
		}
		out = append(out, []byte(f))
	}
	return out
}

// msg is an error's text as a client sees it: without the package prefix.
func msg(err error) string { return strings.TrimPrefix(err.Error(), "ERR ") }

func TestCheck(t *testing.T) {
	tab := New()
	for _, tc := range []struct {
		line string
		name string // the spec found, or "" for an error
		err  error
		msg  string // the exact message of the error, if given
	}{
		// Case-insensitive lookup.
		{line: "flock l s", name: "flock"},
		{line: "FLOCK l s", name: "flock"},
		{line: "FlOcK l s", name: "flock"},
		{line: "SESSION.OPEN", name: "session.open"},
		{line: "Session.Heartbeat id", name: "session.heartbeat"},
		{line: "LOCK.FORCEUNLOCK l 1", name: "lock.forceunlock"},
		{line: "ping", name: "ping"},
		// Minimum arity (negative): at the minimum, one past, one short.
		{line: "flock l", err: ErrArity, msg: "wrong number of arguments for 'flock' command"},
		{line: "FLOCK", err: ErrArity, msg: "wrong number of arguments for 'flock' command"},
		{line: "flock l s OWNER", name: "flock"},
		{line: "funlock l", err: ErrArity},
		{line: "funlock l s", name: "funlock"},
		{line: "funlock l s FENCE", name: "funlock"},
		{line: "fence", err: ErrArity, msg: "wrong number of arguments for 'fence' command"},
		{line: "fence l", name: "fence"},
		{line: "fence l s", name: "fence"},
		{line: "client", err: ErrArity},
		{line: "client id", name: "client"},
		{line: "session.open TTL", name: "session.open"},
		// Exact arity (positive): at, one past, one short.
		{line: "lock.info", err: ErrArity, msg: "wrong number of arguments for 'lock.info' command"},
		{line: "lock.info l", name: "lock.info"},
		{line: "lock.info l m", err: ErrArity, msg: "wrong number of arguments for 'lock.info' command"},
		{line: "lock.forceunlock l", err: ErrArity},
		{line: "lock.forceunlock l 1", name: "lock.forceunlock"},
		{line: "lock.forceunlock l 1 2", err: ErrArity},
		{line: "session.list", name: "session.list"},
		{line: "SESSION.LIST x", err: ErrArity, msg: "wrong number of arguments for 'session.list' command"},
		{line: "echo", err: ErrArity},
		{line: "echo x", name: "echo"},
		{line: "echo x y", err: ErrArity},
		{line: "time", name: "time"},
		{line: "time now", err: ErrArity},
		// Unknown commands, in Redis's words.
		{line: "x a", err: ErrUnknown, msg: "unknown command 'x', with args beginning with: 'a' "},
		{line: "x", err: ErrUnknown, msg: "unknown command 'x', with args beginning with: "},
		{line: "GETX k v", err: ErrUnknown, msg: "unknown command 'GETX', with args beginning with: 'k' 'v' "},
		{line: "flock.x l s", err: ErrUnknown},
		{line: "flocks l s", err: ErrUnknown},
		{line: "'' a", err: ErrUnknown, msg: "unknown command '', with args beginning with: 'a' "},
	} {
		spec, err := tab.Check(args(tc.line))
		if tc.err == nil {
			if err != nil || spec == nil || spec.Name != tc.name {
				t.Errorf("Check(%q) = %v, %v; want %s", tc.line, spec, err, tc.name)
			}
			continue
		}
		if spec != nil || !errors.Is(err, tc.err) {
			t.Errorf("Check(%q) = %v, %v; want %v", tc.line, spec, err, tc.err)
			continue
		}
		if tc.msg != "" && msg(err) != tc.msg {
			t.Errorf("Check(%q) message %q, want %q", tc.line, msg(err), tc.msg)
		}
	}
}

func TestCheckUnknownClips(t *testing.T) {
	tab := New()
	long := strings.Repeat("n", 100)
	a := [][]byte{[]byte(long + "\r\n"), []byte("a\r\nb")}
	for i := 0; i < 20; i++ {
		a = append(a, []byte("arg"))
	}
	_, err := tab.Check(a)
	m := msg(err)
	if strings.ContainsAny(m, "\r\n") {
		t.Fatalf("message %q contains CR or LF", m)
	}
	if !strings.HasPrefix(m, "unknown command '"+long[:64]+"', with args beginning with: 'a  b' 'arg' ") {
		t.Fatalf("message %q: name not clipped to 64 bytes or controls not replaced", m)
	}
	if n := strings.Count(m, "'arg'"); n != 7 {
		t.Fatalf("message %q previews %d args, want the first 8 in all", m, n)
	}
}

func TestTableSpecs(t *testing.T) {
	tab := New()
	all := tab.All()
	for i, s := range all {
		if i > 0 && all[i-1].Name >= s.Name {
			t.Errorf("All not sorted and unique at %s, %s", all[i-1].Name, s.Name)
		}
		if s.Name != strings.ToLower(s.Name) {
			t.Errorf("%s: names are lower case", s.Name)
		}
		if s.Arity == 0 {
			t.Errorf("%s: arity 0", s.Name)
		}
		if got, ok := tab.Lookup([]byte(strings.ToUpper(s.Name))); !ok || got != s {
			t.Errorf("Lookup(%s) = %v, %v", strings.ToUpper(s.Name), got, ok)
		}
		if s.Has(Write) && s.Has(Read) {
			t.Errorf("%s: both Write and Read", s.Name)
		}
	}
	if _, ok := tab.Lookup([]byte("nope")); ok {
		t.Error("Lookup(nope) found a command")
	}
}

func TestParseFlock(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Flock
		err  error
		msg  string
	}{
		{line: "FLOCK l s", want: Flock{Lock: "l", Session: "s", Wait: NoWait}},
		{line: "FLOCK l s OWNER t WAIT 100 LIMIT 2 REQ r1", want: Flock{Lock: "l", Session: "s", Owner: "t", Wait: 100, Limit: 2, Req: "r1"}},
		{line: "flock l s req r1 limit 1 wait 0 owner t", want: Flock{Lock: "l", Session: "s", Owner: "t", Wait: 0, Limit: 1, Req: "r1"}},
		{line: "FLOCK l s LiMiT 0 Req R wAiT 5 oWnEr MiXed", want: Flock{Lock: "l", Session: "s", Owner: "MiXed", Wait: 5, Req: "R"}},
		{line: "FLOCK l s OWNER ''", want: Flock{Lock: "l", Session: "s", Wait: NoWait}},
		{line: "FLOCK l s WAIT 9223372036854775807", want: Flock{Lock: "l", Session: "s", Wait: 1<<63 - 1}},
		{line: "FLOCK l s WAIT 5 WAIT 6", want: Flock{Lock: "l", Session: "s", Wait: 6}}, // the last one wins
		{line: "FLOCK OWNER WAIT", want: Flock{Lock: "OWNER", Session: "WAIT", Wait: NoWait}},
		// Missing values.
		{line: "FLOCK l s OWNER", err: ErrSyntax, msg: "syntax error: OWNER needs a value"},
		{line: "FLOCK l s WAIT 5 LIMIT", err: ErrSyntax, msg: "syntax error: LIMIT needs a value"},
		{line: "FLOCK l s wait", err: ErrSyntax, msg: "syntax error: wait needs a value"},
		{line: "FLOCK l s REQ", err: ErrSyntax},
		// Negative and non-integer numbers.
		{line: "FLOCK l s WAIT -1", err: ErrSyntax, msg: "syntax error: WAIT must not be negative"},
		{line: "FLOCK l s LIMIT -1", err: ErrSyntax, msg: "syntax error: LIMIT must not be negative"},
		{line: "FLOCK l s WAIT abc", err: ErrNotInteger, msg: "value is not an integer or out of range"},
		{line: "FLOCK l s WAIT 1.5", err: ErrNotInteger},
		{line: "FLOCK l s WAIT +5", err: ErrNotInteger},
		{line: "FLOCK l s WAIT ''", err: ErrNotInteger},
		{line: "FLOCK l s WAIT 0x10", err: ErrNotInteger},
		{line: "FLOCK l s WAIT 1_000", err: ErrNotInteger},
		{line: "FLOCK l s WAIT 9223372036854775808", err: ErrNotInteger},
		{line: "FLOCK l s LIMIT two", err: ErrNotInteger},
		// Unknown options, also ones of other commands.
		{line: "FLOCK l s FOO 1", err: ErrSyntax, msg: "syntax error: unknown option FOO"},
		{line: "FLOCK l s FENCE 1", err: ErrSyntax, msg: "syntax error: unknown option FENCE"},
		{line: "FLOCK l s OWNER t WAIT 5 NX", err: ErrSyntax},
	} {
		got, err := ParseFlock(args(tc.line))
		checkParse(t, tc.line, got, tc.want, err, tc.err, tc.msg)
	}
}

func TestParseFunlock(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Funlock
		err  error
		msg  string
	}{
		{line: "FUNLOCK l s", want: Funlock{Lock: "l", Session: "s"}},
		{line: "FUNLOCK l s OWNER t FENCE 7 REQ r", want: Funlock{Lock: "l", Session: "s", Owner: "t", Fence: 7, Req: "r"}},
		{line: "funlock l s req r fence 7 owner t", want: Funlock{Lock: "l", Session: "s", Owner: "t", Fence: 7, Req: "r"}},
		{line: "FUNLOCK l s FeNcE 1", want: Funlock{Lock: "l", Session: "s", Fence: 1}},
		{line: "FUNLOCK l s OWNER", err: ErrSyntax, msg: "syntax error: OWNER needs a value"},
		{line: "FUNLOCK l s FENCE", err: ErrSyntax, msg: "syntax error: FENCE needs a value"},
		{line: "FUNLOCK l s FENCE 0", err: ErrSyntax, msg: "syntax error: FENCE must be positive"},
		{line: "FUNLOCK l s FENCE -3", err: ErrSyntax},
		{line: "FUNLOCK l s FENCE x", err: ErrNotInteger},
		{line: "FUNLOCK l s FENCE 7.0", err: ErrNotInteger},
		{line: "FUNLOCK l s WAIT 1", err: ErrSyntax, msg: "syntax error: unknown option WAIT"},
		{line: "FUNLOCK l s LIMIT 1", err: ErrSyntax},
	} {
		got, err := ParseFunlock(args(tc.line))
		checkParse(t, tc.line, got, tc.want, err, tc.err, tc.msg)
	}
}

func TestParseFence(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Fence
		err  error
		msg  string
	}{
		{line: "FENCE l", want: Fence{Lock: "l"}},
		{line: "FENCE l s", want: Fence{Lock: "l", Session: "s", WithOwner: true}},
		{line: "FENCE l s OWNER t", want: Fence{Lock: "l", Session: "s", Owner: "t", WithOwner: true}},
		{line: "fence l s owner T", want: Fence{Lock: "l", Session: "s", Owner: "T", WithOwner: true}},
		{line: "FENCE l ''", want: Fence{Lock: "l", WithOwner: true}},
		{line: "FENCE l s OWNER", err: ErrSyntax, msg: "syntax error: OWNER needs a value"},
		{line: "FENCE l s WAIT 1", err: ErrSyntax, msg: "syntax error: unknown option WAIT"},
		{line: "FENCE l s OWNER t REQ r", err: ErrSyntax},
	} {
		got, err := ParseFence(args(tc.line))
		checkParse(t, tc.line, got, tc.want, err, tc.err, tc.msg)
	}
}

func TestParseSessionOpen(t *testing.T) {
	for _, tc := range []struct {
		line string
		want SessionOpen
		err  error
		msg  string
	}{
		{line: "SESSION.OPEN", want: SessionOpen{}},
		{line: "SESSION.OPEN TTL 500", want: SessionOpen{TTL: 500}},
		{line: "session.open ttl 1 name n", want: SessionOpen{TTL: 1, Name: "n"}},
		{line: "SESSION.OPEN NaMe Worker-1 tTl 86400000", want: SessionOpen{TTL: 86400000, Name: "Worker-1"}},
		{line: "SESSION.OPEN NAME ''", want: SessionOpen{}},
		{line: "SESSION.OPEN TTL", err: ErrSyntax, msg: "syntax error: TTL needs a value"},
		{line: "SESSION.OPEN TTL 500 NAME", err: ErrSyntax, msg: "syntax error: NAME needs a value"},
		{line: "SESSION.OPEN TTL 0", err: ErrSyntax, msg: "syntax error: TTL must be positive"},
		{line: "SESSION.OPEN TTL -500", err: ErrSyntax},
		{line: "SESSION.OPEN TTL 5s", err: ErrNotInteger},
		{line: "SESSION.OPEN TTL ''", err: ErrNotInteger},
		{line: "SESSION.OPEN OWNER x", err: ErrSyntax, msg: "syntax error: unknown option OWNER"},
	} {
		got, err := ParseSessionOpen(args(tc.line))
		checkParse(t, tc.line, got, tc.want, err, tc.err, tc.msg)
	}
}

func TestParseForceUnlock(t *testing.T) {
	for _, tc := range []struct {
		line string
		want ForceUnlock
		err  error
		msg  string
	}{
		{line: "LOCK.FORCEUNLOCK l 1", want: ForceUnlock{Lock: "l", Token: 1}},
		{line: "LOCK.FORCEUNLOCK l 9223372036854775807", want: ForceUnlock{Lock: "l", Token: 1<<63 - 1}},
		{line: "LOCK.FORCEUNLOCK l 0", err: ErrSyntax, msg: "syntax error: token must be positive"},
		{line: "LOCK.FORCEUNLOCK l -1", err: ErrSyntax},
		{line: "LOCK.FORCEUNLOCK l x", err: ErrNotInteger},
		{line: "LOCK.FORCEUNLOCK l ''", err: ErrNotInteger},
		{line: "LOCK.FORCEUNLOCK l 18446744073709551615", err: ErrNotInteger},
	} {
		got, err := ParseForceUnlock(args(tc.line))
		checkParse(t, tc.line, got, tc.want, err, tc.err, tc.msg)
	}
}

func TestParseProto(t *testing.T) {
	for in, want := range map[string]int{"2": 2, "3": 3, "-1": -1, "4": 4} {
		if got, err := ParseProto([]byte(in)); err != nil || got != want {
			t.Errorf("ParseProto(%q) = %d, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "x", "+3", "3.0", "2147483648", "-2147483649", "99999999999999999999"} {
		if _, err := ParseProto([]byte(in)); !errors.Is(err, ErrNotInteger) {
			t.Errorf("ParseProto(%q) error %v, want ErrNotInteger", in, err)
		}
	}
}

func checkParse[T any](t *testing.T, line string, got, want T, err, wantErr error, wantMsg string) {
	t.Helper()
	if wantErr == nil {
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %+v, %v; want %+v", line, got, err, want)
		}
		return
	}
	if !errors.Is(err, wantErr) {
		t.Errorf("%q: error %v, want %v", line, err, wantErr)
		return
	}
	if wantMsg != "" && msg(err) != wantMsg {
		t.Errorf("%q: message %q, want %q", line, msg(err), wantMsg)
	}
}

// Each cap takes its limit and refuses one byte more, with its own error.
func TestCheckCaps(t *testing.T) {
	r := func(n int) string { return strings.Repeat("x", n) }
	for _, c := range []struct {
		lock, owner, req, label string
		want                    error
	}{
		{r(MaxLockName), r(MaxOwner), r(MaxReq), r(MaxLabel), nil},
		{r(MaxLockName + 1), "", "", "", ErrLockNameTooLong},
		{"", r(MaxOwner + 1), "", "", ErrOwnerTooLong},
		{"", "", r(MaxReq + 1), "", ErrReqTooLong},
		{"", "", "", r(MaxLabel + 1), ErrLabelTooLong},
	} {
		if got := CheckCaps(c.lock, c.owner, c.req, c.label); got != c.want {
			t.Errorf("CheckCaps(%d, %d, %d, %d bytes) = %v, want %v", len(c.lock), len(c.owner), len(c.req), len(c.label), got, c.want)
		}
	}
	if _, err := ParseFlock([][]byte{[]byte("FLOCK"), []byte(r(MaxLockName + 1)), []byte("s")}); err != ErrLockNameTooLong {
		t.Errorf("ParseFlock of a long name: %v", err)
	}
	if _, err := ParseFunlock([][]byte{[]byte("FUNLOCK"), []byte("l"), []byte("s"), []byte("REQ"), []byte(r(MaxReq + 1))}); err != ErrReqTooLong {
		t.Errorf("ParseFunlock of a long REQ: %v", err)
	}
	if _, err := ParseSessionOpen([][]byte{[]byte("SESSION.OPEN"), []byte("NAME"), []byte(r(MaxLabel + 1))}); err != ErrLabelTooLong {
		t.Errorf("ParseSessionOpen of a long label: %v", err)
	}
}
