package lockstate

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func sampleEntries() []Entry {
	return []Entry{
		{Op: OpTick},
		{Op: OpTick, Time: 1},
		{Op: OpSessionOpen, Time: 1700000000000, Session: "0123456789abcdef0123456789abcdef", Name: "worker-1", TTL: 10000, Created: 1700000000123},
		{Op: OpFlock, Time: 5, Session: "s", Lock: "orders/42", Owner: "t1", Wait: NoWait, Limit: 1, Req: "req-1", WaitID: 7},
		{Op: OpFunlock, Session: "s", Lock: "l", Fence: 1 << 40, Req: "r"},
		{Op: OpCancelWait, WaitID: math.MaxUint64},
		{Op: OpForceUnlock, Lock: "\x00\xff", Fence: -1},
		{Op: OpFlock, Time: math.MinInt64, TTL: math.MaxInt64, Created: math.MinInt64, Wait: math.MaxInt64, Limit: math.MinInt64, Fence: math.MaxInt64},
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
		es = append(es, Entry{Op: Op(1 + rng.IntN(8)), Time: num(), Session: str(), Name: str(), TTL: num(),
			Created: num(), Lock: str(), Owner: str(), Wait: num(), Limit: num(), Req: str(), Fence: num(), WaitID: rng.Uint64() >> rng.IntN(64)})
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
		if got != e {
			t.Fatalf("round trip: %+v became %+v", e, got)
		}
		// Every strict prefix is truncated, every extension has trailing bytes.
		for i := range b {
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
		"op 9":            with(1, 9),
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
	for op := OpTick; op <= OpForceUnlock; op++ {
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
