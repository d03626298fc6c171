package commands

import "strings"

// ListMove is LMOVE, BLMOVE, RPOPLPUSH or BRPOPLPUSH parsed: an element popped
// from Src's head (or its tail, FromTail) is pushed onto Dst's head (or its
// tail, ToTail). Timeout is the blocking forms' wait in milliseconds (0 =
// forever), 0 for the others.
type ListMove struct {
	Src, Dst         string
	FromTail, ToTail bool
	Timeout          int64
}

// ParseListMove parses the four list-move commands (arity checked), in Redis
// 7.0's order: the two sides (a syntax error), then the timeout.
// RPOPLPUSH is RIGHT LEFT.
func ParseListMove(args [][]byte) (ListMove, error) {
	m := ListMove{Src: string(args[1]), Dst: string(args[2]), FromTail: true}
	name := strings.ToLower(string(args[0]))
	if strings.HasSuffix(name, "lmove") { // LMOVE and BLMOVE name the sides
		var ok1, ok2 bool
		m.FromTail, ok1 = listSide(args[3])
		if !ok1 {
			return ListMove{}, ErrSyntax
		}
		if m.ToTail, ok2 = listSide(args[4]); !ok2 {
			return ListMove{}, ErrSyntax
		}
	}
	if strings.HasPrefix(name, "b") {
		t, err := ParseBlockTimeout(args[len(args)-1])
		if err != nil {
			return ListMove{}, err
		}
		m.Timeout = t
	}
	return m, nil
}

// listSide reads LEFT or RIGHT, in any case: tail is true for RIGHT.
func listSide(a []byte) (tail, ok bool) {
	switch {
	case strings.EqualFold(string(a), "right"):
		return true, true
	case strings.EqualFold(string(a), "left"):
		return false, true
	}
	return false, false
}
