package test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fenced/fenced/resp"
)

// The FCALL workload: a function library loaded once, before the clients
// start, whose chaos_incr reads a counter and, unless the value it was
// given differs, increments it, answering the old and the new value, all in
// one function call; chaos_get (no-writes) reads a counter through
// FCALL_RO. Clients call them on random nodes during the faults. porcupine
// checks each counter's history against a register (fnModel): every call
// that answered must have found the counter where the calls before it
// left it, so an update lost, a function applied twice or not at all, and
// a stale read each make it fail.
//
// A call whose reply was lost may have happened or not. chaos_incr also
// records the value it found under a key of its own (a marker named by the
// call), so once the faults are healed the harness reads the markers of
// those calls and learns which ran and what they found (resolveFcalls):
// the check stays exact, where an increment of unknown outcome left open
// would double porcupine's search with each one.

// fnKinds are the history's operations of this workload, which the lock
// checkers leave alone.
var fnKinds = map[string]bool{"fcall": true, "fcall_ro": true}

// chaosLibrary is the workload's library. KEYS[1] is the counter, KEYS[2]
// the call's marker; ARGV[1], if given, the value the counter must hold
// for the increment to happen.
const chaosLibrary = `#!lua name=chaosfn
local function incr(keys, args)
  local old = tonumber(redis.call('GET', keys[1]) or '0')
  local new = old
  if args[1] == nil or tonumber(args[1]) == old then
    new = old + 1
    redis.call('SET', keys[1], tostring(new))
  end
  redis.call('SET', keys[2], tostring(old))
  return {old, new}
end
local function get(keys)
  return tonumber(redis.call('GET', keys[1]) or '0')
end
redis.register_function('chaos_incr', incr)
redis.register_function{function_name='chaos_get', callback=get, flags={'no-writes'}}
`

// fnCounters are the workload's counters, apart from the other workloads'.
var fnCounters = []string{"fn0", "fn1"}

// errNoFunction marks a call answered "function not found": the library,
// loaded before the clients started and never deleted, was lost.
const errNoFunction = "NOFUNCTION"

// loadChaosLibrary loads chaosLibrary through the leader, retrying while
// the new cluster settles (a node answers a version-3 command as unknown
// until then).
func loadChaosLibrary(t *testing.T, cc *chaosCluster) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := doWithin(cc.leader(30*time.Second).client(t), 5*time.Second, "FUNCTION", "LOAD", "REPLACE", chaosLibrary)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("FUNCTION LOAD: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// runFcall is one FCALL client until ctx ends: a third of its calls read
// with FCALL_RO, the rest increment, half of them only if the counter still
// holds what this client last saw of it.
func (w *workload) runFcall(ctx context.Context, id int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, uint64(id)))
	cc := newChaosConn(w.addrs, rng).as(w.cred(id)).over(w.tls)
	defer cc.close()
	seen := make(map[string]int64)
	for seq := 1; ctx.Err() == nil; seq++ {
		key := fnCounters[rng.IntN(len(fnCounters))]
		if rng.IntN(3) == 0 {
			v, op := w.call(ctx, cc, histOp{Client: id, Kind: "fcall_ro", Lock: key}, time.Second, "FCALL_RO", "chaos_get", "1", key)
			fnReply(&op, v)
			if op.Outcome == outOK && op.Err == "" {
				if v.Kind() != resp.KindInt {
					op.Err = badReply
				}
				op.Count = v.Integer()
				seen[key] = op.Count
			}
			w.h.add(op)
		} else {
			marker := fmt.Sprintf("fnop:c%d.%d", id, seq)
			args := []string{"FCALL", "chaos_incr", "2", key, marker}
			op := histOp{Client: id, Kind: "fcall", Lock: key, Session: marker}
			if rng.IntN(2) == 0 {
				op.Expect = strconv.FormatInt(seen[key], 10)
				args = append(args, op.Expect)
			}
			v, op := w.call(ctx, cc, op, 3*time.Second, args...)
			fnReply(&op, v)
			if op.Outcome == outOK && op.Err == "" {
				e := v.Elems()
				if v.Kind() != resp.KindArray || len(e) != 2 || e[0].Kind() != resp.KindInt || e[1].Kind() != resp.KindInt {
					op.Err = badReply
				} else {
					op.Count, op.Token = e[0].Integer(), e[1].Integer()
					seen[key] = op.Token
				}
			}
			w.h.add(op)
		}
		if op := rng.IntN(4); op == 0 {
			time.Sleep(time.Duration(5+rng.IntN(20)) * time.Millisecond)
		}
	}
}

// fnReply names a lost library in op's error, which the model refuses.
func fnReply(op *histOp, v resp.Value) {
	if op.Outcome == outOK && v.IsError() && strings.Contains(v.Text(), "Function not found") {
		op.Err = errNoFunction
	}
}

// fnFound is what a call of unknown outcome's marker says: whether it ran,
// and the value it found.
type fnFound struct {
	ran bool
	old int64
}

// resolveFcalls reads, on the healed cluster, the marker of every
// increment whose outcome was unknown. A call missing from the answer could
// not be read and stays unknown.
func resolveFcalls(ctx context.Context, w *workload, ops []histOp) map[string]fnFound {
	cc := newChaosConn(w.addrs, newRand(0, 7)).as(w.admin()).over(w.tls)
	defer cc.close()
	found := make(map[string]fnFound)
	for _, op := range ops {
		if op.Kind != "fcall" || op.Outcome != outUnknown {
			continue
		}
		for attempt := 0; attempt < 5 && ctx.Err() == nil; attempt++ {
			v, o := cc.do(ctx, cc.pick(), 2*time.Second, "GET", op.Session)
			if o != outOK || v.IsError() {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			switch v.Kind() {
			case resp.KindNull:
				found[op.Session] = fnFound{}
			case resp.KindBulk:
				n, err := strconv.ParseInt(v.Text(), 10, 64)
				if err != nil {
					n = math.MinInt64 // never a counter's value: the model refuses it
				}
				found[op.Session] = fnFound{ran: true, old: n}
			}
			break
		}
	}
	return found
}

// fnIn and fnOut are an FCALL history operation for porcupine.
type fnIn struct {
	Kind    string // fcall (chaos_incr), fcall_ro (chaos_get)
	Cond    bool   // fcall: increments only if the counter holds Expect
	Expect  int64
	Unknown bool // fcall: may have run, or not, at any time after its call
}

type fnOut struct {
	Err string
	Old int64 // fcall: the value found; fcall_ro: the value read
	New int64 // fcall: the value left
}

// fnModel is a register per counter, starting at 0: FCALL_RO reads it; an
// increment that answered found it at Old and left New, which is Old+1
// unless it was conditional on another value, and then Old; an increment
// answered with an error changed nothing; one of unknown outcome may have
// done either. A bad reply, or a function gone, is never legal.
func fnModel() porcupine.Model {
	return (&porcupine.NondeterministicModel{
		Init: func() []any { return []any{int64(0)} },
		Step: func(st, in0, out0 any) []any {
			s, in, out := st.(int64), in0.(fnIn), out0.(fnOut)
			applies := !in.Cond || s == in.Expect
			switch {
			case out.Err == badReply || out.Err == errNoFunction:
				return nil
			case in.Kind == "fcall_ro":
				if out.Err != "" || out.Old == s {
					return []any{s}
				}
			case in.Unknown:
				if applies {
					return []any{s, s + 1}
				}
				return []any{s}
			case out.Err != "":
				return []any{s}
			case out.Old != s:
			case applies && out.New == s+1:
				return []any{s + 1}
			case !applies && out.New == s:
				return []any{s}
			}
			return nil
		},
		DescribeOperation: func(in0, out0 any) string {
			in, out := in0.(fnIn), out0.(fnOut)
			if in.Kind == "fcall_ro" {
				return fmt.Sprintf("fcall_ro -> %d %s", out.Old, out.Err)
			}
			cond := ""
			if in.Cond {
				cond = fmt.Sprintf(" if %d", in.Expect)
			}
			switch {
			case in.Unknown:
				return "incr" + cond + " ?"
			case out.Err != "":
				return "incr" + cond + " " + out.Err
			}
			return fmt.Sprintf("incr%s: %d->%d", cond, out.Old, out.New)
		},
		DescribeState: func(st any) string { return strconv.FormatInt(st.(int64), 10) },
	}).ToModel()
}

// fnOperations turns the workload's history into porcupine operations by
// counter. An increment of unknown outcome whose marker was read is one
// that ran, having found the marker's value, at some time after its call,
// or one that never ran and is left out; one whose marker could not be
// read may have done either. Unknown reads are left out.
func fnOperations(ops []histOp, found map[string]fnFound) map[string][]porcupine.Operation {
	by := make(map[string][]porcupine.Operation)
	for _, op := range ops {
		if !fnKinds[op.Kind] || op.Outcome == outFail || op.Kind == "fcall_ro" && op.Outcome == outUnknown {
			continue
		}
		in := fnIn{Kind: op.Kind, Cond: op.Expect != ""}
		if in.Cond {
			in.Expect, _ = strconv.ParseInt(op.Expect, 10, 64)
		}
		out := fnOut{Err: op.Err, Old: op.Count, New: op.Token}
		ret := op.Return
		if op.Outcome == outUnknown {
			ret = math.MaxInt64
			f, ok := found[op.Session]
			switch {
			case !ok:
				in.Unknown = true
			case !f.ran:
				continue
			default:
				out.Old, out.New = f.old, f.old
				if !in.Cond || f.old == in.Expect {
					out.New = f.old + 1
				}
			}
		}
		by[op.Lock] = append(by[op.Lock], porcupine.Operation{ClientId: op.Client, Input: in, Output: out, Call: op.Call, Return: ret})
	}
	return by
}

// librariesIntact checks, after healing, that every node lists chaosLibrary
// with its code and nothing else. A follower forwards FUNCTION LIST to the
// leader, so this shows the library survived on the cluster; that every
// node holds it follows from their equal RAFT.HASH (replicasAgree), which
// covers the libraries' records.
func librariesIntact(w *workload) []string {
	cc := newChaosConn(w.addrs, newRand(0, 8)).as(w.admin()).over(w.tls)
	defer cc.close()
	var problems []string
	for i := range w.addrs {
		var v resp.Value
		o := outFail
		for attempt := 0; attempt < 5; attempt++ {
			if v, o = cc.do(context.Background(), i, 2*time.Second, "FUNCTION", "LIST", "WITHCODE"); o == outOK && !v.IsError() {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if o != outOK {
			problems = append(problems, fmt.Sprintf("node %d: FUNCTION LIST unanswered", i+1))
		} else if p := libraryListProblem(v); p != "" {
			problems = append(problems, fmt.Sprintf("node %d: %s", i+1, p))
		}
	}
	return problems
}

// libraryListProblem says what is wrong with a FUNCTION LIST WITHCODE
// answer that should list chaosLibrary alone, or "" if nothing is.
func libraryListProblem(v resp.Value) string {
	switch {
	case v.IsError():
		return "FUNCTION LIST answers " + v.Text()
	case v.Kind() != resp.KindArray || len(v.Elems()) != 1:
		return fmt.Sprintf("FUNCTION LIST lists %d libraries, not the one loaded: %.300v", len(v.Elems()), v)
	case libraryField(v.Elems()[0], "library_name") != "chaosfn" || libraryField(v.Elems()[0], "library_code") != chaosLibrary:
		return fmt.Sprintf("FUNCTION LIST lists another library than the one loaded: %.300v", v)
	}
	return ""
}

// libraryField is one field's text in a FUNCTION LIST entry (a map in
// RESP3, a flat array in RESP2).
func libraryField(lib resp.Value, name string) string {
	e := lib.Elems()
	for i := 0; i+1 < len(e); i += 2 {
		if e[i].Text() == name {
			return e[i+1].Text()
		}
	}
	return ""
}

// TestFcallModel: the FCALL checker passes a history where each call found
// the counter where the one before left it, and refuses an increment lost
// (two calls finding the same value), a function applied twice (a value
// skipped) or not at all (its successor finds the old value), a stale read,
// a conditional call that incremented against its condition, a bad reply
// and a lost library; an increment of unknown outcome may or may not have
// run.
func TestFcallModel(t *testing.T) {
	t.Parallel()
	incr := func(client int, call, ret, old, new int64) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: fnIn{Kind: "fcall"}, Output: fnOut{Old: old, New: new}, Call: call, Return: ret}
	}
	incrIf := func(client int, expect, call, ret, old, new int64) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: fnIn{Kind: "fcall", Cond: true, Expect: expect}, Output: fnOut{Old: old, New: new}, Call: call, Return: ret}
	}
	get := func(client int, call, ret, v int64) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: fnIn{Kind: "fcall_ro"}, Output: fnOut{Old: v}, Call: call, Return: ret}
	}
	failed := func(client int, call, ret int64, err string) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: fnIn{Kind: "fcall"}, Output: fnOut{Err: err}, Call: call, Return: ret}
	}
	unknown := func(client int, call int64) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: fnIn{Kind: "fcall", Unknown: true}, Output: fnOut{}, Call: call, Return: math.MaxInt64}
	}
	for _, tc := range []struct {
		name string
		ops  []porcupine.Operation
		ok   bool
	}{
		{"increments in turn", []porcupine.Operation{
			incr(0, 0, 10, 0, 1), incrIf(1, 0, 5, 20, 1, 1), incrIf(1, 1, 21, 30, 1, 2),
			failed(0, 31, 35, "OOM"), get(0, 36, 40, 2)}, true},
		{"concurrent increments in either order", []porcupine.Operation{
			incr(0, 0, 10, 1, 2), incr(1, 0, 10, 0, 1), get(2, 11, 20, 2)}, true},
		{"lost update", []porcupine.Operation{incr(0, 0, 10, 0, 1), incr(1, 0, 10, 0, 1)}, false},
		{"applied twice", []porcupine.Operation{incr(0, 0, 10, 0, 1), incr(1, 11, 20, 2, 3)}, false},
		{"applied twice, seen by a read", []porcupine.Operation{incr(0, 0, 10, 0, 1), get(1, 11, 20, 2)}, false},
		{"not applied", []porcupine.Operation{incr(0, 0, 10, 0, 1), incr(1, 11, 20, 0, 1)}, false},
		{"stale read", []porcupine.Operation{incr(0, 0, 10, 0, 1), incr(0, 11, 20, 1, 2), get(1, 21, 30, 1)}, false},
		{"conditional applied against its condition", []porcupine.Operation{incr(0, 0, 10, 0, 1), incrIf(1, 0, 11, 20, 1, 2)}, false},
		{"conditional skipped though it held", []porcupine.Operation{incrIf(1, 0, 0, 10, 0, 0)}, false},
		{"bad reply", []porcupine.Operation{failed(0, 0, 10, badReply)}, false},
		{"library lost", []porcupine.Operation{incr(0, 0, 10, 0, 1), failed(1, 11, 20, errNoFunction)}, false},
		{"unknown applied", []porcupine.Operation{unknown(0, 0), get(1, 5, 10, 1), incr(1, 11, 20, 1, 2)}, true},
		{"unknown not applied", []porcupine.Operation{unknown(0, 0), get(1, 5, 10, 0)}, true},
		{"unknown applied once only", []porcupine.Operation{unknown(0, 0), get(1, 5, 10, 2)}, false},
	} {
		if got := porcupine.CheckOperations(fnModel(), tc.ops); got != tc.ok {
			t.Errorf("%s: linearizable %v, want %v", tc.name, got, tc.ok)
		}
	}
}

// TestFcallOperations: an increment of unknown outcome becomes what its
// marker says, so that a history the markers explain passes, and one in
// which a marker contradicts the answers fails.
func TestFcallOperations(t *testing.T) {
	t.Parallel()
	ops := []histOp{
		{Client: 0, Kind: "fcall", Lock: "fn0", Session: "m1", Count: 0, Token: 1, Outcome: outOK, Call: 0, Return: 10},
		{Client: 1, Kind: "fcall", Lock: "fn0", Session: "m2", Outcome: outUnknown, Call: 11, Return: 20},
		{Client: 2, Kind: "fcall", Lock: "fn0", Session: "m3", Expect: "5", Outcome: outUnknown, Call: 11, Return: 20},
		{Client: 3, Kind: "fcall", Lock: "fn0", Session: "m4", Outcome: outFail, Call: 11, Return: 20},
		{Client: 0, Kind: "fcall_ro", Lock: "fn0", Outcome: outUnknown, Call: 21, Return: 30},
		{Client: 0, Kind: "fcall_ro", Lock: "fn0", Count: 2, Outcome: outOK, Call: 31, Return: 40},
		{Client: 0, Kind: "heartbeat", Outcome: outOK, Call: 31, Return: 40},
	}
	for _, tc := range []struct {
		name  string
		found map[string]fnFound
		n     int
		ok    bool
	}{
		{"markers read", map[string]fnFound{"m2": {ran: true, old: 1}, "m3": {}}, 3, true},
		{"marker unread", map[string]fnFound{"m3": {}}, 3, true},
		{"marker says it never ran", map[string]fnFound{"m2": {}, "m3": {}}, 2, false},
		{"marker says it found another value", map[string]fnFound{"m2": {ran: true, old: 0}, "m3": {}}, 3, false},
		{"conditional ran without incrementing", map[string]fnFound{"m2": {ran: true, old: 1}, "m3": {ran: true, old: 2}}, 4, true},
		{"marker holds a value never reached", map[string]fnFound{"m2": {ran: true, old: 1}, "m3": {ran: true, old: 5}}, 4, false},
	} {
		by := fnOperations(ops, tc.found)
		if len(by) != 1 || len(by["fn0"]) != tc.n {
			t.Errorf("%s: operations %v, want %d of fn0", tc.name, by, tc.n)
			continue
		}
		if got := porcupine.CheckOperations(fnModel(), by["fn0"]); got != tc.ok {
			t.Errorf("%s: linearizable %v, want %v", tc.name, got, tc.ok)
		}
	}
}

// TestLibraryListProblem: the library check accepts the loaded library, in
// RESP2 (flat arrays) and RESP3 (maps), and refuses an empty list, another
// code, another library besides, and an error.
func TestLibraryListProblem(t *testing.T) {
	t.Parallel()
	entry := func(name, code string) []resp.Value {
		return []resp.Value{resp.BulkString("library_name"), resp.BulkString(name), resp.BulkString("engine"), resp.BulkString("LUA"),
			resp.BulkString("functions"), resp.Array(), resp.BulkString("library_code"), resp.BulkString(code)}
	}
	for _, tc := range []struct {
		name string
		v    resp.Value
		ok   bool
	}{
		{"resp2", resp.Array(resp.Array(entry("chaosfn", chaosLibrary)...)), true},
		{"resp3", resp.Array(resp.Map(entry("chaosfn", chaosLibrary)...)), true},
		{"empty", resp.Array(), false},
		{"other code", resp.Array(resp.Array(entry("chaosfn", chaosLibrary+"--")...)), false},
		{"another besides", resp.Array(resp.Array(entry("chaosfn", chaosLibrary)...), resp.Array(entry("x", "#!lua name=x")...)), false},
		{"error", resp.Error("ERR unknown command 'FUNCTION'"), false},
	} {
		if got := libraryListProblem(tc.v); (got == "") != tc.ok {
			t.Errorf("%s: problem %q, want ok %v", tc.name, got, tc.ok)
		}
	}
}
