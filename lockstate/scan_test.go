package lockstate

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fenced/fenced/internal/glob"
	"github.com/fenced/fenced/reply"
)

// scanState is a State with an apply helper for the SCAN tests.
type scanState struct {
	t     testing.TB
	s     *State
	index uint64
}

func (ss *scanState) apply(e Entry) Result {
	ss.index++
	r, err := ss.s.Apply(ss.index, e, nopWriter{})
	if err != nil {
		ss.t.Fatal(err)
	}
	return r
}

func (ss *scanState) exec(now int64, args ...string) Result {
	return ss.apply(Entry{Op: OpExec, Time: now, Args: args})
}

// scanReply splits SCAN's reply into the next cursor and the names.
func scanReply(t testing.TB, v reply.Value) (string, []string) {
	t.Helper()
	top := v.Elems
	if v.IsError() || len(top) != 2 {
		t.Fatalf("SCAN answered %v", v)
	}
	var names []string
	for _, e := range top[1].Elems {
		names = append(names, e.Str)
	}
	return top[0].Str, names
}

// TestScanModel: random writes (keys of every type created, deleted,
// given short TTLs that run out, fenced locks taken and released) between
// the calls of SCAN iterations with random COUNT, MATCH and TYPE. Every
// name present with the type asked for from the first call to the last is
// returned; every name returned was live, of that type and matching when
// its call ran; none is returned twice (fenced's iterations cover each hash
// once). The name index is checked against the keys and locks after every
// write.
func TestScanModel(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { scanModel(t, seed) })
	}
}

func scanModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	ss := &scanState{t: t, s: New(Config{})}
	if seed%2 == 1 {
		// Few distinct hashes: a call must take the whole run of names
		// that share its last hash, or the next call skips the rest.
		ss.s.nameHash = func(n string) uint64 { return NameHash(n[len(n)-1:]) }
	}
	const sess = "00000000000000000000000000000001"
	now := int64(1)
	ss.apply(Entry{Op: OpSessionOpen, Time: now, Session: sess, TTL: 1 << 40})
	pool := 40 + rng.IntN(400)
	name := func() string {
		return []string{"a", "b", "ab", "x"}[rng.IntN(4)] + fmt.Sprint(rng.IntN(pool))
	}
	write := func() {
		n := name()
		switch rng.IntN(9) {
		case 0, 1:
			ss.exec(now, "SET", n, "v")
		case 2:
			ss.exec(now, "SET", n, "v", "PX", fmt.Sprint(1+rng.IntN(20)))
		case 3:
			ss.exec(now, "HSET", n, "f", "v")
		case 4:
			ss.exec(now, "RPUSH", n, "e")
		case 5, 6:
			ss.exec(now, "DEL", n)
		case 7:
			ss.apply(Entry{Op: OpFlock, Time: now, Session: sess, Lock: n, Wait: NoWait})
		case 8:
			ss.apply(Entry{Op: OpFunlock, Time: now, Session: sess, Lock: n})
		}
		now += int64(rng.IntN(3))
		if ss.index%8 != 0 {
			return
		}
		if err := checkInvariants(ss.s); err != nil {
			t.Fatal(err)
		}
	}
	for range 200 {
		write()
	}
	types := []string{"", "string", "hash", "list", "fencedlock", "nosuchtype"}
	patterns := []string{"", "*", "a*", "*b*", "x?", "[ab]1*"}
	for iter := range 20 {
		typ, pat := types[rng.IntN(len(types))], patterns[rng.IntN(len(patterns))]
		ok := func(n string, now int64) bool {
			t := ss.s.KeyType(n, now)
			return t != "none" && (typ == "" || t == typ) && (pat == "" || matchPattern(pat, n))
		}
		// throughout: the names that ok has held for since the start.
		throughout := map[string]bool{}
		for _, n := range ss.s.keyNames(now, func(string) bool { return true }) {
			if ok(n, now) {
				throughout[n] = true
			}
		}
		seen := map[string]bool{}
		cursor := "0"
		for calls := 0; ; calls++ {
			args := []string{"SCAN", cursor, "COUNT", fmt.Sprint(1 + rng.IntN(30))}
			if typ != "" {
				args = append(args, "TYPE", strings.ToUpper(typ[:1])+typ[1:])
			}
			if pat != "" {
				args = append(args, "MATCH", pat)
			}
			var names []string
			cursor, names = scanReply(t, ss.s.Exec(args, now))
			for _, n := range names {
				if seen[n] {
					t.Fatalf("iteration %d: %q returned twice", iter, n)
				}
				seen[n] = true
				if !ok(n, now) {
					t.Fatalf("iteration %d: %q returned, but it is %s (TYPE %q MATCH %q)", iter, n, ss.s.KeyType(n, now), typ, pat)
				}
			}
			if cursor == "0" {
				break
			}
			if calls > 100000 {
				t.Fatal("the iteration does not end")
			}
			for range rng.IntN(4) {
				write()
				for n := range throughout {
					if !ok(n, now) {
						delete(throughout, n)
					}
				}
			}
		}
		for n := range throughout {
			if !seen[n] {
				t.Fatalf("iteration %d (TYPE %q MATCH %q): %q was present throughout but never returned", iter, typ, pat, n)
			}
		}
	}
}

func matchPattern(p, s string) bool { return glob.Match(p, s) }

// TestKeysInSteps: KEYS run as a Scan in steps answers what the one-go KEYS
// answers, sorted, over 50,000 keys, and no step visits more than
// scanStep names (the state lock is held for one step at a time).
func TestKeysInSteps(t *testing.T) {
	ss := &scanState{t: t, s: New(Config{})}
	const n = 50_000
	args := []string{"MSET"}
	for i := range n {
		args = append(args, fmt.Sprintf("key:%d", i), "v")
		if len(args) > 2000 || i == n-1 {
			ss.exec(1, args...)
			args = args[:1]
		}
	}
	for _, pat := range []string{"*", "key:1*", "*99", "nomatch"} {
		sc := NewKeysScan(pat)
		steps, visited := 0, 0
		for {
			before := len(sc.found)
			done := sc.Step(ss.s, 1)
			steps++
			if got := len(sc.found) - before; got > scanStep {
				t.Fatalf("a step collected %d names", got)
			}
			visited += len(sc.found) - before
			if done {
				break
			}
		}
		got := replyStrings(sc.Finish())
		want := replyStrings(cmdKeys(ss.s, [][]byte{[]byte("KEYS"), []byte(pat)}, 1))
		if !slices.Equal(got, want) || !slices.IsSorted(got) {
			t.Fatalf("KEYS %s in steps: %d names, in one go %d", pat, len(got), len(want))
		}
		if min := (n + scanStep - 1) / scanStep; steps < min || steps > min+1 {
			t.Fatalf("KEYS %s took %d steps over %d keys", pat, steps, n)
		}
		t.Logf("KEYS %s: %d names, %d steps of at most %d names", pat, len(got), steps, scanStep)
	}
}

func replyStrings(v reply.Value) []string {
	var out []string
	for _, e := range v.Elems {
		out = append(out, e.Str)
	}
	return out
}
