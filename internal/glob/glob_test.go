package glob

import "testing"

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, str string
		want         bool
	}{
		{"*", "", true}, {"*", "abc", true}, {"a*", "abc", true}, {"a*", "bac", false},
		{"a?c", "abc", true}, {"a?c", "ac", false}, {"[a-c]x", "bx", true}, {"[^a-c]x", "bx", false},
		{"lock:*", "lock:1", true}, {"lock:*", "lock", false}, {`a\*`, "a*", true}, {`a\*`, "ab", false},
		{"[abc", "a", true}, {"", "", true}, {"", "a", false},
	} {
		if got := Match(tc.pattern, tc.str); got != tc.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tc.pattern, tc.str, got, tc.want)
		}
	}
}

// A pattern of many stars against a long string that does not match
// finishes at once: a '*' that ran out of string stops longer tries.
func TestMatchIsNotExponential(t *testing.T) {
	p := "a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b"
	s := "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	if Match(p, s) {
		t.Fatal("matched")
	}
}
