package commands

import (
	"errors"
	"strings"
	"testing"
)

// TestParseListMove checks the list moves' parsing against Redis 7.0's
// t_list.c: LEFT or RIGHT in any case, the sides before the timeout, and
// the timeout's two errors.
func TestParseListMove(t *testing.T) {
	for _, tc := range []struct {
		line string
		want ListMove
		err  error
	}{
		{"LMOVE a b LEFT RIGHT", ListMove{Src: "a", Dst: "b", ToTail: true}, nil},
		{"lmove a b right left", ListMove{Src: "a", Dst: "b", FromTail: true}, nil},
		{"LMOVE a a RiGhT rIgHt", ListMove{Src: "a", Dst: "a", FromTail: true, ToTail: true}, nil},
		{"RPOPLPUSH s d", ListMove{Src: "s", Dst: "d", FromTail: true}, nil},
		{"BLMOVE s d LEFT LEFT 1.5", ListMove{Src: "s", Dst: "d", Timeout: 1500}, nil},
		{"BRPOPLPUSH s d 0", ListMove{Src: "s", Dst: "d", FromTail: true}, nil},
		{"BRPOPLPUSH s d 2", ListMove{Src: "s", Dst: "d", FromTail: true, Timeout: 2000}, nil},
		{"LMOVE a b LEFTX RIGHT", ListMove{}, ErrSyntax},
		{"LMOVE a b LEFT up", ListMove{}, ErrSyntax},
		// A bad side is found before a bad timeout, as Redis does.
		{"BLMOVE a b up LEFT -1", ListMove{}, ErrSyntax},
		{"BLMOVE a b LEFT LEFT x", ListMove{}, ErrTimeoutNotFloat},
		{"BLMOVE a b LEFT LEFT -1", ListMove{}, ErrTimeoutNegative},
		{"BRPOPLPUSH a b nan", ListMove{}, ErrTimeoutNotFloat},
		{"BRPOPLPUSH a b -0.5", ListMove{}, ErrTimeoutNegative},
	} {
		var args [][]byte
		for _, f := range strings.Fields(tc.line) {
			args = append(args, []byte(f))
		}
		got, err := ParseListMove(args)
		if !errors.Is(err, tc.err) || got != tc.want {
			t.Errorf("ParseListMove(%s) = %+v, %v; want %+v, %v", tc.line, got, err, tc.want, tc.err)
		}
	}
}
