package script

import (
	"strings"
	"testing"

	"github.com/fenced/fenced/reply"
)

// redis.acl_check_cmd (Redis 7): true or false as the Env's ACL decides,
// an error for an unknown command or bad arguments; absent before cluster
// version 3.
func TestACLCheckCmd(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want reply.Value
	}{
		{"return redis.acl_check_cmd('set', 'k', 1)", reply.Int(1)},
		{"return redis.acl_check_cmd('DEL', 'k')", reply.Null()}, // false
		{"return redis.acl_check_cmd('nope', 'k')", reply.Error("ERR Invalid command passed to redis.acl_check_cmd() script: x, on @user_script:1.")},
		{"return redis.acl_check_cmd()", reply.Error("ERR Please specify at least one argument for this redis lib call script: x, on @user_script:1.")},
		{"return redis.acl_check_cmd('set', {})", reply.Error("ERR Lua redis lib command arguments must be strings or integers script: x, on @user_script:1.")},
	} {
		got := runV3(tc.src, nil, nil, nil)
		if tc.want.Kind == reply.KindError {
			// The script's SHA-1 differs per source: compare the rest.
			msg, _, _ := strings.Cut(tc.want.Str, " script: ")
			if got.Kind != reply.KindError || !strings.HasPrefix(got.Str, msg+" script: "+SHA1(tc.src)+", on @user_script:1.") {
				t.Errorf("%s = %+v, want %q", tc.src, got, msg)
			}
			continue
		}
		if got.Kind != tc.want.Kind || got.Int != tc.want.Int {
			t.Errorf("%s = %+v, want %+v", tc.src, got, tc.want)
		}
	}
	got := engine(DefaultLimits()).RunAt("return redis.acl_check_cmd('set', 'k', 1)", nil, nil, newFakeEnv(), 0, LibsVersion-1)
	if got.Kind != reply.KindError || !strings.Contains(got.Str, "non-function") {
		t.Errorf("acl_check_cmd before version 3 = %+v, want a call of nil", got)
	}
}

// getmetatable(_G) is Redis 7's read-only metatable of _G from cluster
// version 3 (Redis's "Try trick global protection 2"); false before.
func TestGlobalsMetatableReadOnly(t *testing.T) {
	src := "local g = getmetatable(_G)\ng.__index = {}"
	got := runV3(src, nil, nil, nil)
	want := "ERR user_script:2: Attempt to modify a readonly table script: " + SHA1(src) + ", on @user_script:2."
	if got.Kind != reply.KindError || got.Str != want {
		t.Errorf("got %+v, want %q", got, want)
	}
	if got := runV3("return type(getmetatable(_G).__index)", nil, nil, nil); got.Str != "function" {
		t.Errorf("getmetatable(_G).__index is a %+v", got)
	}
	if got := runV3("return rawset(getmetatable(_G), '__index', 1)", nil, nil, nil); got.Kind != reply.KindError || !strings.Contains(got.Str, "Attempt to modify a readonly table") {
		t.Errorf("rawset on _G's metatable: %+v", got)
	}
	if got := engine(DefaultLimits()).RunAt("return getmetatable(_G)", nil, nil, newFakeEnv(), 0, 1); got.Kind != reply.KindNull {
		t.Errorf("getmetatable(_G) at version 1 = %+v, want false (a null)", got)
	}
}
