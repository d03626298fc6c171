package script

import "testing"

// redsync's release script (go-redsync/redsync v4 scripts.go deleteScript).
const redsyncDelete = "\n\tlocal val = redis.call(\"GET\", KEYS[1])\n\tif val == ARGV[1] then\n\t\treturn redis.call(\"DEL\", KEYS[1])\n\telseif val == false then\n\t\treturn -1\n\telse\n\t\treturn 0\n\tend\n"

// BenchmarkRedsyncRelease runs redsync's release script on a held lock, the
// most common script a lock server runs.
func BenchmarkRedsyncRelease(b *testing.B) {
	env := newFakeEnv()
	keys, argv := []string{"redsync-lock"}, []string{"pcG9xXrqJ3ZUv9uM"}
	lim := DefaultLimits()
	b.ReportAllocs()
	for b.Loop() {
		env.strs["redsync-lock"] = "pcG9xXrqJ3ZUv9uM"
		env.log = env.log[:0]
		if got := runLim(redsyncDelete, keys, argv, env, 1, lim); got.Int != 1 {
			b.Fatalf("release = %v", got)
		}
	}
}
