// Package glob is Redis's glob matching (stringmatchlen), shared by KEYS,
// ACL key and channel patterns and PSUBSCRIBE-style patterns.
package glob

// Match is Redis's stringmatchlen, case-sensitive: '*', '?', '[...]'
// with '^' negation and 'a-z' ranges, and '\' escaping the next byte. As
// in Redis, a '*' that ran out of string stops its callers from trying
// longer matches, and nesting is bounded, so no pattern is exponential.
func Match(pattern, str string) bool {
	skip := false
	return match(pattern, str, &skip, 0)
}

func match(pattern, str string, skipLonger *bool, nesting int) bool {
	if nesting > 1000 {
		return false
	}
	p, s := 0, 0
	for p < len(pattern) && s < len(str) {
		switch pattern[p] {
		case '*':
			for p+1 < len(pattern) && pattern[p+1] == '*' {
				p++
			}
			if p+1 == len(pattern) {
				return true
			}
			for ; s < len(str); s++ {
				if match(pattern[p+1:], str[s:], skipLonger, nesting+1) {
					return true
				}
				if *skipLonger {
					return false
				}
			}
			*skipLonger = true
			return false
		case '?':
			s++
		case '[':
			p++
			not := p < len(pattern) && pattern[p] == '^'
			if not {
				p++
			}
			match := false
			for {
				if p < len(pattern) && pattern[p] == '\\' && p+1 < len(pattern) {
					p++
					if pattern[p] == str[s] {
						match = true
					}
				} else if p < len(pattern) && pattern[p] == ']' {
					break
				} else if p >= len(pattern) {
					p-- // an unterminated class ends with the pattern
					break
				} else if p+2 < len(pattern) && pattern[p+1] == '-' {
					lo, hi := pattern[p], pattern[p+2]
					if lo > hi {
						lo, hi = hi, lo
					}
					p += 2
					if str[s] >= lo && str[s] <= hi {
						match = true
					}
				} else if pattern[p] == str[s] {
					match = true
				}
				p++
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			s++
		case '\\':
			if p+1 < len(pattern) {
				p++
			}
			fallthrough
		default:
			if pattern[p] != str[s] {
				return false
			}
			s++
		}
		p++
	}
	if s == len(str) {
		for p < len(pattern) && pattern[p] == '*' {
			p++
		}
	}
	return p >= len(pattern) && s == len(str)
}
