package lockstate

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

func sampleEntries() []Entry {
	return []Entry{
		{Op: OpTick},
		{Op: OpTick, Time: 1},
		{Op: OpTick, Time: 2, Wall: 1764000000000},
		{Op: OpExec, Time: 3, Wall: -1, Args: []string{"SET", "k", "v", "PXAT", "9223372036854775807"}},
		{Op: OpSessionOpen, Time: 1700000000000, Session: "0123456789abcdef0123456789abcdef", Name: "worker-1", TTL: 10000, Created: 1700000000123},
		{Op: OpFlock, Time: 5, Session: "s", Lock: "orders/42", Owner: "t1", Wait: NoWait, Limit: 1, Req: "req-1", WaitID: 7},
		{Op: OpFunlock, Session: "s", Lock: "l", Fence: 1 << 40, Req: "r"},
		{Op: OpCancelWait, WaitID: math.MaxUint64},
		{Op: OpForceUnlock, Lock: "\x00\xff", Fence: -1},
		{Op: OpFlock, Time: math.MinInt64, TTL: math.MaxInt64, Created: math.MinInt64, Wait: math.MaxInt64, Limit: math.MinInt64, Fence: math.MaxInt64},
		{Op: OpCancelWaits, Time: 9, WaitID: 3 << 32},
		{Op: OpCancelWaits, WaitID: math.MaxUint32<<32 | 17},
		{Op: OpNodeJoin, Time: 12, Node: "node-2", RaftAddr: "10.0.0.2:7000", Addr: "10.0.0.2:6380"},
		{Op: OpNodeJoin, Node: "\x00", RaftAddr: "[::1]:7000", Addr: "[::1]:6380"},
		{Op: OpNodeRemove, Time: 13, Node: "node-2"},
		{Op: OpNodeJoin, Time: 12, Node: "n3", RaftAddr: "r:1", Addr: "a:1", MaxMemory: 1 << 30, Version: 2},
		{Op: OpSetVersion, Time: 15, Wall: 1764000000000, Version: math.MaxInt64},
		{Op: OpExec, Time: 14, Args: []string{"SET", "k", "v", "PX", "100"}},
		{Op: OpExec, Args: []string{"", "\x00\xff"}},
	}
}

func TestEntryRoundTrip(t *testing.T) {
	es := sampleEntries()
	rng := rand.New(rand.NewPCG(1, 2))
	str := func() string {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return string(b)
	}
	num := func() int64 { return rng.Int64() >> rng.IntN(64) * int64(1-2*rng.IntN(2)) }
	for range 2000 {
		var args []string
		for range rng.IntN(4) {
			args = append(args, str())
		}
		es = append(es, Entry{Args: args, Op: Op(1 + rng.IntN(int(OpExec))), Time: num(), Session: str(), Name: str(), TTL: num(),
			Created: num(), Lock: str(), Owner: str(), Wait: num(), Limit: num(), Req: str(), Fence: num(), WaitID: rng.Uint64() >> rng.IntN(64),
			Node: str(), RaftAddr: str(), Addr: str()})
	}
	for _, e := range es {
		b := e.Encode([]byte("prefix"))
		if !bytes.HasPrefix(b, []byte("prefix")) {
			t.Fatal("Encode does not append")
		}
		b = b[len("prefix"):]
		got, err := DecodeEntry(b)
		if err != nil {
			t.Fatalf("%+v: %v", e, err)
		}
		if !reflect.DeepEqual(got, e) {
			t.Fatalf("round trip: %+v became %+v", e, got)
		}
		// Every strict prefix is truncated, every extension has trailing
		// bytes; except that the entry without its Args decodes, Args being
		// optional at the end.
		bare := e
		bare.Args = nil
		nBare := len(bare.Encode(nil))
		for i := range b {
			if i == nBare {
				if got, err := DecodeEntry(b[:i]); err != nil || !reflect.DeepEqual(got, bare) {
					t.Fatalf("%+v without Args: %+v, %v", e, got, err)
				}
				continue
			}
			if _, err := DecodeEntry(b[:i]); !errors.Is(err, ErrBadEntry) {
				t.Fatalf("%+v cut at %d: %v", e, i, err)
			}
		}
		if _, err := DecodeEntry(append(bytes.Clone(b), 0)); !errors.Is(err, ErrBadEntry) {
			t.Fatalf("%+v with a trailing byte: %v", e, err)
		}
	}
}

func TestDecodeEntryRejects(t *testing.T) {
	good := Entry{Op: OpFlock, Session: "s"}.Encode(nil)
	with := func(i int, c byte) []byte {
		b := bytes.Clone(good)
		b[i] = c
		return b
	}
	for name, b := range map[string][]byte{
		"empty":           nil,
		"version 0":       with(0, 0),
		"version 2":       with(0, 2),
		"op 0":            with(1, 0),
		"op 17":           with(1, 17),
		"args > rest":     append(bytes.Clone(good), 2, 0),
		"args truncated":  append(bytes.Clone(good), 1, 2, 'x'),
		"args count 0":    append(bytes.Clone(good), 0),
		"op 255":          with(1, 255),
		"padded varint":   append([]byte{1, 1, 0x80, 0x00}, good[3:]...),
		"varint overflow": append([]byte{1, 1}, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02),
		"varint 11 bytes": append([]byte{1, 1}, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00),
		// A string claiming 2^62 bytes: rejected without allocating them.
		"huge length":   append([]byte{1, 1, 0}, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40, 'x'),
		"length > rest": append([]byte{1, 1, 0, 5}, "abc"...),
	} {
		if e, err := DecodeEntry(b); !errors.Is(err, ErrBadEntry) {
			t.Errorf("%s: decoded %+v, %v", name, e, err)
		}
	}
	huge := append([]byte{1, 1, 0}, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40, 'x')
	if n := testing.AllocsPerRun(100, func() { _, _ = DecodeEntry(huge) }); n > 8 {
		t.Errorf("a hostile length costs %v allocations", n)
	}
}

func TestOpString(t *testing.T) {
	names := map[string]bool{}
	for op := OpTick; op <= OpSetVersion; op++ {
		if names[op.String()] {
			t.Errorf("op %d: name %q used twice", op, op)
		}
		names[op.String()] = true
		if s := op.String(); s == "" || s[0] == 'o' && s[1] == 'p' {
			t.Errorf("op %d has no name", op)
		}
	}
	if Op(99).String() != "op(99)" {
		t.Error(Op(99).String())
	}
}

// FuzzDecodeEntry: DecodeEntry never panics, fails only with ErrBadEntry,
// and what it accepts re-encodes to the very same bytes.
func FuzzDecodeEntry(f *testing.F) {
	for _, e := range sampleEntries() {
		f.Add(e.Encode(nil))
	}
	f.Add([]byte{})
	f.Add([]byte{1})
	f.Add([]byte{1, 5, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := DecodeEntry(b)
		if err != nil {
			if !errors.Is(err, ErrBadEntry) {
				t.Fatalf("error %v does not wrap ErrBadEntry", err)
			}
			return
		}
		if out := e.Encode(nil); !bytes.Equal(out, b) {
			t.Fatalf("%x decodes to %+v, which encodes to %x", b, e, out)
		}
	})
}

// TestEntryLayout pins the encoding: the membership fields come last, after
// WaitID, so the log format only grew at its end.
func TestEntryLayout(t *testing.T) {
	got := Entry{Op: OpNodeJoin, Node: "a", RaftAddr: "bc", Addr: "d", WaitID: 5 << 32}.Encode(nil)
	want := []byte{entryVersion1, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0x80, 0x80, 0x80, 0x80, 0x50, // WaitID 5<<32
		1, 'a', 2, 'b', 'c', 1, 'd'} // no Args: nothing

	if !bytes.Equal(got, want) {
		t.Fatalf("encoded %x, want %x", got, want)
	}
	got = Entry{Op: OpExec, Args: []string{"GET", ""}}.Encode(nil)
	want = []byte{entryVersion1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		2, 3, 'G', 'E', 'T', 0} // Args last: count, then each string
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded %x, want %x", got, want)
	}
	// Version 2: Wall after Addr, before Args.
	got = Entry{Op: OpExec, Time: 1, Wall: -2, Args: []string{"TIME"}}.Encode(nil)
	want = []byte{entryVersion2, 12, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		3, // Wall -2, zigzag
		1, 4, 'T', 'I', 'M', 'E'}
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded %x, want %x", got, want)
	}
	if _, err := DecodeEntry([]byte{entryVersion2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}); !errors.Is(err, ErrBadEntry) {
		t.Fatalf("version 2 with Wall 0 decoded: %v", err)
	}
	// Version 3: User and AsAdmin after Wall (which may be 0), before Args.
	got = Entry{Op: OpExec, User: "u", AsAdmin: true, Args: []string{"TIME"}}.Encode(nil)
	want = []byte{entryVersion3, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0,      // Wall 0
		1, 'u', // User
		1, // AsAdmin
		1, 4, 'T', 'I', 'M', 'E'}
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded %x, want %x", got, want)
	}
	if _, err := DecodeEntry([]byte{entryVersion3, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}); !errors.Is(err, ErrBadEntry) {
		t.Fatalf("version 3 with neither user nor admin decoded: %v", err)
	}
	// Version 4: MaxMemory after AsAdmin, with or without a user.
	got = Entry{Op: OpExec, MaxMemory: 100, Args: []string{"TIME"}}.Encode(nil)
	want = []byte{entryVersion4, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0,      // Wall 0
		0,      // User ""
		0,      // AsAdmin
		200, 1, // MaxMemory 100, zigzag
		1, 4, 'T', 'I', 'M', 'E'}
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded %x, want %x", got, want)
	}
	for _, mm := range []byte{0, 1} { // MaxMemory 0 and -1: not written as version 4
		if _, err := DecodeEntry([]byte{entryVersion4, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, mm}); !errors.Is(err, ErrBadEntry) {
			t.Fatalf("version 4 with MaxMemory byte %d decoded: %v", mm, err)
		}
	}
	// Version 5: Version after MaxMemory (which may be 0).
	got = Entry{Op: OpSetVersion, Version: 2}.Encode(nil)
	want = []byte{entryVersion5, 15, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0, // Wall 0
		0, // User ""
		0, // AsAdmin
		0, // MaxMemory 0
		4, // Version 2, zigzag
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded %x, want %x", got, want)
	}
	for _, v := range []byte{0, 1} { // Version 0 and -1: not written as version 5
		if _, err := DecodeEntry([]byte{entryVersion5, 15, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, v}); !errors.Is(err, ErrBadEntry) {
			t.Fatalf("version 5 with Version byte %d decoded: %v", v, err)
		}
	}
	// Version 6: a transaction's watches and commands after Version (which
	// may be 0), then Args as ever.
	got = Entry{Op: OpMulti, Watches: []Watch{{Key: "k", Index: 300, Stale: true}}, Cmds: [][]string{{"GET", "k"}}}.Encode(nil)
	want = []byte{entryVersion, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0,                     // Wall 0
		0,                     // User ""
		0,                     // AsAdmin
		0,                     // MaxMemory 0
		0,                     // Version 0
		1, 1, 'k', 0xac, 2, 1, // one watch: "k", index 300, stale
		1, 2, 3, 'G', 'E', 'T', 1, 'k', // one command of two arguments
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded %x, want %x", got, want)
	}
	if e, err := DecodeEntry(want); err != nil || !reflect.DeepEqual(e.Watches, []Watch{{Key: "k", Index: 300, Stale: true}}) || !reflect.DeepEqual(e.Cmds, [][]string{{"GET", "k"}}) {
		t.Fatalf("decoded %+v, %v", e, err)
	}
	base := want[:22]
	for name, tail := range map[string][]byte{
		"neither":        {0, 0},
		"empty command":  {0, 1, 0},
		"bad stale flag": {1, 1, 'k', 1, 2, 0},
		"count > rest":   {0, 9, 1},
		"truncated":      {1, 1, 'k'},
	} {
		if e, err := DecodeEntry(append(bytes.Clone(base), tail...)); !errors.Is(err, ErrBadEntry) {
			t.Errorf("version 6, %s: decoded %+v, %v", name, e, err)
		}
	}
	for op, v := range map[Op]byte{OpCancelWaits: 9, OpNodeJoin: 10, OpNodeRemove: 11, OpExec: 12, OpACLSetUser: 13, OpACLDelUser: 14, OpSetVersion: 15, OpMulti: 16} {
		if byte(op) != v {
			t.Errorf("%v = %d, want %d", op, op, v)
		}
	}
}
