// Package glob is Redis's glob matching (stringmatchlen), shared by KEYS,
// SCAN MATCH, ACL key and channel patterns, PSUBSCRIBE and PUBSUB CHANNELS.
package glob

import "math"

// MaxStarGroups is how many runs of '*' followed by more pattern a match
// may pass through, as in Redis since CVE-2024-31228 (its nesting limit of
// 1000, which Debian's 7.0.15 carries too): a pattern with more never
// matches a non-empty string.
const MaxStarGroups = 1000

// Match reports whether str matches pattern exactly as Redis's
// stringmatchlen (case-sensitive) answers: '*' any run, '?' any byte,
// '[...]' a class with '^' negation, 'a-z' ranges (either way round) and
// '\' escapes, an unterminated class ending with the pattern, and '\'
// escaping the next byte. Its quirks are Redis's too: an empty string
// matches only the empty pattern (not even "*": KEYS and SCAN special-case
// "*" themselves), and MaxStarGroups bounds the stars.
//
// It backtracks to the last '*' only, iteratively: O(len(pattern) ×
// len(str)) steps at worst, never recursion, which is what Redis's
// recursion with its skipLongerMatches cut-off answers too.
func Match(pattern, str string) bool {
	ok, _ := MatchWithin(pattern, str, math.MaxInt)
	return ok
}

// MatchWithin is Match spending at most budget steps: it returns the
// budget left, negative if it gave up (then matched is false). A step is
// one byte of pattern looked at against one byte of string, so a match
// takes at most len(pattern) × len(str) of them; a caller bounds with it
// what one pattern may cost, since a long pattern against a long string
// can take seconds.
func MatchWithin(pattern, str string, budget int) (matched bool, left int) {
	if str == "" {
		return pattern == "", budget
	}
	if tooManyStars(pattern) {
		return false, budget
	}
	p, s := 0, 0
	starP, starS := -1, 0 // where the last '*' resumes: pattern after it, string it has eaten to
	for s < len(str) {
		if p < len(pattern) && pattern[p] == '*' {
			for p < len(pattern) && pattern[p] == '*' {
				p++
			}
			if p == len(pattern) {
				return true, budget
			}
			starP, starS = p, s
			continue
		}
		if p < len(pattern) {
			ok, next := one(pattern, p, str[s])
			if budget -= next - p; budget < 0 {
				return false, budget
			}
			if ok {
				p, s = next, s+1
				continue
			}
		}
		if starP < 0 {
			return false, budget
		}
		starS++ // the last '*' eats one more byte
		p, s = starP, starS
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern), budget
}

// one matches the single-byte element of pattern at p (not a '*') against
// c, and returns where the next element starts. It parses as
// stringmatchlen does, whatever c is, so an element's extent never depends
// on the string.
func one(pattern string, p int, c byte) (bool, int) {
	switch pattern[p] {
	case '?':
		return true, p + 1
	case '[':
		p++
		not := p < len(pattern) && pattern[p] == '^'
		if not {
			p++
		}
		match := false
		for {
			switch {
			case p < len(pattern) && pattern[p] == '\\' && len(pattern)-p >= 2:
				p++
				if pattern[p] == c {
					match = true
				}
			case p < len(pattern) && pattern[p] == ']':
				return match != not, p + 1
			case p >= len(pattern):
				// Unterminated: the class ends with the pattern.
				return match != not, len(pattern)
			case len(pattern)-p >= 3 && pattern[p+1] == '-':
				lo, hi := pattern[p], pattern[p+2]
				if lo > hi {
					lo, hi = hi, lo
				}
				p += 2
				if c >= lo && c <= hi {
					match = true
				}
			case pattern[p] == c:
				match = true
			}
			p++
		}
	case '\\':
		if len(pattern)-p >= 2 {
			p++
		}
	}
	return pattern[p] == c, p + 1
}

// tooManyStars reports whether a match would pass more than MaxStarGroups
// runs of '*' that have pattern after them: each is a level of Redis's
// recursion, and past its limit no match can succeed (every one passes
// them all with string left, since once the string is used up only stars
// may remain).
func tooManyStars(pattern string) bool {
	stars := 0
	for i := 0; i < len(pattern); i++ {
		if pattern[i] == '*' {
			stars++
		}
	}
	if stars <= MaxStarGroups {
		return false
	}
	groups := 0
	for p := 0; p < len(pattern); {
		if pattern[p] != '*' {
			_, p = one(pattern, p, 0)
			continue
		}
		for p < len(pattern) && pattern[p] == '*' {
			p++
		}
		if p < len(pattern) {
			groups++
		}
	}
	return groups > MaxStarGroups
}

// AllStars reports whether pattern is one or more '*' and nothing else.
func AllStars(pattern string) bool {
	for i := 0; i < len(pattern); i++ {
		if pattern[i] != '*' {
			return false
		}
	}
	return pattern != ""
}
