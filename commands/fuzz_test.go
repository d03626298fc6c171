package commands

import (
	"bytes"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// fuzzSeeds are command lines of the table tests, joined with NUL bytes
// (the fuzz target's argument separator).
var fuzzSeeds = []string{
	"FLOCK l s", "FLOCK l s OWNER t WAIT 100 LIMIT 2 REQ r1", "flock l s req r1 limit 1 wait 0 owner t",
	"FLOCK l s OWNER", "FLOCK l s WAIT -1", "FLOCK l s WAIT +5", "FLOCK l s WAIT 9223372036854775808",
	"FLOCK l s FOO 1", "FUNLOCK l s OWNER t FENCE 7 REQ r", "FUNLOCK l s FENCE 0", "FUNLOCK l s WAIT 1",
	"FENCE l", "FENCE l s OWNER t", "FENCE l s OWNER", "SESSION.OPEN", "SESSION.OPEN TTL 500 NAME n",
	"SESSION.OPEN TTL 0", "SESSION.OPEN TTL", "LOCK.FORCEUNLOCK l 1", "LOCK.FORCEUNLOCK l x",
	"lock.info l", "lock.info", "x a", "PING", "hello 3 SETNAME n", "client SETNAME n",
	"SET k v NX PX 10 GET", "SET k v EX 0", "SET k v KEEPTTL EX 1", "PEXPIRE k 1 NX XX", "EXPIRE k 9223372036854776",
	"GETRANGE k -1 5", "HINCRBY k f x", "DELEX k IFEQ v", "LPOP k -1", "HSET k f v g",
	"SCAN 0", "SCAN 0 MATCH k* COUNT 100 TYPE string", "SCAN -1 COUNT 0", "SCAN 18446744073709551616",
	"SCAN +7 count 9223372036854775807", "SCAN x", "SCAN 0 TYPE", "scan 1 match [a-",
	"SETEX k 9223372036854776 v", "PSETEX k 0 v", "GETEX k EX 1 ex 2", "GETEX k PERSIST EX 1", "GETEX k PXAT abc",
	"INCRBY k -9223372036854775808", "DECRBY k -9223372036854775808", "SETRANGE k -1 v", "SETRANGE k 536870912 v",
	"SETBIT k 7 1", "SETBIT k 4294967295 0", "SETBIT k 4294967296 1", "SETBIT k -1 1", "SETBIT k 0 2", "GETBIT k 01",
	"BITCOUNT k", "BITCOUNT k 0 -1 BIT", "BITCOUNT k -1 -2 FOO", "BITCOUNT k 0", "BITPOS k 1 2 -1 byte", "BITPOS k 2",
	"BITPOS k 0 x", "BITPOS k 1 0 1 BIT x", "LCS a b IDX MINMATCHLEN -5 WITHMATCHLEN", "LCS a b LEN IDX", "LCS a b MINMATCHLEN",
	"RPOP k 3", "RPOP k 1 2", "HMSET k f v g",
	"LMOVE a b LEFT right", "LMOVE a a up LEFT", "LMOVE a b LEFT RIGHTX", "BLMOVE a b RIGHT LEFT 0.5",
	"BLMOVE a b left left -1", "BLMOVE a b left left nan", "blmove a b x left x", "RPOPLPUSH a b",
	"BRPOPLPUSH a b 1e400", "BRPOPLPUSH a b 0x10", "BRPOPLPUSH a b",
}

// FuzzParse splits bytes into arguments on NUL, checks them against the
// table and runs every parser whose arity they fit. Nothing may panic,
// every error must be one of the package's and fit on a RESP error line,
// and a parsed FLOCK or FUNLOCK rendered back to arguments must parse to
// the same request.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(strings.ReplaceAll(s, " ", "\x00")))
	}
	f.Add([]byte("FLOCK\x00\x00\x00OWNER\x00\x00WAIT\x000"))
	f.Add([]byte("flock\x00l\x00s\x00\r\n\x00x"))
	tab := New()
	f.Fuzz(func(t *testing.T, data []byte) {
		a := bytes.Split(data, []byte{0})
		spec, err := tab.Check(a)
		switch {
		case err == nil:
			if !spec.CheckArity(len(a)) {
				t.Fatalf("Check accepted %d args for %s (arity %d)", len(a), spec.Name, spec.Arity)
			}
			if !strings.EqualFold(spec.Name, string(a[0])) {
				t.Fatalf("Check(%q) found %s", a[0], spec.Name)
			}
		case errors.Is(err, ErrUnknown):
			if _, ok := tab.Lookup(a[0]); ok {
				t.Fatalf("Check(%q): unknown, but Lookup finds it", a[0])
			}
			checkMsg(t, err)
		case errors.Is(err, ErrArity):
			checkMsg(t, err)
		default:
			t.Fatalf("Check: unexpected error %v", err)
		}

		// Each parser runs on any arguments that fit its command's arity,
		// whatever the name.
		fits := func(name string) bool {
			s, _ := tab.Lookup([]byte(name))
			return s.CheckArity(len(a))
		}
		if fits("flock") {
			r, err := ParseFlock(a)
			checkParseErr(t, err)
			if err == nil {
				if r.Wait < NoWait || r.Limit < 0 {
					t.Fatalf("FLOCK parsed to %+v", r)
				}
				again, err := ParseFlock(renderFlock(r))
				if err != nil || !reflect.DeepEqual(again, r) {
					t.Fatalf("FLOCK %+v rendered and parsed again: %+v, %v", r, again, err)
				}
			}
		}
		if fits("funlock") {
			r, err := ParseFunlock(a)
			checkParseErr(t, err)
			if err == nil {
				if r.Fence < 0 {
					t.Fatalf("FUNLOCK parsed to %+v", r)
				}
				again, err := ParseFunlock(renderFunlock(r))
				if err != nil || !reflect.DeepEqual(again, r) {
					t.Fatalf("FUNLOCK %+v rendered and parsed again: %+v, %v", r, again, err)
				}
			}
		}
		if fits("fence") {
			r, err := ParseFence(a)
			checkParseErr(t, err)
			ifeq := len(a) == 4 && strings.EqualFold(string(a[2]), "IFEQ")
			if err == nil && (r.IfEq != ifeq || r.IfEq && (r.WithOwner || r.Value != string(a[3])) || !r.IfEq && r.WithOwner != (len(a) > 2)) {
				t.Fatalf("FENCE with %d args parsed to %+v", len(a), r)
			}
		}
		if fits("session.open") {
			r, err := ParseSessionOpen(a)
			checkParseErr(t, err)
			if err == nil && r.TTL < 0 {
				t.Fatalf("SESSION.OPEN parsed to %+v", r)
			}
		}
		if fits("lock.forceunlock") {
			r, err := ParseForceUnlock(a)
			checkParseErr(t, err)
			if err == nil && r.Token <= 0 {
				t.Fatalf("LOCK.FORCEUNLOCK parsed to %+v", r)
			}
		}
		if fits("set") {
			r, err := ParseSet(a)
			checkParseErr(t, err)
			if err == nil && (r.NX && r.XX || (r.Expire != SetNoExpire && r.Expire != SetKeepTTL) != (r.Millis > 0)) {
				t.Fatalf("SET parsed to %+v", r)
			}
		}
		if len(a) >= 3 {
			// CLIENT TRACKING (any name): options left to right, each
			// accepted one as given, and the prefixes within their bounds.
			exists := func(id int64) bool { return id%2 == 1 }
			r, err := ParseClientTracking(a, exists)
			for _, e := range []error{ErrSyntax, ErrNotInteger, ErrRedirectTwice, ErrRedirectMissing, ErrTooManyPrefixes} {
				if errors.Is(err, e) {
					err = nil
					break
				}
			}
			if err != nil {
				t.Fatalf("CLIENT TRACKING: unexpected error %v", err)
			}
			size := 0
			for _, p := range r.Prefixes {
				size += len(p)
			}
			if r.Redirect != 0 && !exists(r.Redirect) || len(r.Prefixes) > MaxTrackingPrefixes || size > MaxTrackingPrefixBytes {
				t.Fatalf("CLIENT TRACKING parsed to %+v", r)
			}
			if err := r.TrackingConflict(false, TrackingMode{}); err == nil && r.On && (len(r.Prefixes) > 0 && !r.Mode.BCast || r.Mode.OptIn && r.Mode.OptOut) {
				t.Fatalf("CLIENT TRACKING %+v passed its checks", r)
			}
			_ = PrefixOverlap(nil, r.Prefixes)
		}
		if fits("pexpire") {
			_, err := ParseExpire(a)
			checkParseErr(t, err)
		}
		if fits("setex") {
			r, err := ParseSetEx(a)
			checkParseErr(t, err)
			if err == nil && (r.Millis <= 0 || r.Expire != SetEX && r.Expire != SetPX) {
				t.Fatalf("SETEX parsed to %+v", r)
			}
		}
		if fits("getex") {
			r, err := ParseGetEx(a)
			checkParseErr(t, err)
			checkParseErr(t, r.Invalid)
			if err == nil && r.Invalid == nil && (r.Persist && r.Expire != SetNoExpire || (r.Expire != SetNoExpire) != (r.Millis > 0)) {
				t.Fatalf("GETEX parsed to %+v", r)
			}
		}
		if fits("incrby") {
			_, err := ParseIncrBy(a)
			checkParseErr(t, err)
		}
		if fits("setrange") {
			r, err := ParseSetRange(a)
			checkParseErr(t, err)
			if err == nil && r.Offset < 0 {
				t.Fatalf("SETRANGE parsed to %+v", r)
			}
		}
		if fits("getrange") {
			_, err := ParseGetRange(a)
			checkParseErr(t, err)
		}
		if fits("hincrby") {
			_, err := ParseHIncrBy(a)
			checkParseErr(t, err)
		}
		if fits("delex") {
			_, err := ParseDelEx(a)
			checkParseErr(t, err)
		}
		if fits("lpop") {
			_, err := ParseCount(a)
			checkParseErr(t, err)
		}
		// The list moves, each under its own name: the sides are what
		// was sent, RPOPLPUSH's are RIGHT LEFT, a timeout only when blocking.
		for _, name := range []string{"lmove", "blmove", "rpoplpush", "brpoplpush"} {
			if !fits(name) {
				continue
			}
			b := append([][]byte{[]byte(name)}, a[1:]...)
			r, err := ParseListMove(b)
			checkParseErr(t, err)
			if err != nil {
				continue
			}
			named := len(b) >= 5
			if r.Src != string(a[1]) || r.Dst != string(a[2]) || r.Timeout < 0 || name[0] != 'b' && r.Timeout != 0 ||
				named && (r.FromTail != strings.EqualFold(string(a[3]), "right") || r.ToTail != strings.EqualFold(string(a[4]), "right")) ||
				!named && (!r.FromTail || r.ToTail) {
				t.Fatalf("%s %q parsed to %+v", name, a[1:], r)
			}
		}
		// The bit commands and LCS: Redis's errors, and what parses is in
		// range.
		bitErrs := []error{ErrBitOffset, ErrBitValue, ErrBitArg, ErrLCSLenIdx}
		if fits("setbit") {
			r, err := ParseSetBit(a)
			checkParseErr(t, err, bitErrs...)
			if err == nil && (r.Offset < 0 || r.Offset>>3 >= MaxBitString) {
				t.Fatalf("SETBIT parsed to %+v", r)
			}
		}
		if fits("getbit") {
			_, err := ParseBitOffset(a[2])
			checkParseErr(t, err, bitErrs...)
		}
		if fits("bitcount") {
			r, err := ParseBitCount(a)
			checkParseErr(t, err, bitErrs...)
			if err == nil && r.Ranged != (len(a) > 2) && !r.Empty {
				t.Fatalf("BITCOUNT %q parsed to %+v", a, r)
			}
		}
		if fits("bitpos") {
			r, err := ParseBitPos(a)
			checkParseErr(t, err, bitErrs...)
			checkParseErr(t, r.Invalid, bitErrs...)
			if err == nil && r.Invalid == nil && (r.Range.Ranged != (len(a) > 3) || r.Range.EndGiven != (len(a) > 4)) {
				t.Fatalf("BITPOS %q parsed to %+v", a, r)
			}
		}
		if fits("lcs") {
			r, err := ParseLCS(a)
			checkParseErr(t, err, bitErrs...)
			if err == nil && (r.Len && r.Idx || r.MinMatchLen < 0) {
				t.Fatalf("LCS %q parsed to %+v", a, r)
			}
		}
		if fits("eval") {
			r, err := ParseEval(a)
			checkParseErr(t, err)
			if err == nil && len(r.Keys)+len(r.Argv) != len(a)-3 {
				t.Fatalf("EVAL with %d args parsed to %d keys and %d args", len(a), len(r.Keys), len(r.Argv))
			}
		}
		if fits("blpop") {
			ms, err := ParseBlockTimeout(a[len(a)-1])
			checkParseErr(t, err)
			if err == nil && ms < 0 {
				t.Fatalf("BLPOP timeout %q parsed to %d ms", a[len(a)-1], ms)
			}
		}
		// The whole-key commands: their errors are Redis's fixed ones, and a
		// COPY that parses names two different keys.
		if fits("copy") {
			r, err := ParseCopy(a)
			checkParseErr(t, err, ErrDBRange, ErrSameObject, ErrIntRange)
			if err == nil && r.Src == r.Dst {
				t.Fatalf("COPY %q parsed to %+v", a, r)
			}
		}
		if fits("move") {
			if err := ParseMove(a); err == nil {
				t.Fatalf("MOVE %q parsed: one database has nowhere to move to", a)
			} else {
				checkParseErr(t, err, ErrDBRange, ErrSameObject, ErrIntRange)
			}
		}
		if fits("swapdb") {
			checkParseErr(t, ParseSwapDB(a), ErrDBRange, ErrFirstDB, ErrSecondDB)
		}
		if fits("flushall") {
			checkParseErr(t, ParseFlush(a))
		}
		if fits("hset") {
			_, err := ParsePairs(a, 2)
			if err != nil && !errors.Is(err, ErrArity) {
				t.Fatalf("ParsePairs: %v", err)
			}
		}
		if fits("scan") {
			r, err := ParseScan(a)
			if err != nil && !errors.Is(err, ErrInvalidCursor) {
				checkParseErr(t, err)
			}
			if err == nil && r.Count < 1 {
				t.Fatalf("SCAN parsed to %+v", r)
			}
			// A cursor written back in decimal reads as itself.
			if err == nil {
				if c, ok := ParseCursor([]byte(strconv.FormatUint(r.Cursor, 10))); !ok || c != r.Cursor {
					t.Fatalf("cursor %d read back as %d, %v", r.Cursor, c, ok)
				}
			}
		}
		if len(a) > 1 {
			if _, err := ParseProto(a[1]); err != nil && !errors.Is(err, ErrNotInteger) {
				t.Fatalf("ParseProto: %v", err)
			}
		}
	})
}

func checkMsg(t *testing.T, err error) {
	t.Helper()
	if strings.ContainsAny(err.Error(), "\r\n") {
		t.Fatalf("error %q does not fit on one RESP line", err)
	}
}

func checkParseErr(t *testing.T, err error, also ...error) {
	t.Helper()
	if err == nil {
		return
	}
	known := false
	for _, e := range append(also, ErrSyntax, ErrNotInteger, ErrInvalidExpire, ErrExpireNX, ErrExpireGTLT, ErrUnsupportedOption, ErrOutOfRange,
		ErrNumKeysTooLarge, ErrNumKeysNegative, ErrTimeoutNotFloat, ErrTimeoutNegative, ErrDecrOverflow, ErrOffsetRange, ErrArity) {
		known = known || errors.Is(err, e)
	}
	if !known {
		t.Fatalf("parse error %v is neither ErrSyntax nor ErrNotInteger", err)
	}
	checkMsg(t, err)
}

// renderFlock writes r back as FLOCK arguments, options in a fixed order
// and upper case.
func renderFlock(r Flock) [][]byte {
	a := []string{"FLOCK", r.Lock, r.Session, "OWNER", r.Owner, "LIMIT", strconv.FormatInt(r.Limit, 10), "REQ", r.Req}
	if r.Wait != NoWait {
		a = append(a, "WAIT", strconv.FormatInt(r.Wait, 10))
	}
	return toArgs(a)
}

func renderFunlock(r Funlock) [][]byte {
	a := []string{"FUNLOCK", r.Lock, r.Session, "REQ", r.Req, "OWNER", r.Owner}
	if r.Fence != 0 {
		a = append(a, "FENCE", strconv.FormatInt(r.Fence, 10))
	}
	return toArgs(a)
}

func toArgs(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}
