package script

import (
	"encoding/json"
	"github.com/fenced/fenced/resp"
	"os"
	"sort"
	"testing"

	"github.com/fenced/fenced/reply"
)

// lockScript is one entry of testdata/lockscripts.json: the exact bytes
// real lock libraries send.
type lockScript struct {
	SHA1   string `json:"sha1"`
	Text   string `json:"text"`
	NBytes int    `json:"nbytes"`
}

func loadLockScripts(t testing.TB) map[string]lockScript {
	t.Helper()
	b, err := os.ReadFile("testdata/lockscripts.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]lockScript
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(m) < 30 {
		t.Fatalf("only %d scripts", len(m))
	}
	return m
}

// scenario runs a script in a prepared fake Redis and checks the reply and
// the state afterwards.
type scenario struct {
	name  string
	setup func(e *fakeEnv)
	keys  []string
	argv  []string
	want  string // resp.FromReply(reply).String()
	check func(t *testing.T, e *fakeEnv)
}

func str(k, v string) func(*fakeEnv) { return func(e *fakeEnv) { e.strs[k] = v } }

func strTTL(k, v string, ms int64) func(*fakeEnv) {
	return func(e *fakeEnv) { e.strs[k] = v; e.expires[k] = e.now + ms }
}

func all(fs ...func(*fakeEnv)) func(*fakeEnv) {
	return func(e *fakeEnv) {
		for _, f := range fs {
			f(e)
		}
	}
}

func hash(k string, ms int64, kv ...string) func(*fakeEnv) {
	return func(e *fakeEnv) {
		h := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			h[kv[i]] = kv[i+1]
		}
		e.hashes[k] = h
		if ms > 0 {
			e.expires[k] = e.now + ms
		}
	}
}

func gone(keys ...string) func(*testing.T, *fakeEnv) {
	return func(t *testing.T, e *fakeEnv) {
		for _, k := range keys {
			if e.exists(k) {
				t.Errorf("key %q still exists", k)
			}
		}
	}
}

func value(k, v string, ttl int64) func(*testing.T, *fakeEnv) {
	return func(t *testing.T, e *fakeEnv) {
		if got := e.strs[k]; got != v || !e.exists(k) {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
		if ttl != 0 {
			if got := e.expires[k] - e.now; got != ttl {
				t.Errorf("%s ttl = %d ms, want %d", k, got, ttl)
			}
		}
	}
}

func checks(cs ...func(*testing.T, *fakeEnv)) func(*testing.T, *fakeEnv) {
	return func(t *testing.T, e *fakeEnv) {
		for _, c := range cs {
			c(t, e)
		}
	}
}

var lockScenarios = map[string][]scenario{
	"redsync/deleteScript": {
		{"held", str("l", "v"), []string{"l"}, []string{"v"}, "(integer) 1", gone("l")},
		{"expired", nil, []string{"l"}, []string{"v"}, "(integer) -1", nil},
		{"taken", str("l", "w"), []string{"l"}, []string{"v"}, "(integer) 0", value("l", "w", 0)},
	},
	"redsync/touchWithSetNXScript": {
		{"held", strTTL("l", "v", 10), []string{"l"}, []string{"v", "8000"}, "(integer) 1", value("l", "v", 8000)},
		{"expired", nil, []string{"l"}, []string{"v", "8000"}, "(integer) 1", value("l", "v", 8000)},
		{"taken", str("l", "w"), []string{"l"}, []string{"v", "8000"}, "(integer) 0", value("l", "w", 0)},
	},
	"redsync/touchScript": {
		{"held", strTTL("l", "v", 10), []string{"l"}, []string{"v", "8000"}, "(integer) 1", value("l", "v", 8000)},
		{"taken", str("l", "w"), []string{"l"}, []string{"v", "8000"}, "(integer) 0", nil},
	},
	"redsync<=v4.11/deleteScript": {
		{"held", str("l", "v"), []string{"l"}, []string{"v"}, "(integer) 1", gone("l")},
		{"expired", nil, []string{"l"}, []string{"v"}, "(integer) 0", nil},
	},
	"redsync<=v4.11/touchScript": {
		{"held", str("l", "v"), []string{"l"}, []string{"v", "500"}, "(integer) 1", value("l", "v", 500)},
	},
	"bsm-redislock-v0.10/obtain.lua": {
		{"fresh", nil, []string{"a", "b"}, []string{"tok123meta", "6", "5000"}, "OK",
			checks(value("a", "tok123meta", 5000), value("b", "tok123meta", 5000))},
		{"re-obtain", all(str("a", "tok123old"), str("b", "tok123old")), []string{"a", "b"}, []string{"tok123meta", "6", "5000"}, "OK",
			checks(value("a", "tok123meta", 5000), value("b", "tok123meta", 5000))},
		{"taken", all(str("a", "zzz999")), []string{"a", "b"}, []string{"tok123meta", "6", "5000"}, "(nil)",
			checks(value("a", "zzz999", 0), gone("b"))},
	},
	"bsm-redislock-v0.10/pttl.lua": {
		{"held", all(strTTL("a", "t", 3000), strTTL("b", "t", 2000)), []string{"a", "b"}, []string{"t"}, "(integer) 2000", nil},
		{"taken", all(strTTL("a", "t", 3000), strTTL("b", "x", 2000)), []string{"a", "b"}, []string{"t"}, "(nil)", nil},
	},
	"bsm-redislock-v0.10/refresh.lua": {
		{"held", all(strTTL("a", "t", 3000), strTTL("b", "t", 2000)), []string{"a", "b"}, []string{"t", "9000"}, "OK",
			checks(value("a", "t", 9000), value("b", "t", 9000))},
		{"taken", all(str("a", "t"), str("b", "x")), []string{"a", "b"}, []string{"t", "9000"}, "(nil)", nil},
	},
	"bsm-redislock-v0.10/release.lua": {
		{"held", all(str("a", "t"), str("b", "t")), []string{"a", "b"}, []string{"t"}, "OK", gone("a", "b")},
		{"taken", all(str("a", "t"), str("b", "x")), []string{"a", "b"}, []string{"t"}, "(nil)", value("a", "t", 0)},
	},
	"bsm-redislock-v0.9.4/luaRefresh": {
		{"held", str("l", "t"), []string{"l"}, []string{"t", "700"}, "(integer) 1", value("l", "t", 700)},
		{"taken", str("l", "x"), []string{"l"}, []string{"t", "700"}, "(integer) 0", nil},
	},
	"bsm-redislock-v0.9.4/luaRelease": {
		{"held", str("l", "t"), []string{"l"}, []string{"t"}, "(integer) 1", gone("l")},
		{"taken", str("l", "x"), []string{"l"}, []string{"t"}, "(integer) 0", nil},
	},
	"bsm-redislock-v0.9.4/luaPTTL": {
		{"held", strTTL("l", "t", 1234), []string{"l"}, []string{"t"}, "(integer) 1234", nil},
		{"taken", str("l", "x"), []string{"l"}, []string{"t"}, "(integer) -3", nil},
	},
	"bsm-redislock-v0.9.4/luaObtain": {
		{"fresh", nil, []string{"l"}, []string{"tokABmeta", "5", "3000"}, "OK", value("l", "tokABmeta", 3000)},
		{"re-obtain", str("l", "tokABold"), []string{"l"}, []string{"tokABmeta", "5", "3000"}, "OK", value("l", "tokABmeta", 3000)},
		{"taken", str("l", "other"), []string{"l"}, []string{"tokABmeta", "5", "3000"}, "(nil)", value("l", "other", 0)},
	},
	"redis-py/LUA_RELEASE_SCRIPT": {
		{"held", str("l", "t"), []string{"l"}, []string{"t"}, "(integer) 1", gone("l")},
		{"taken", str("l", "x"), []string{"l"}, []string{"t"}, "(integer) 0", nil},
		{"expired", nil, []string{"l"}, []string{"t"}, "(integer) 0", nil},
	},
	"redis-py/LUA_EXTEND_SCRIPT": {
		{"add", strTTL("l", "t", 1000), []string{"l"}, []string{"t", "2000", "0"}, "(integer) 1", value("l", "t", 3000)},
		{"replace", strTTL("l", "t", 1000), []string{"l"}, []string{"t", "2000", "1"}, "(integer) 1", value("l", "t", 2000)},
		{"no ttl", str("l", "t"), []string{"l"}, []string{"t", "2000", "0"}, "(integer) 0", nil},
		{"taken", str("l", "x"), []string{"l"}, []string{"t", "2000", "0"}, "(integer) 0", nil},
	},
	"redis-py/LUA_REACQUIRE_SCRIPT": {
		{"held", strTTL("l", "t", 10), []string{"l"}, []string{"t", "5000"}, "(integer) 1", value("l", "t", 5000)},
		{"taken", str("l", "x"), []string{"l"}, []string{"t", "5000"}, "(integer) 0", nil},
	},
	"python-redis-lock/UNLOCK_SCRIPT": {
		{"held", str("lock:x", "id"), []string{"lock:x", "lock-signal:x"}, []string{"id", "1000"}, "(integer) 0",
			func(t *testing.T, e *fakeEnv) {
				gone("lock:x")(t, e)
				if l := e.lists["lock-signal:x"]; len(l) != 1 || l[0] != "1" || e.expires["lock-signal:x"]-e.now != 1000 {
					t.Errorf("signal list %v, ttl %d", l, e.expires["lock-signal:x"]-e.now)
				}
			}},
		{"taken", str("lock:x", "other"), []string{"lock:x", "lock-signal:x"}, []string{"id", "1000"}, "(integer) 1", value("lock:x", "other", 0)},
	},
	"python-redis-lock/EXTEND_SCRIPT": {
		{"held", strTTL("lock:x", "id", 5000), []string{"lock:x"}, []string{"id", "30"}, "(integer) 0", value("lock:x", "id", 30000)},
		{"no ttl", str("lock:x", "id"), []string{"lock:x"}, []string{"id", "30"}, "(integer) 2", nil},
		{"taken", str("lock:x", "other"), []string{"lock:x"}, []string{"id", "30"}, "(integer) 1", nil},
	},
	"python-redis-lock/RESET_SCRIPT": {
		{"held", str("lock:x", "id"), []string{"lock:x", "lock-signal:x"}, []string{"id", "1000"}, "(integer) 1", gone("lock:x")},
		{"missing ARGV[2]", str("lock:x", "id"), []string{"lock:x", "lock-signal:x"}, []string{"id"},
			"(error) ERR Lua redis lib command arguments must be strings or integers script: afbc8014508f92e446b56567e8ba600e811c1bd5, on @user_script:4.", value("lock:x", "id", 0)},
	},
	"python-redis-lock/RESET_ALL_SCRIPT": {
		{"two locks", all(str("lock:a", "1"), str("lock:b", "2"), str("other", "3")), nil, nil, "(integer) 2",
			func(t *testing.T, e *fakeEnv) {
				gone("lock:a", "lock:b")(t, e)
				value("other", "3", 0)(t, e)
				for _, k := range []string{"lock-signal:a", "lock-signal:b"} {
					if len(e.lists[k]) != 1 || e.expires[k]-e.now != 1000 {
						t.Errorf("%s = %v ttl %d", k, e.lists[k], e.expires[k]-e.now)
					}
				}
			}},
	},
	"node-redlock-v5/ACQUIRE_SCRIPT": {
		{"fresh", nil, []string{"a", "b"}, []string{"v", "1000"}, "(integer) 2", checks(value("a", "v", 1000), value("b", "v", 1000))},
		{"taken", str("b", "x"), []string{"a", "b"}, []string{"v", "1000"}, "(integer) 0", gone("a")},
	},
	"node-redlock-v5/EXTEND_SCRIPT": {
		{"held", all(str("a", "v"), str("b", "v")), []string{"a", "b"}, []string{"v", "1000"}, "(integer) 2", checks(value("a", "v", 1000), value("b", "v", 1000))},
		{"taken", all(str("a", "v"), str("b", "x")), []string{"a", "b"}, []string{"v", "1000"}, "(integer) 0", nil},
	},
	"node-redlock-v5/RELEASE_SCRIPT": {
		{"partly", all(str("a", "v"), str("b", "x")), []string{"a", "b"}, []string{"v"}, "(integer) 1", checks(gone("a"), value("b", "x", 0))},
	},
	"node-redlock-v4.2.0/lockScript": {
		{"fresh", nil, []string{"a"}, []string{"v", "1000"}, "(integer) 1", value("a", "v", 1000)},
	},
	"node-redlock-v4.2.0/unlockScript": {
		{"held", str("a", "v"), []string{"a"}, []string{"v"}, "(integer) 1", gone("a")},
	},
	"node-redlock-v4.2.0/extendScript": {
		{"held", str("a", "v"), []string{"a"}, []string{"v", "1000"}, "(integer) 1", value("a", "v", 1000)},
	},
	"node-redlock-v3.1.2/lockScript": {
		{"fresh", nil, []string{"a"}, []string{"v", "1000"}, "OK", value("a", "v", 1000)},
		{"taken", str("a", "x"), []string{"a"}, []string{"v", "1000"}, "(nil)", value("a", "x", 0)},
	},
	"node-redlock-v3.1.2/unlockScript": {
		{"held", str("a", "v"), []string{"a"}, []string{"v"}, "(integer) 1", gone("a")},
	},
	"node-redlock-v3.1.2/extendScript": {
		{"held", str("a", "v"), []string{"a"}, []string{"v", "900"}, "(integer) 1", value("a", "v", 900)},
	},
	"redlock-rb/UNLOCK_SCRIPT": {
		{"held", str("r", "v"), []string{"r"}, []string{"v"}, "(integer) 1", gone("r")},
		{"taken", str("r", "x"), []string{"r"}, []string{"v"}, "(integer) 0", nil},
	},
	"redlock-rb/LOCK_SCRIPT": {
		{"fresh", nil, []string{"r"}, []string{"v", "1000", "yes"}, "OK", value("r", "v", 1000)},
		{"extend", strTTL("r", "v", 5), []string{"r"}, []string{"v", "1000", "no"}, "OK", value("r", "v", 1000)},
		{"no new", nil, []string{"r"}, []string{"v", "1000", "no"}, "(nil)", gone("r")},
		{"taken", str("r", "x"), []string{"r"}, []string{"v", "1000", "yes"}, "(nil)", value("r", "x", 0)},
	},
	"redlock-rb/PTTL_SCRIPT": {
		{"held", strTTL("r", "v", 1000), []string{"r"}, nil, `["v", (integer) 1000]`, nil},
		{"missing", nil, []string{"r"}, nil, `[(nil), (integer) -2]`, nil},
	},
	"redisson/RedissonLock.tryLockInnerAsync": {
		{"fresh", nil, []string{"n"}, []string{"30000", "uuid:1"}, "(nil)", hashField("n", "uuid:1", "1", 30000)},
		{"reentrant", hash("n", 10, "uuid:1", "1"), []string{"n"}, []string{"30000", "uuid:1"}, "(nil)", hashField("n", "uuid:1", "2", 30000)},
		{"taken", hash("n", 5000, "uuid:2", "1"), []string{"n"}, []string{"30000", "uuid:1"}, "(integer) 5000", hashField("n", "uuid:2", "1", 5000)},
	},
	"redisson/RedissonLock.unlockInnerAsync": {
		{"last", hash("n", 100, "uuid:1", "1"), []string{"n", "redisson_lock__channel:{n}", "latch"}, []string{"0", "30000", "uuid:1", "PUBLISH", "13500"}, "(integer) 1",
			func(t *testing.T, e *fakeEnv) {
				gone("n")(t, e)
				value("latch", "1", 13500)(t, e)
				if len(e.pubs) != 1 || e.pubs[0] != "redisson_lock__channel:{n}=0" {
					t.Errorf("published %v", e.pubs)
				}
			}},
		{"reentered", hash("n", 100, "uuid:1", "2"), []string{"n", "c", "latch"}, []string{"0", "30000", "uuid:1", "PUBLISH", "13500"}, "(integer) 0",
			checks(hashField("n", "uuid:1", "1", 30000), value("latch", "0", 13500))},
		{"latched", str("latch", "1"), []string{"n", "c", "latch"}, []string{"0", "30000", "uuid:1", "PUBLISH", "13500"}, "(integer) 1", nil},
		{"not held", nil, []string{"n", "c", "latch"}, []string{"0", "30000", "uuid:1", "PUBLISH", "13500"}, "(nil)", nil},
	},
	"redisson/RedissonLock.forceUnlockAsync": {
		{"held", hash("n", 0, "u", "1"), []string{"n", "c"}, []string{"0", "PUBLISH"}, "(integer) 1", gone("n")},
		{"free", nil, []string{"n", "c"}, []string{"0", "PUBLISH"}, "(integer) 0", nil},
	},
	"redisson/LockTask.renew(watchdog)": {
		{"batch", all(hash("n1", 10, "f1", "1"), hash("n2", 10, "zz", "1")), []string{"n1", "n2"}, []string{"30000", "f1", "f2"}, "[(integer) 1, (integer) 0]",
			hashField("n1", "f1", "1", 30000)},
	},
	"redisson/RedissonFencedLock.tryLockInnerAsync": {
		{"fresh", str("tok", "41"), []string{"n", "tok"}, []string{"30000", "uuid:1"}, "[(integer) -1, (integer) 42]", hashField("n", "uuid:1", "1", 30000)},
		{"taken", hash("n", 7000, "uuid:2", "1"), []string{"n", "tok"}, []string{"30000", "uuid:1"}, "[(integer) 7000, (integer) -1]", nil},
	},
	"redisson/MasterSlaveConnectionManager.detectCluster": {
		{"probe", nil, []string{"test1", "test2"}, nil, "(nil)", nil},
	},
	"redisson-3.23.0/RedissonLock.unlockInnerAsync": {
		{"last", hash("n", 100, "u", "1"), []string{"n", "c"}, []string{"0", "30000", "u", "PUBLISH"}, "(integer) 1", gone("n")},
		{"not held", nil, []string{"n", "c"}, []string{"0", "30000", "u", "PUBLISH"}, "(nil)", nil},
	},
	"redisson-3.23.0/RedissonBaseLock.renewExpirationAsync": {
		{"held", hash("n", 100, "u", "1"), []string{"n"}, []string{"30000", "u"}, "(integer) 1", hashField("n", "u", "1", 30000)},
		{"not held", nil, []string{"n"}, []string{"30000", "u"}, "(integer) 0", nil},
	},
}

func hashField(k, f, v string, ttl int64) func(*testing.T, *fakeEnv) {
	return func(t *testing.T, e *fakeEnv) {
		if got := e.hashes[k][f]; got != v {
			t.Errorf("%s[%s] = %q, want %q", k, f, got, v)
		}
		if got := e.expires[k] - e.now; got != ttl {
			t.Errorf("%s ttl = %d, want %d", k, got, ttl)
		}
	}
}

func TestLockScripts(t *testing.T) {
	scripts := loadLockScripts(t)
	names := make([]string, 0, len(scripts))
	for n := range scripts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		s := scripts[name]
		t.Run(name, func(t *testing.T) {
			if got := SHA1(s.Text); got != s.SHA1 || len(s.Text) != s.NBytes {
				t.Fatalf("SHA1 = %s (%d bytes), want %s (%d bytes)", got, len(s.Text), s.SHA1, s.NBytes)
			}
			if err := compileSrc(s.Text); err != nil {
				t.Fatalf("Compile: %v", err)
			}
			scens := lockScenarios[name]
			if len(scens) == 0 {
				t.Fatalf("no scenario for %s", name)
			}
			for _, sc := range scens {
				t.Run(sc.name, func(t *testing.T) {
					var replies [2]reply.Value
					var logs [2][][]string
					for i := range replies {
						e := newFakeEnv()
						if sc.setup != nil {
							sc.setup(e)
						}
						replies[i] = runLim(s.Text, sc.keys, sc.argv, e, 1, DefaultLimits())
						logs[i] = e.log
						if i == 0 && sc.check != nil {
							sc.check(t, e)
						}
					}
					if got := resp.FromReply(replies[0]).String(); got != sc.want {
						t.Errorf("reply %s, want %s (commands %q)", got, sc.want, logs[0])
					}
					// Deterministic: the same run gives the same reply and
					// the same commands.
					if !eq(replies[0], replies[1]) || len(logs[0]) != len(logs[1]) {
						t.Errorf("two runs differ: %v / %v", replies[0], replies[1])
					}
				})
			}
		})
	}
}
