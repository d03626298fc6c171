package resp

import (
	"bytes"
	"errors"
	"io"
	"math"
	"testing"
	"testing/iotest"

	"github.com/tidwall/redcon"
)

// redcon (github.com/tidwall/redcon, the RESP library the design names) is a
// differential oracle for this package's Reader: on every input it survives,
// both must read the same multibulk commands. Package resp keeps its own
// reader because redcon's cannot be handed untrusted bytes: a bulk length
// near the int range overflows its bounds check and panics the process
// (TestRedconCrashes), and a huge array count makes it loop that many times
// over an empty buffer. redcon is a test dependency only.

// redconSafe reports whether redcon can read in without crashing or
// spinning, and without meeting the differences below that are not
// disagreements on a valid command: every '*' or '$' that could start a
// header is followed by a canonical decimal of at most 6 digits (no '+',
// no leading zero, and no array count of 0 or below, which Redis and this
// Reader skip as an empty command while redcon refuses it).
func redconSafe(in []byte) bool {
	for i, c := range in {
		if c != '*' && c != '$' {
			continue
		}
		rest := in[i+1:]
		if len(rest) > 0 && rest[0] == '-' && c == '$' {
			rest = rest[1:]
		}
		digits := 0
		for digits < len(rest) && rest[digits] >= '0' && rest[digits] <= '9' {
			digits++
		}
		switch {
		case len(rest) > 0 && (rest[0] == '+' || rest[0] == '-'):
			return false
		case digits > 6:
			return false
		case digits > 1 && rest[0] == '0':
			return false
		case c == '*' && digits >= 1 && rest[0] == '0':
			return false
		}
	}
	return true
}

// redconCommands reads in with redcon: its commands until the first error.
// It is fed a byte at a time: given more, redcon parses all it holds at
// once and, on an error anywhere in it, drops the good commands before.
func redconCommands(in []byte) ([][][]byte, error) {
	rd := redcon.NewReader(iotest.OneByteReader(bytes.NewReader(in)))
	var cmds [][][]byte
	for {
		cmd, err := rd.ReadCommand()
		if err != nil {
			return cmds, err
		}
		cmds = append(cmds, cmd.Args)
	}
}

// FuzzRedconOracle: on inputs redcon survives (redconSafe), the Reader and
// redcon read the same multibulk commands, in order, up to the first
// inline command (the two split inline lines by different rules: this
// Reader follows Redis's sdssplitargs, with \x escapes and its quoting
// errors) or the first error; where one of them refuses a command, so does
// the other (their error texts differ).
func FuzzRedconOracle(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Add([]byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n"))
	f.Add([]byte("*1\r\n$4\r\nPING\r\n\r\n*1\r\n$4\r\nPI\r\n\r\n"))
	f.Add([]byte("*1\r\n$4\r\nPING\r\nPING\r\n"))
	f.Add([]byte("*2\r\n$4\r\nECHO\r\n$5\r\na\r\nb\r\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		// redcon, fed a byte at a time, rescans what it holds on each
		// byte: inputs are kept small.
		if len(in) > 4096 || !redconSafe(in) {
			return
		}
		lim := Limits{MaxBulk: math.MaxInt, MaxArgs: math.MaxInt, MaxInline: math.MaxInt, MaxCommand: math.MaxInt}
		src := bytes.NewReader(in)
		rd := NewReader(src, lim)
		theirs, theirErr := redconCommands(in)
		for i := 0; ; i++ {
			if pos := len(in) - src.Len() - rd.Buffered(); pos < len(in) && in[pos] != '*' {
				return // an inline command or an empty line: compared no further
			}
			args, err := rd.ReadCommand()
			if i >= len(theirs) {
				// redcon stopped here: at the end of the input, or on an error.
				switch {
				case err == nil:
					t.Fatalf("command %d: redcon stopped (%v), the Reader read %q", i, theirErr, args)
				case theirErr == io.EOF && earlyRefusal(err):
					// A header line that no number fits: the Reader refuses
					// it before its end, which redcon (and Redis) wait for.
				case (err == io.EOF || err == io.ErrUnexpectedEOF) != (theirErr == io.EOF):
					t.Fatalf("command %d: the Reader ended with %v, redcon with %v", i, err, theirErr)
				}
				return
			}
			if err != nil {
				if errors.Is(err, ErrProtocol) || err == io.EOF || err == io.ErrUnexpectedEOF {
					t.Fatalf("command %d: the Reader ended with %v, redcon read %q", i, err, theirs[i])
				}
				t.Fatalf("command %d: unexpected error %v", i, err)
			}
			if !equalArgs(args, theirs[i]) {
				t.Fatalf("command %d: the Reader read %q, redcon %q", i, args, theirs[i])
			}
		}
	})
}

// earlyRefusal reports whether err is the Reader's refusal of a header
// line longer than any valid one (maxHeaderLine), given before its end.
func earlyRefusal(err error) bool {
	return err != nil && (err.Error() == "Protocol error: too big mbulk count string" ||
		err.Error() == "Protocol error: too big bulk count string")
}

// TestRedconCrashes shows why the server does not read with redcon: the
// input that panics its reader (run in a recover, which a server's
// connection goroutine would not have) is refused by the Reader with
// Redis's error.
func TestRedconCrashes(t *testing.T) {
	in := []byte("*1\r\n$9223372036854775807\r\n")
	panicked := func() (p bool) {
		defer func() { p = recover() != nil }()
		redconCommands(in)
		return false
	}()
	if !panicked {
		t.Fatal("redcon v1.6.4 read a bulk length of 2^63-1 without a panic: the README's reason no longer holds")
	}
	_, err := NewReader(bytes.NewReader(in), DefaultLimits()).ReadCommand()
	if err == nil || err.Error() != "Protocol error: invalid bulk length" {
		t.Fatalf("the Reader on %q: %v, want Protocol error: invalid bulk length", in, err)
	}
}
