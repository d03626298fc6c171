package reply

import (
	"errors"
	"fmt"
	"testing"
)

func TestErrorOf(t *testing.T) {
	errA := NewErr("NOSESSION", "session expired")
	errB := NewErr("TRYAGAIN", "leader not ready")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errA, "NOSESSION session expired"},
		{fmt.Errorf("%w: id abc", errA), "NOSESSION session expired: id abc"},
		// Behind other text, the code moves to the front once.
		{fmt.Errorf("forward: %w", errA), "NOSESSION forward: session expired"},
		{fmt.Errorf("x: %w", fmt.Errorf("y: %w", errA)), "NOSESSION x: y: session expired"},
		// Two sentinels: the first one's code.
		{fmt.Errorf("%w: %w", errB, errA), "TRYAGAIN leader not ready: NOSESSION session expired"},
		// Not an *Err: ERR, the text as it is.
		{errors.New("raftstore: bad snapshot"), "ERR raftstore: bad snapshot"},
		{NewErr("ERR", "syntax error"), "ERR syntax error"},
	} {
		v := ErrorOf(tc.err)
		if v.Kind != KindError || v.Str != tc.want {
			t.Errorf("ErrorOf(%q) = %v %q, want %q", tc.err, v.Kind, v.Str, tc.want)
		}
	}
	if !errors.Is(fmt.Errorf("forward: %w", errA), errA) || errors.Is(errA, NewErr("NOSESSION", "session expired")) {
		t.Error("errors.Is must find the sentinel itself, and only it")
	}
}
