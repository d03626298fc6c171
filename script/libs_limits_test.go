package script

import (
	"testing"
	"time"

	"github.com/fenced/fenced/reply"
)

// Every library call is charged for its work: scripts that would make the
// libraries run for minutes (a table that holds itself a hundred times,
// encoded to depth 1000; the same packed 16 deep; megabytes of input) end
// with the work limit, at the same step on every run.
func TestLibsBounded(t *testing.T) {
	for _, src := range []string{
		"local t = {1} for i = 1, 40 do t = {t, t} end return cjson.encode(t)",
		"local t = {a = 1} for i = 1, 40 do t = {a = t, b = t} end return cjson.encode(t)",
		"local t = {} for i = 1, 100 do t[i] = t end return cmsgpack.pack(t)",
		"local t = {} for i = 1, 100 do t['k' .. i] = t end return cmsgpack.pack(t)",
		"local s = cjson.encode(string.rep('a', 1e6)) for i = 1, 1e6 do cjson.decode(s) end",
		"local s = cmsgpack.pack(string.rep('a', 1e6)) for i = 1, 1e6 do cmsgpack.unpack(s) end",
		"local s = string.rep('[1,', 1e5) .. '1' .. string.rep(']', 1e5) cjson.decode_max_depth(1e9) for i = 1, 1e6 do pcall(cjson.decode, s) end",
		"local s = string.rep('\\1', 7000) for i = 1, 1e6 do cmsgpack.unpack(s) end",
		"local t = {} for i = 1, 3900 do t[i] = i end for i = 1, 1e6 do cmsgpack.pack(unpack(t)) end",
		"local f = string.rep('i32', 1e4) for i = 1, 1e6 do struct.size(f) end",
		"local t = {} for i = 1, 7000 do t[i] = i end for i = 1, 1e6 do bit.bxor(unpack(t)) end",
		"local s = string.rep('x', 1e6) for i = 1, 1e6 do struct.unpack('>I4c0', struct.pack('>I4c0', #s, s)) end",
	} {
		start := time.Now()
		got, steps := engine(DefaultLimits()).runSteps(src, nil, nil, newFakeEnv(), 0, LibsVersion)
		took := time.Since(start)
		if !eq(got, reply.Error(ErrWorkLimit)) {
			t.Errorf("%q = %v after %d steps, want the work limit", src, got, steps)
		}
		again, steps2 := engine(DefaultLimits()).runSteps(src, nil, nil, newFakeEnv(), 0, LibsVersion)
		if !eq(got, again) || steps != steps2 {
			t.Errorf("%q: two runs differ: %v %d / %v %d", src, got, steps, again, steps2)
		}
		t.Logf("%6.0f ms  %q", took.Seconds()*1000, src)
	}
}
