package test

import (
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// The checkers must catch the double grant (one Raft entry
// granted lock0 to two sessions with one token) whatever the timing, and
// must not flag what is legal: a session's reentrant holds and REQ replays
// answer the token it holds. Hand-written histories, no servers; ms times.

// TestCheckTokensSharedToken: the token checker on overlapping grants.
func TestCheckTokensSharedToken(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ops  []histOp
		bad  int // problems reported
		want string
	}{
		// A recorded double grant: c2 and c5 both granted 2139,
		// their FLOCKs overlapping.
		{"two sessions, one token, overlapping", []histOp{acq(2, "c2", 2000, 3020, 2139), acq(5, "c5", 2010, 3016, 2139)},
			1, "token another session was granted"},
		{"two sessions, one token, one inside the other", []histOp{acq(2, "a", 100, 400, 7), acq(5, "b", 200, 300, 7)},
			1, "token another session was granted"},
		{"two sessions, one token, one after the other", []histOp{acq(2, "a", 100, 110, 7), acq(5, "b", 200, 210, 7)},
			1, "token another session was granted"},
		{"after an earlier grant too", []histOp{acq(0, "a", 10, 11, 5), rel(0, "a", 12, 13, 5, 0),
			acq(1, "b", 20, 40, 9), acq(2, "c", 21, 41, 9)}, 1, "token 9 granted to session b"},
		{"three sessions, one token", []histOp{acq(0, "a", 10, 30, 9), acq(1, "b", 11, 31, 9), acq(2, "c", 12, 32, 9)},
			1, "2 grants with a token another session"},
		{"lower token after a higher one returned", []histOp{acq(0, "a", 10, 11, 9), acq(1, "b", 20, 21, 5)},
			1, "token below an earlier one"},
		// Legal: a reentrant hold answers the token the session holds,
		// overlapping or not; so does a replay of its REQ.
		{"reentrant hold, overlapping", []histOp{acq(0, "a", 10, 20, 5), acq(0, "a", 15, 25, 5)}, 0, ""},
		{"reentrant hold, after", []histOp{acq(0, "a", 10, 11, 5), acq(0, "a", 12, 13, 5), rel(0, "a", 14, 15, 5, 1),
			rel(0, "a", 16, 17, 5, 0), acq(1, "b", 20, 21, 9), acq(1, "b", 22, 23, 9)}, 0, ""},
		{"overlapping grants, increasing tokens", []histOp{acq(0, "a", 10, 30, 5), acq(1, "b", 11, 31, 6)}, 0, ""},
		// One token on two locks is one entry granting both: legal.
		{"same token, different locks", []histOp{acq(0, "a", 10, 30, 5), {Client: 1, Kind: "acquire", Lock: "m", Session: "b",
			Token: 5, Outcome: outOK, Call: ms(11), Return: ms(31)}}, 0, ""},
		// Only answered grants count: a null, an error, an unknown.
		{"not grants", []histOp{acq(0, "a", 10, 30, 5),
			{Client: 1, Kind: "acquire", Lock: "l", Session: "b", Null: true, Outcome: outOK, Call: ms(11), Return: ms(31)},
			{Client: 2, Kind: "acquire", Lock: "l", Session: "c", Token: 5, Err: "NOSESSION", Outcome: outOK, Call: ms(12), Return: ms(32)},
			{Client: 3, Kind: "acquire", Lock: "l", Session: "d", Token: 5, Outcome: outUnknown, Call: ms(13), Return: ms(33)}}, 0, ""},
	} {
		bad := checkTokens(tc.ops)
		if len(bad) != tc.bad {
			t.Errorf("%s: %d problems, want %d: %v", tc.name, len(bad), tc.bad, bad)
			continue
		}
		if tc.bad > 0 && !strings.Contains(bad[0], tc.want) {
			t.Errorf("%s: %q does not say %q", tc.name, bad[0], tc.want)
		}
	}
	// The SET NX path: two acquisitions (values) given one token by the
	// token script, overlapping; one acquisition reading its token twice.
	tok := func(client int, v string, call, ret, token int64) histOp {
		return histOp{Client: client, Kind: "token", Lock: "k", Session: v, Token: token, Outcome: outOK, Call: ms(call), Return: ms(ret)}
	}
	if bad := checkTokens([]histOp{tok(0, "a", 10, 30, 5), tok(1, "b", 11, 31, 5)}); len(bad) != 1 {
		t.Errorf("SET NX: one token of two overlapping acquisitions: %v", bad)
	}
	if bad := checkTokens([]histOp{tok(0, "a", 10, 30, 5), tok(0, "a", 11, 31, 5)}); len(bad) != 0 {
		t.Errorf("SET NX: one acquisition's token read twice flagged: %v", bad)
	}
}

// TestFencedStoreEqualToken: the fenced store refuses a token equal to the
// highest it has seen when another holder used it first, and reports it;
// the holder that used it may go on using it.
func TestFencedStoreEqualToken(t *testing.T) {
	t.Parallel()
	// A double grant once seen: c2 and c5 both granted 2139; c2 reads and writes, then c5.
	f, c := &fencedStore{check: true}, &fencedStore{}
	for _, s := range []*fencedStore{f, c} {
		v2, _ := s.read(2139, "c2")
		v5, _ := s.read(2139, "c5")
		s.write(2139, "c2", v2+1)
		s.write(2139, "c5", v5+1)
	}
	if got := f.conflicted(); len(got) != 2 || !strings.Contains(got[0], "token 2139 by c5") {
		t.Errorf("fenced store conflicts: %q; want c5's read and write refused", got)
	}
	if f.anomalies() != 0 || f.value != 1 || f.rejected != 0 {
		t.Errorf("fenced store: %d anomalies, value %d, %d stale refused; want 0, 1, 0", f.anomalies(), f.value, f.rejected)
	}
	if c.anomalies() != 1 || len(c.conflicted()) != 0 {
		t.Errorf("control store: %d anomalies, %d conflicts; want 1 (the lost increment), 0", c.anomalies(), len(c.conflicted()))
	}

	// Interleaved: c5 reads first, then c2 reads, and c5 writes.
	s := &fencedStore{check: true}
	if _, ok := s.read(2139, "c5"); !ok {
		t.Fatal("first read refused")
	}
	if _, ok := s.read(2139, "c2"); ok {
		t.Error("the second holder's read of the same token accepted")
	}
	if !s.write(2139, "c5", 1) {
		t.Error("the first holder's write refused")
	}
	if len(s.conflicted()) != 1 {
		t.Errorf("conflicts %q, want 1", s.conflicted())
	}

	// Legal: one holder uses its token again and again (a reentrant hold,
	// a second critical section); a higher token takes over; a lower one
	// is stale, refused and not a conflict.
	s = &fencedStore{check: true}
	for i, step := range []struct {
		token  int64
		holder string
		ok     bool
	}{{5, "a", true}, {5, "a", true}, {9, "b", true}, {9, "b", true}, {5, "a", false}, {12, "a", true}, {9, "b", false}} {
		if got := s.write(step.token, step.holder, int64(i+1)); got != step.ok {
			t.Errorf("step %d: write(%d, %s) = %v, want %v", i, step.token, step.holder, got, step.ok)
		}
	}
	if len(s.conflicted()) != 0 || s.rejected != 2 {
		t.Errorf("legal use: conflicts %q, %d stale refused; want none and 2", s.conflicted(), s.rejected)
	}
}

// TestNoSessionMayHaveActed: the history of TestChaos/reentrant/0 on
// 2026-11-25 (seed 1795582095486055310) in small. c5's FLOCK … WAIT was
// granted token 9025, but the grant's answer never reached it; the answer
// it got, after its session had expired, was -NOSESSION (a REQ retry finds
// the session gone, and so does a wait resolved from a snapshot). The FENCE
// that read 9025 is explained only if a request answered -NOSESSION may have
// acted before its answer (not before it was sent), and -NOSESSION still
// needs a session that may have expired.
func TestNoSessionMayHaveActed(t *testing.T) {
	t.Parallel()
	ms := func(v int64) int64 { return v * int64(time.Millisecond) }
	history := func(acquireReturn, fenceCall, heartbeat int64) []histOp {
		return []histOp{
			{Client: 5, Kind: "open", Session: "c5", TTL: 1500, Outcome: outOK, Call: ms(0), Return: ms(1)},
			{Client: 2, Kind: "open", Session: "c2", TTL: 1500, Outcome: outOK, Call: ms(0), Return: ms(1)},
			{Client: 5, Kind: "heartbeat", Session: "c5", Outcome: outOK, Call: ms(heartbeat), Return: ms(heartbeat + 1)},
			{Client: 2, Kind: "acquire", Lock: "l", Session: "c2", Token: 9023, Outcome: outOK, Call: ms(10), Return: ms(11)},
			{Client: 5, Kind: "acquire", Lock: "l", Session: "c5", Err: "NOSESSION", Outcome: outOK, Call: ms(20), Return: ms(acquireReturn)},
			{Client: 2, Kind: "release", Lock: "l", Session: "c2", Token: 9023, Outcome: outOK, Call: ms(30), Return: ms(31)},
			{Client: 3, Kind: "fence", Lock: "l", Token: 9025, Outcome: outOK, Call: ms(fenceCall), Return: ms(fenceCall + 1)},
		}
	}
	lin := func(ops []histOp) bool {
		return porcupine.CheckOperations(lockModel(newSessionBounds(ops)), lockOperations(ops, 0)["l"])
	}
	if !lin(history(3000, 1000, 5)) {
		t.Error("granted, answer lost, answered -NOSESSION after the expiry: not linearizable")
	}
	if lin(history(3000, 15, 5)) {
		t.Error("a FENCE before the request was sent reads the token it may have been granted")
	}
	if lin(history(3000, 1000, 2000)) {
		t.Error("-NOSESSION 1 s after a renewal of a 1.5 s session passes")
	}
}
