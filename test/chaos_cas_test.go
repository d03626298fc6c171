package test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fenced/fenced/resp"
)

// The check-and-set workload: counters incremented as the Redis
// documentation's optimistic-locking pattern does it, WATCH key, GET key,
// MULTI, SET key value+1, EXEC, all on one connection, and read now and
// then with GET. EXEC answers null when the key changed after the WATCH,
// so no increment may ever be lost: every EXEC that succeeded must have
// found the counter at the value its GET read. porcupine checks the
// history against a register with compare-and-set (casModel).

// casKinds are the history's operations of this workload, which the lock
// checkers leave alone.
var casKinds = map[string]bool{"cas": true, "get": true}

// runCAS is one check-and-set client until ctx ends.
func (w *workload) runCAS(ctx context.Context, id int, seed uint64, counters []string) {
	rng := rand.New(rand.NewPCG(seed, uint64(id)))
	cc := newChaosConn(w.addrs, rng).as(w.cred(id)).over(w.tls)
	defer cc.close()
	for ctx.Err() == nil {
		key := counters[rng.IntN(len(counters))]
		if rng.IntN(4) == 0 {
			v, op := w.call(ctx, cc, histOp{Client: id, Kind: "get", Lock: key}, time.Second, "GET", key)
			op.Count, op.Null = casValue(v), v.Kind() == resp.KindNull
			if op.Outcome == outOK && op.Err == "" && v.Kind() != resp.KindNull && v.Kind() != resp.KindBulk {
				op.Err = badReply
			}
			w.h.add(op)
			continue
		}
		if !w.casOnce(ctx, cc, id, key) {
			time.Sleep(time.Duration(10+rng.IntN(40)) * time.Millisecond)
		}
	}
}

// casValue is a counter's value as GET answers it: 0 for a missing key.
func casValue(v resp.Value) int64 {
	if v.Kind() != resp.KindBulk {
		return 0
	}
	n, err := strconv.ParseInt(v.Text(), 10, 64)
	if err != nil {
		return math.MinInt64 // never a counter's value: the model refuses it
	}
	return n
}

// casOnce tries one increment of key on one node and connection, and
// records it once EXEC is sent. Anything short of that (a refused WATCH, a
// broken connection) abandons it with nothing recorded: nothing was
// written. A connection that breaks is never redialed within the
// transaction, since a new one would run MULTI ... EXEC without the WATCH.
// It reports whether EXEC succeeded.
func (w *workload) casOnce(ctx context.Context, cc *chaosConn, id int, key string) bool {
	node := cc.pick()
	call := w.h.now()
	if v, o := cc.do(ctx, node, time.Second, "WATCH", key); o != outOK || v.Text() != "OK" {
		return false
	}
	cl := cc.conns[node]
	abandon := func() bool {
		// The connection may hold a WATCH or a MULTI: start afresh.
		cc.drop(node)
		return false
	}
	v, o := cc.doOn(ctx, node, cl, time.Second, "GET", key)
	if o != outOK || v.IsError() {
		return abandon()
	}
	read := casValue(v)
	if read == math.MinInt64 {
		return abandon()
	}
	if v, o := cc.doOn(ctx, node, cl, time.Second, "MULTI"); o != outOK || v.Text() != "OK" {
		return abandon()
	}
	next := strconv.FormatInt(read+1, 10)
	if v, o := cc.doOn(ctx, node, cl, time.Second, "SET", key, next); o != outOK || v.Text() != "QUEUED" {
		return abandon()
	}
	op := histOp{Client: id, Kind: "cas", Lock: key, Count: read, Token: read + 1, Call: call}
	v, op.Outcome = cc.doOn(ctx, node, cl, 3*time.Second, "EXEC")
	op.Return = w.h.now()
	switch {
	case op.Outcome != outOK:
		// Not sent, refused before proposing, or lost: the history keeps
		// what happened, and the connection starts afresh.
		cc.drop(node)
	case v.IsError():
		op.Err = errCode(v)
	case v.Kind() == resp.KindNull || v.Kind() == resp.KindNullArray:
		op.Null = true
	case len(v.Elems()) != 1 || v.Elems()[0].Text() != "OK":
		op.Err = badReply
	}
	w.h.add(op)
	return op.Outcome == outOK && op.Err == "" && !op.Null
}

func errCode(v resp.Value) string {
	code := v.Text()
	for i := range code {
		if code[i] == ' ' {
			return code[:i]
		}
	}
	return code
}

// badReply marks an answer of the wrong shape, which the model refuses.
const badReply = "BADREPLY"

// casIn and casOut are a check-and-set history operation for porcupine.
type casIn struct {
	Kind    string // cas, get
	Expect  int64  // cas: the value its GET read; it writes Expect+1
	Unknown bool
}

type casOut struct {
	Null  bool // cas: EXEC aborted
	Err   string
	Value int64 // get
}

// casModel is a register per counter, starting at 0: a GET reads it; an
// EXEC that succeeded requires it at the value the transaction's GET read
// and moves it one up; an aborted or refused EXEC changes nothing; one
// whose outcome is unknown may have done either.
func casModel() porcupine.Model {
	return (&porcupine.NondeterministicModel{
		Init: func() []any { return []any{int64(0)} },
		Step: func(st, in0, out0 any) []any {
			s, in, out := st.(int64), in0.(casIn), out0.(casOut)
			switch {
			case out.Err == badReply:
				return nil
			case in.Kind == "get":
				if out.Err != "" || out.Value == s {
					return []any{s}
				}
			case in.Unknown:
				if s == in.Expect {
					return []any{s, s + 1}
				}
				return []any{s}
			case out.Err != "" || out.Null:
				return []any{s}
			case s == in.Expect:
				return []any{s + 1}
			}
			return nil
		},
		DescribeOperation: func(in0, out0 any) string {
			in, out := in0.(casIn), out0.(casOut)
			switch {
			case in.Kind == "get":
				return fmt.Sprintf("get -> %d", out.Value)
			case in.Unknown:
				return fmt.Sprintf("cas %d->%d ?", in.Expect, in.Expect+1)
			case out.Err != "":
				return fmt.Sprintf("cas %d->%d %s", in.Expect, in.Expect+1, out.Err)
			case out.Null:
				return fmt.Sprintf("cas %d->%d aborted", in.Expect, in.Expect+1)
			}
			return fmt.Sprintf("cas %d->%d", in.Expect, in.Expect+1)
		},
		DescribeState: func(st any) string { return strconv.FormatInt(st.(int64), 10) },
	}).ToModel()
}

// casOperations turns the workload's history into porcupine operations by
// counter. An unknown EXEC may take effect at any time after its call;
// unknown GETs are left out.
func casOperations(ops []histOp) map[string][]porcupine.Operation {
	by := make(map[string][]porcupine.Operation)
	for _, op := range ops {
		if !casKinds[op.Kind] || op.Outcome == outFail || op.Kind == "get" && op.Outcome == outUnknown {
			continue
		}
		in := casIn{Kind: op.Kind, Expect: op.Count, Unknown: op.Outcome == outUnknown}
		ret := op.Return
		if in.Unknown {
			ret = math.MaxInt64
		}
		out := casOut{Null: op.Null, Err: op.Err, Value: op.Count}
		by[op.Lock] = append(by[op.Lock], porcupine.Operation{ClientId: op.Client, Input: in, Output: out, Call: op.Call, Return: ret})
	}
	return by
}

// TestCASModel: the check-and-set checker passes a history where every
// successful EXEC found its GET's value, and refuses one increment lost (two
// EXECs from the same read both succeeding), a read of a value never
// written, and an answer of the wrong shape; an unknown EXEC may or may
// not have applied.
func TestCASModel(t *testing.T) {
	t.Parallel()
	op := func(client int, kind string, expect int64, call, ret int64, out casOut) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: casIn{Kind: kind, Expect: expect}, Output: out, Call: call, Return: ret}
	}
	unknown := func(client int, expect int64, call int64) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: casIn{Kind: "cas", Expect: expect, Unknown: true}, Output: casOut{}, Call: call, Return: math.MaxInt64}
	}
	for _, tc := range []struct {
		name string
		ops  []porcupine.Operation
		want porcupine.CheckResult
	}{
		{"increments in turn", []porcupine.Operation{
			op(0, "cas", 0, 0, 10, casOut{}), op(1, "cas", 0, 5, 20, casOut{Null: true}), op(1, "cas", 1, 21, 30, casOut{}),
			op(0, "get", 0, 31, 40, casOut{Value: 2})}, porcupine.Ok},
		{"lost increment", []porcupine.Operation{
			op(0, "cas", 0, 0, 10, casOut{}), op(1, "cas", 0, 0, 10, casOut{})}, porcupine.Illegal},
		{"lost increment found by a read", []porcupine.Operation{
			op(0, "cas", 0, 0, 10, casOut{}), op(1, "cas", 0, 11, 20, casOut{Err: "EXECABORT"}), op(1, "get", 0, 21, 30, casOut{Value: 0})}, porcupine.Illegal},
		{"unknown applied", []porcupine.Operation{
			unknown(0, 0, 0), op(1, "get", 0, 5, 10, casOut{Value: 1}), op(1, "cas", 1, 11, 20, casOut{})}, porcupine.Ok},
		{"unknown not applied", []porcupine.Operation{
			unknown(0, 0, 0), op(1, "get", 0, 5, 10, casOut{Value: 0})}, porcupine.Ok},
		{"bad reply", []porcupine.Operation{op(0, "cas", 0, 0, 10, casOut{Err: badReply})}, porcupine.Illegal},
	} {
		if got := porcupine.CheckOperations(casModel(), tc.ops); got != (tc.want == porcupine.Ok) {
			t.Errorf("%s: linearizable %v, want %v", tc.name, got, tc.want == porcupine.Ok)
		}
	}
}
