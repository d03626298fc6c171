package test

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// The checkers must catch what they claim to. These histories are built by
// hand: ms times, sessions a and b with a 1 s TTL.

func ms(n int64) int64 { return n * int64(time.Millisecond) }

func opened(s string, at int64) histOp {
	return histOp{Kind: "open", Session: s, TTL: 1000, Outcome: outOK, Call: ms(at), Return: ms(at + 1)}
}

func acq(client int, s string, call, ret int64, token int64) histOp {
	return histOp{Client: client, Kind: "acquire", Lock: "l", Session: s, Token: token, Outcome: outOK, Call: ms(call), Return: ms(ret)}
}

func rel(client int, s string, call, ret int64, token, left int64) histOp {
	return histOp{Client: client, Kind: "release", Lock: "l", Session: s, Token: token, Count: left, Outcome: outOK, Call: ms(call), Return: ms(ret)}
}

func linearizable(ops []histOp, limit int64) bool {
	model := lockModel(newSessionBounds(ops))
	for _, pops := range lockOperations(ops, limit) {
		if porcupine.CheckOperationsTimeout(model, pops, 10*time.Second) != porcupine.Ok {
			return false
		}
	}
	return true
}

func TestLockModel(t *testing.T) {
	t.Parallel()
	hb := func(s string, call int64) histOp {
		return histOp{Kind: "heartbeat", Session: s, Outcome: outOK, Call: ms(call), Return: ms(call + 1)}
	}
	unknownAcq := func(client int, s string, call, ret int64) histOp {
		return histOp{Client: client, Kind: "acquire", Lock: "l", Session: s, Outcome: outUnknown, Call: ms(call), Return: ms(ret)}
	}
	fenceRead := func(client int, call, ret, token int64) histOp {
		return histOp{Client: client, Kind: "fence", Lock: "l", Token: token, Null: token == 0, Outcome: outOK, Call: ms(call), Return: ms(ret)}
	}
	base := []histOp{opened("a", 0), opened("b", 0), opened("c", 0)}
	for _, tc := range []struct {
		name  string
		ops   []histOp
		limit int64
		ok    bool
	}{
		{"grant, release, grant", []histOp{acq(0, "a", 10, 11, 5), rel(0, "a", 12, 13, 5, 0), acq(1, "b", 14, 15, 7)}, 0, true},
		{"two holders", []histOp{acq(0, "a", 10, 11, 5), acq(1, "b", 14, 15, 7)}, 0, false},
		{"token not increasing", []histOp{acq(0, "a", 10, 11, 5), rel(0, "a", 12, 13, 5, 0), acq(1, "b", 14, 15, 5)}, 0, false},
		{"handed over after the holder's TTL", []histOp{acq(0, "a", 10, 11, 5), acq(1, "b", 1200, 1201, 7)}, 0, true},
		{"handed over before the holder's TTL", []histOp{acq(0, "a", 10, 11, 5), acq(1, "b", 900, 901, 7)}, 0, false},
		{"handed over while the holder renews", []histOp{acq(0, "a", 10, 11, 5), hb("a", 800), acq(1, "b", 1200, 1201, 7)}, 0, false},
		{"NOSESSION before the TTL", []histOp{acq(0, "a", 10, 11, 5), {Kind: "release", Lock: "l", Session: "a", Token: 5, Err: "NOSESSION", Outcome: outOK, Call: ms(500), Return: ms(501)}}, 0, false},
		{"NOSESSION after the TTL", []histOp{acq(0, "a", 10, 11, 5), {Kind: "release", Lock: "l", Session: "a", Token: 5, Err: "NOSESSION", Outcome: outOK, Call: ms(1500), Return: ms(1501)}}, 0, true},
		{"killed holder", []histOp{acq(0, "a", 10, 11, 5), {Kind: "kill", Session: "a", Outcome: outOK, Call: ms(20), Return: ms(21)}, acq(1, "b", 30, 31, 7)}, 0, true},
		{"null while free", []histOp{{Kind: "acquire", Lock: "l", Session: "a", Null: true, Outcome: outOK, Call: ms(10), Return: ms(11)}}, 0, false},
		{"unknown grant explains a null", []histOp{
			{Kind: "acquire", Lock: "l", Session: "a", Outcome: outUnknown, Call: ms(10), Return: ms(11)},
			{Client: 1, Kind: "acquire", Lock: "l", Session: "b", Null: true, Outcome: outOK, Call: ms(20), Return: ms(21)}}, 0, true},
		{"stale fence read", []histOp{acq(0, "a", 10, 11, 5), rel(0, "a", 12, 13, 5, 0), acq(1, "b", 14, 15, 7),
			{Client: 2, Kind: "fence", Lock: "l", Token: 5, Outcome: outOK, Call: ms(16), Return: ms(17)}}, 0, false},
		{"reentrant within LIMIT", []histOp{acq(0, "a", 10, 11, 5), acq(0, "a", 12, 13, 5), rel(0, "a", 14, 15, 5, 1), rel(0, "a", 16, 17, 5, 0)}, 2, true},
		{"release of a double hold leaves one", []histOp{acq(0, "a", 10, 11, 5), rel(0, "a", 14, 15, 5, 1)}, 0, false},
		{"release by a non-holder accepted", []histOp{acq(0, "a", 10, 11, 5), rel(1, "b", 12, 13, 5, 0)}, 0, false},
		// A FLOCK that waits is queued in the state machine: its client may
		// give up (an unknown outcome) before the holder's session ends and
		// the wait is granted (TestChaos/mutex/0, testdata/chaos-failures/
		// 2026-11-27-mutex0: the model wanted the holder over by the
		// unknown FLOCK's return).
		{"unknown wait granted after its client gave up", []histOp{acq(0, "a", 10, 11, 5), unknownAcq(1, "b", 500, 600),
			fenceRead(2, 900, 901, 5), fenceRead(2, 1200, 1201, 7)}, 0, true},
		{"unknown wait granted while the holder renews", []histOp{acq(0, "a", 10, 11, 5), unknownAcq(1, "b", 500, 600),
			hb("a", 800), fenceRead(2, 1200, 1201, 7)}, 0, false},
		{"unknown wait granted once the renewals stop", []histOp{acq(0, "a", 10, 11, 5), unknownAcq(1, "b", 500, 600),
			hb("a", 800), fenceRead(2, 1900, 1901, 7)}, 0, true},
		{"unknown waits: a second one seen before the first holder ended", []histOp{acq(0, "a", 10, 11, 5), unknownAcq(1, "b", 500, 600),
			unknownAcq(3, "c", 500, 600), hb("a", 800), fenceRead(2, 1200, 1201, 7)}, 0, false},
		// c's wait may have been granted from a's end directly: b, renewing,
		// need not have held and ended.
		{"unknown waits: the read explained without the renewing one", []histOp{acq(0, "a", 10, 11, 5), unknownAcq(1, "b", 500, 600),
			unknownAcq(3, "c", 500, 600), hb("b", 1100), fenceRead(2, 1200, 1201, 7)}, 0, true},
	} {
		if got := linearizable(append(append([]histOp(nil), base...), tc.ops...), tc.limit); got != tc.ok {
			t.Errorf("%s: linearizable = %v, want %v", tc.name, got, tc.ok)
		}
	}
}

func TestCheckTokens(t *testing.T) {
	t.Parallel()
	ok := []histOp{acq(0, "a", 10, 11, 5), acq(0, "a", 12, 13, 5), acq(1, "b", 20, 21, 9)}
	if bad := checkTokens(ok); len(bad) != 0 {
		t.Errorf("increasing tokens flagged: %v", bad)
	}
	if bad := checkTokens(append(ok, acq(2, "c", 30, 31, 9))); len(bad) != 1 {
		t.Errorf("a repeated token of another session not flagged: %v", bad)
	}
}

func TestFencedStore(t *testing.T) {
	t.Parallel()
	f, c := &fencedStore{check: true}, &fencedStore{}
	// Holder 5 reads, stalls; holder 9 reads and writes; 5 wakes and writes.
	for _, s := range []*fencedStore{f, c} {
		v5, _ := s.read(5, "a")
		v9, _ := s.read(9, "b")
		s.write(9, "b", v9+1)
		s.write(5, "a", v5+1)
	}
	if f.anomalies() != 0 || f.rejected != 1 {
		t.Errorf("fenced store: %d anomalies, %d rejected; want 0 and 1", f.anomalies(), f.rejected)
	}
	if c.anomalies() != 1 {
		t.Errorf("control store: %d anomalies, want 1 (the lost increment)", c.anomalies())
	}
}

// TestKeyLockModel: the SET NX PX model with a 1 s PX. Values a and b are
// two acquisitions.
func TestKeyLockModel(t *testing.T) {
	t.Parallel()
	set := func(client int, v string, call, ret int64, null bool) histOp {
		return histOp{Client: client, Kind: "set", Lock: "k", Session: v, TTL: 1000, Null: null, Outcome: outOK, Call: ms(call), Return: ms(ret)}
	}
	tok := func(client int, v string, call, ret, token int64) histOp {
		return histOp{Client: client, Kind: "token", Lock: "k", Session: v, Token: token, Null: token == 0, Outcome: outOK, Call: ms(call), Return: ms(ret)}
	}
	unset := func(client int, v string, call, ret, n int64) histOp {
		return histOp{Client: client, Kind: "unset", Lock: "k", Session: v, Count: n, Outcome: outOK, Call: ms(call), Return: ms(ret)}
	}
	fence := func(client int, call, ret, token int64) histOp {
		return histOp{Client: client, Kind: "fence", Lock: "k", Token: token, Null: token == 0, Outcome: outOK, Call: ms(call), Return: ms(ret)}
	}
	for _, tc := range []struct {
		name string
		ops  []histOp
		ok   bool
	}{
		{"set, token, release, set", []histOp{set(0, "a", 10, 11, false), tok(0, "a", 12, 13, 5), unset(0, "a", 14, 15, 1),
			set(1, "b", 16, 17, false), tok(1, "b", 18, 19, 8)}, true},
		{"two holders", []histOp{set(0, "a", 10, 11, false), set(1, "b", 20, 21, false)}, false},
		{"second set after PX", []histOp{set(0, "a", 10, 11, false), set(1, "b", 1100, 1101, false)}, true},
		{"expired before PX", []histOp{set(0, "a", 10, 11, false), fence(1, 500, 501, 0)}, false},
		{"token not increasing", []histOp{set(0, "a", 10, 11, false), tok(0, "a", 12, 13, 5), unset(0, "a", 14, 15, 1),
			set(1, "b", 16, 17, false), tok(1, "b", 18, 19, 5)}, false},
		{"token to a non-holder", []histOp{set(0, "a", 10, 11, false), tok(1, "b", 12, 13, 5)}, false},
		{"release of another's key", []histOp{set(0, "a", 10, 11, false), unset(1, "b", 12, 13, 1)}, false},
		{"null set on a free key", []histOp{set(0, "a", 10, 11, true)}, false},
		{"unknown set explains a null", []histOp{{Kind: "set", Lock: "k", Session: "a", TTL: 1000, Outcome: outUnknown, Call: ms(10), Return: ms(11)},
			set(1, "b", 20, 21, true)}, true},
		{"stale fence read", []histOp{set(0, "a", 10, 11, false), tok(0, "a", 12, 13, 5), unset(0, "a", 14, 15, 1),
			set(1, "b", 16, 17, false), tok(1, "b", 18, 19, 8), fence(2, 20, 21, 5)}, false},
		// An unknown SET may land any time after its call, but not before the
		// key it replaced expired: the next answered read bounds it.
		{"unknown set lands after the PX", []histOp{set(0, "a", 10, 11, false), tok(0, "a", 12, 13, 5),
			{Client: 1, Kind: "set", Lock: "k", Session: "b", TTL: 1000, Outcome: outUnknown, Call: ms(500), Return: ms(600)},
			fence(2, 1100, 1101, 9)}, true},
		{"unknown set lands before the PX", []histOp{set(0, "a", 10, 11, false), tok(0, "a", 12, 13, 5),
			{Client: 1, Kind: "set", Lock: "k", Session: "b", TTL: 1000, Outcome: outUnknown, Call: ms(500), Return: ms(600)},
			fence(2, 700, 701, 9)}, false},
	} {
		ok := true
		model := keyLockModel(newKeyBounds(tc.ops))
		for _, pops := range keyOperations(tc.ops) {
			ok = ok && porcupine.CheckOperationsTimeout(model, pops, 10*time.Second) == porcupine.Ok
		}
		if ok != tc.ok {
			t.Errorf("%s: linearizable = %v, want %v", tc.name, ok, tc.ok)
		}
	}
	// Tokens read by the token script are checked like grants.
	if bad := checkTokens([]histOp{tok(0, "a", 12, 13, 5), tok(1, "b", 18, 19, 5)}); len(bad) != 1 {
		t.Errorf("a repeated token of another acquisition not flagged: %v", bad)
	}
}
