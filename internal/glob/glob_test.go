package glob

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// stringmatchlen is Redis's own algorithm, written out step for step from
// src/util.c (7.0.15, with the nesting limit of CVE-2024-31228 that Debian
// ships): recursion at each '*', the skipLongerMatches cut-off, and C's
// reads of the NUL that ends an sds (at[] answers 0 past the end). It is
// the oracle Match is checked against; it shares no code with it.
func stringmatchlen(pattern, str string) bool {
	skip := false
	return matchImpl(pattern, 0, len(pattern), str, 0, len(str), &skip, 0)
}

func at(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

func matchImpl(pat string, pi, patternLen int, str string, si, stringLen int, skipLonger *bool, nesting int) bool {
	if nesting > 1000 {
		return false
	}
	for patternLen > 0 && stringLen > 0 {
		switch at(pat, pi) {
		case '*':
			for patternLen > 0 && at(pat, pi+1) == '*' {
				pi++
				patternLen--
			}
			if patternLen == 1 {
				return true
			}
			for stringLen > 0 {
				if matchImpl(pat, pi+1, patternLen-1, str, si, stringLen, skipLonger, nesting+1) {
					return true
				}
				if *skipLonger {
					return false
				}
				si++
				stringLen--
			}
			*skipLonger = true
			return false
		case '?':
			si++
			stringLen--
		case '[':
			pi++
			patternLen--
			not := at(pat, pi) == '^'
			if not {
				pi++
				patternLen--
			}
			match := false
			for {
				if at(pat, pi) == '\\' && patternLen >= 2 {
					pi++
					patternLen--
					if at(pat, pi) == at(str, si) {
						match = true
					}
				} else if at(pat, pi) == ']' {
					break
				} else if patternLen == 0 {
					pi--
					patternLen++
					break
				} else if patternLen >= 3 && at(pat, pi+1) == '-' {
					start, end, c := at(pat, pi), at(pat, pi+2), at(str, si)
					if start > end {
						start, end = end, start
					}
					pi += 2
					patternLen -= 2
					if c >= start && c <= end {
						match = true
					}
				} else if at(pat, pi) == at(str, si) {
					match = true
				}
				pi++
				patternLen--
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			si++
			stringLen--
		case '\\':
			if patternLen >= 2 {
				pi++
				patternLen--
			}
			fallthrough
		default:
			if at(pat, pi) != at(str, si) {
				return false
			}
			si++
			stringLen--
		}
		pi++
		patternLen--
		if stringLen == 0 {
			for at(pat, pi) == '*' {
				pi++
				patternLen--
			}
			break
		}
	}
	return patternLen == 0 && stringLen == 0
}

// redisCases are the patterns Redis's own test suite (7.0.15's
// tests/unit/keyspace.tcl, pubsub.tcl, acl.tcl, and the nesting regression
// of later releases) puts to stringmatchlen, with the answers it asserts,
// and the edges of its parser: escapes, ranges either way round, '^',
// unterminated classes, a trailing '\', and the empty string.
var redisCases = []struct {
	pattern, str string
	want         bool
}{
	// keyspace.tcl: KEYS with pattern.
	{"foo*", "foo_a", true}, {"foo*", "key_x", false}, {"foo*", "foo", true},
	// keyspace.tcl: long nested loops.
	{"a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", strings.Repeat("a", 40), false},
	// pubsub.tcl: PSUBSCRIBE basics.
	{"foo.*", "foo.1", true}, {"bar.*", "bar.1", true}, {"foo.*", "foo1", false}, {"bar.*", "barfoo.1", false},
	{"foo.*", "qux.1", false}, {"chan.*", "chan.foo", true}, {"ch*", "channel", true}, {"foo.*", "foo.bar", true},
	{"*", "__keyspace@9__:foo", true}, {"__key*__:*", "__keyevent@0__:set", true},
	// acl.tcl: channel patterns.
	{"foo:*", "foo:1", true}, {"bar:*", "foo:1", false},
	// The parser's edges.
	{"*", "", false}, {"**", "", false}, {"", "", true}, {"", "a", false}, {"*", "abc", true},
	{"a?c", "abc", true}, {"a?c", "ac", false}, {"?", "", false},
	{"[a-c]x", "bx", true}, {"[c-a]x", "bx", true}, {"[^a-c]x", "bx", false}, {"[^a-c]x", "dx", true},
	{`[\]]`, "]", true}, {`[\-]`, "-", true}, {"[]]", "]", false}, {"[]", "a", false},
	{"[abc", "a", true}, {"[abc", "d", false}, {"[", "a", false}, {"[^", "a", true}, {"[^", "", false},
	{"[a-", "-", true}, {"[a-", "b", false}, {`[a-\]`, "_", true}, {`[a-\]`, "[", false}, {`[a\`, `\`, true},
	{`a\*`, "a*", true}, {`a\*`, "ab", false}, {`\`, `\`, true}, {`a\`, `a\`, true}, {`\?`, "?", true}, {`\?`, "x", false},
	{"a*", "a", true}, {"a*b", "a", false}, {"*a", "ba", true}, {"*a", "ab", false}, {"a**b", "axxb", true},
	{"lock:*", "lock:1", true}, {"lock:*", "lock", false}, {"*[0-9]", "key9", true}, {"*[0-9]", "key", false},
	{"h?llo", "hello", true}, {"h*llo", "heeeello", true}, {"h[ae]llo", "hallo", true}, {"h[^e]llo", "hello", false},
	{"h[a-b]llo", "hbllo", true},
	// The nesting limit: 1000 groups of '*' with pattern after them pass,
	// 1001 never match.
	{strings.Repeat("*a", 1000), strings.Repeat("a", 3000), true},
	{strings.Repeat("*a", 1001), strings.Repeat("a", 3000), false},
	{strings.Repeat("*?", 50000), strings.Repeat("a", 50000), false},
	{strings.Repeat("*", 5000) + "a", "ba", true},
	{strings.Repeat(`\*`, 1500), strings.Repeat("*", 1500), true},
}

func TestMatchRedisCases(t *testing.T) {
	for _, tc := range redisCases {
		if got := Match(tc.pattern, tc.str); got != tc.want {
			t.Errorf("Match(%.40q, %.40q) = %v, want %v", tc.pattern, tc.str, got, tc.want)
		}
		if tc.want != stringmatchlen(tc.pattern, tc.str) {
			t.Errorf("the oracle disagrees with the table on (%.40q, %.40q)", tc.pattern, tc.str)
		}
	}
}

// Match agrees with the oracle on random patterns over an alphabet of the
// special bytes and a few letters, where the parser's edges meet.
func TestMatchAgreesWithStringmatchlen(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pat := []byte(`*?[]^-\ab`)
	txt := []byte(`ab-]^\*`)
	gen := func(alphabet []byte, n int) string {
		b := make([]byte, r.IntN(n+1))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	matches := 0
	for range 300000 {
		p, s := gen(pat, 10), gen(txt, 8)
		want := stringmatchlen(p, s)
		if Match(p, s) != want {
			t.Fatalf("Match(%q, %q) = %v, stringmatchlen %v", p, s, !want, want)
		}
		if want {
			matches++
		}
	}
	if matches < 1000 {
		t.Fatalf("only %d matches: the generator tests little", matches)
	}
}

func FuzzMatch(f *testing.F) {
	for _, tc := range redisCases {
		if len(tc.pattern) < 100 && len(tc.str) < 100 {
			f.Add(tc.pattern, tc.str)
		}
	}
	f.Fuzz(func(t *testing.T, p, s string) {
		if len(p) > 64 || len(s) > 64 {
			return // the oracle recurses: keep it small
		}
		if got, want := Match(p, s), stringmatchlen(p, s); got != want {
			t.Fatalf("Match(%q, %q) = %v, stringmatchlen %v", p, s, got, want)
		}
	})
}

// The worst case is quadratic, not exponential: many stars against a long
// string that does not match finish at once.
func TestMatchIsNotExponential(t *testing.T) {
	p := strings.Repeat("a*", 500) + "b"
	s := strings.Repeat("a", 100000)
	if Match(p, s) {
		t.Fatal("matched")
	}
}

func TestAllStars(t *testing.T) {
	for p, want := range map[string]bool{"*": true, "***": true, "": false, "*a": false, `\*`: false} {
		if AllStars(p) != want {
			t.Errorf("AllStars(%q) != %v", p, want)
		}
	}
}

// MatchWithin answers as Match within its budget, which a match of
// len(pattern) × len(str) steps never exceeds, and gives up past it.
func TestMatchWithin(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		p := strings.Repeat("*", r.IntN(3)) + strings.Repeat("a?", r.IntN(4)) + "*" + strings.Repeat("[ab]", r.IntN(3)) + "b"
		s := strings.Repeat("ab", r.IntN(20))
		ok, left := MatchWithin(p, s, len(p)*len(s))
		if left < 0 || ok != Match(p, s) {
			t.Fatalf("MatchWithin(%q, %q) = %v %v, Match %v", p, s, ok, left, Match(p, s))
		}
	}
	p, s := "*"+strings.Repeat("a", 1000)+"b", strings.Repeat("a", 100000)
	if _, left := MatchWithin(p, s, 1<<20); left >= 0 {
		t.Fatal("a 100M-step match finished within 1M steps")
	}
	if ok, left := MatchWithin("x*", s, 1); left != 0 || ok {
		t.Fatalf("a mismatch at the first byte: %v, %d left", ok, left)
	}
}
