package script

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced/reply"
)

// fuzzLib runs src with the fuzzer's input as ARGV[1] at cluster version 3
// under a small step budget: it must never panic or hang, must stay within
// the budget (Run answers the limit error when it does not), and must give
// the same reply twice (what a replicated state machine needs).
func fuzzLib(t *testing.T, src, input string) {
	watchdog := time.AfterFunc(20*time.Second, func() {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		panic(fmt.Sprintf("%q on %q hangs:\n%s", src, input, buf[:n]))
	})
	defer watchdog.Stop()
	lim := Limits{MaxSteps: 200_000, MaxCalls: 10, MaxSource: 1 << 16}
	var replies [2]reply.Value
	var steps [2]int64
	for i := range replies {
		replies[i], steps[i] = engine(lim).runSteps(src, nil, []string{input}, newFakeEnv(), 1, LibsVersion)
	}
	if replies[0].Kind == reply.KindInvalid {
		t.Fatalf("invalid reply %v", replies[0])
	}
	if !eq(replies[0], replies[1]) || steps[0] != steps[1] {
		t.Fatalf("two runs differ:\n%v (%d steps)\n%v (%d steps)", replies[0], steps[0], replies[1], steps[1])
	}
	if steps[0] > lim.MaxSteps+1 && !(replies[0].Kind == reply.KindError && replies[0].Str == ErrWorkLimit) {
		t.Fatalf("%d steps, over the budget of %d, yet no limit error: %v", steps[0], lim.MaxSteps, replies[0])
	}
}

// decodeAll decodes and re-encodes, so that both directions run on what
// the fuzzer finds.
const (
	fuzzJSON    = "local t = cjson.decode(ARGV[1]) return {type(t), cjson.encode(t)}"
	fuzzMsgpack = "local t = {cmsgpack.unpack(ARGV[1])} return {#t, cmsgpack.pack(unpack(t))}"
)

func FuzzCjsonDecode(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,"x",true,null]}`, `[[[[]]]]`, `"\ud83d\ude00"`, `-0x1p3`, `nan`,
		`1e999`, strings.Repeat("[", 2000), strings.Repeat(`{"a":`, 600), "\"\xff\xfe\"", `"\u0000"`, `[1,]`, ``} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { fuzzLib(t, fuzzJSON, s) })
}

func FuzzCmsgpackUnpack(f *testing.F) {
	for _, s := range []string{"\x93\x01\xa1x\xc3", "\xdd\xff\xff\xff\xff", "\xdf\x00\x00\x00\x01\xc0\x01",
		strings.Repeat("\x91", 5000) + "\x01", "\xcb\x7f\xf8\x00\x00\x00\x00\x00\x01", "\x81\xcb\x7f\xf8\x00\x00\x00\x00\x00\x01\x01",
		strings.Repeat("\x01", 8100), "\xc1", "\xdb\x00\x00\x00\x05ab"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { fuzzLib(t, fuzzMsgpack, s) })
}
