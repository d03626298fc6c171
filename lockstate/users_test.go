package lockstate

import (
	"strconv"
	"strings"
	"testing"
)

// A script runs with its entry's user's permissions: each redis.call is
// held to the user's command rules and key patterns, whatever KEYS the
// script declared; the default user without a record may do anything.
func TestScriptCallsCheckedAgainstTheUser(t *testing.T) {
	s := New(Config{})
	idx := uint64(0)
	step := func(e Entry) Result {
		idx++
		e.Time = int64(idx)
		r, err := s.Apply(idx, e, newMemWriter())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	step(Entry{Op: OpACLSetUser, Name: "app", Args: []string{"on", ">pw", "+@all", "-@admin", "~app:*"}})
	eval := func(user, body string, keys ...string) string {
		args := append([]string{"EVAL", body, strconv.Itoa(len(keys))}, keys...)
		r := step(Entry{Op: OpExec, User: user, Args: args})
		return r.Reply.Str
	}
	for _, tc := range []struct {
		user, body string
		keys       []string
		want       string // substring of the reply
	}{
		{"app", "return redis.call('SET', KEYS[1], 'v')", []string{"app:1"}, "OK"},
		{"app", "return redis.call('SET', 'other', 'v')", nil, "can't access at least one of the keys"},
		{"app", "return redis.call('SET', KEYS[1], 'v')", []string{"other"}, "can't access at least one of the keys"},
		{"app", "return redis.call('KEYS', '*')", nil, "can't run this command"},
		{"gone", "return redis.call('GET', 'app:1')", nil, "can't run this command"},
	} {
		if got := eval(tc.user, tc.body, tc.keys...); !strings.Contains(got, tc.want) {
			t.Errorf("%s as %q: %q, want %q", tc.body, tc.user, got, tc.want)
		}
	}
	if r := s.Exec([]string{"EXISTS", "other"}, s.Time()); r.Int != 0 {
		t.Errorf("a refused call set the key: EXISTS other = %d", r.Int)
	}
	if got := eval("", "return redis.call('SET', 'other', 'v')"); got != "OK" {
		t.Errorf("the default user's script: %q", got)
	}
}
