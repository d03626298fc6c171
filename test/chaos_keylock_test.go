package test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fenced/fenced/resp"
)

// The Redis drop-in path under faults: locks taken as redsync takes them,
// `SET key value NX PX ttl` with a value unique to the acquisition, released
// with redsync's compare-and-delete script by EVALSHA (EVAL after NOSCRIPT),
// the fencing token read with FENCE key IFEQ value, which answers only while
// the key still holds this acquisition's value (never a successor's token).

const keyReleaseScript = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`

// runKeys is one client of the SET NX PX workload until ctx ends.
func (w *workload) runKeys(ctx context.Context, id int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, uint64(id)))
	cc := newChaosConn(w.addrs, rng).as(w.cred(id)).over(w.tls)
	defer cc.close()
	px := strconv.FormatInt(w.ttl.Milliseconds(), 10)
	var seq int
	var notPaused atomic.Bool // no heartbeats to stop: the key's TTL runs on
	for ctx.Err() == nil {
		key := w.locks[rng.IntN(len(w.locks))]
		if rng.IntN(5) == 0 {
			w.readFence(ctx, cc, id, key)
			continue
		}
		seq++
		val := fmt.Sprintf("c%d.%d.%d", id, seq, rng.Uint32())
		v, op := w.call(ctx, cc, histOp{Client: id, Kind: "set", Lock: key, Session: val, TTL: w.ttl.Milliseconds()},
			time.Second, "SET", key, val, "NX", "PX", px)
		op.Null = v.Kind() == resp.KindNull
		w.h.add(op)
		if op.Outcome == outFail || op.Err != "" || op.Null {
			time.Sleep(time.Duration(20+rng.IntN(40)) * time.Millisecond)
			continue
		}
		// Granted, or perhaps granted: FENCE key IFEQ value tells.
		v, op = w.call(ctx, cc, histOp{Client: id, Kind: "token", Lock: key, Session: val}, time.Second,
			"FENCE", key, "IFEQ", val)
		op.Null, op.Token = v.Kind() == resp.KindNull, v.Integer()
		w.h.add(op)
		if op.Outcome != outOK || op.Err != "" || op.Null {
			continue
		}
		w.critical(ctx, id, key, val, op.Token, &notPaused)
		w.releaseKey(ctx, cc, id, key, val)
	}
}

// releaseKey deletes key if it still holds val, by EVALSHA as redsync does,
// falling back to EVAL when this node's cache lacks the script.
func (w *workload) releaseKey(ctx context.Context, cc *chaosConn, id int, key, val string) {
	sum := sha1.Sum([]byte(keyReleaseScript))
	sha := hex.EncodeToString(sum[:])
	for _, args := range [][]string{{"EVALSHA", sha, "1", key, val}, {"EVAL", keyReleaseScript, "1", key, val}} {
		v, op := w.call(ctx, cc, histOp{Client: id, Kind: "unset", Lock: key, Session: val}, time.Second, args...)
		op.Count = v.Integer()
		w.h.add(op)
		if op.Err != "NOSCRIPT" {
			return
		}
	}
}

// keyBounds answers whether the key written by one acquisition may have
// expired by a time: only once its PX has passed since the SET was sent,
// because cluster time never runs ahead of real time.
type keyBounds map[string]int64 // value -> earliest expiry, ns

func newKeyBounds(ops []histOp) keyBounds {
	b := make(keyBounds)
	for _, op := range ops {
		if op.Kind == "set" && op.Outcome != outFail {
			b[op.Session] = op.Call + op.TTL*int64(time.Millisecond)
		}
	}
	return b
}

// expiresBy is the earliest time the key val was written with may have
// expired; math.MinInt64 for a value never written (no bound).
func (b keyBounds) expiresBy(val string) int64 {
	if at, ok := b[val]; ok {
		return at
	}
	return math.MinInt64
}

// keyLockModel is the SET NX PX lock for porcupine, one partition per key.
// The state is lockState with Holder the value the key holds (Count
// unused): a SET NX succeeds only on a free key, FENCE key IFEQ value answers
// the key's creation index only to its holder, and that index exceeds every
// earlier one; the release script deletes only its own value; FENCE reads
// the holder's token or null. A held key may become free at any step once
// its holder's PX has passed since the SET was sent, never before (by the
// step's return, or the next answered one's for an unknown step:
// expiringStep).
func keyLockModel(b keyBounds) porcupine.Model {
	apply := func(c lockState, in lockIn, out lockOut) []lockState {
		var next []lockState
		held := c.Holder != "" && c.Holder == in.Session
		switch in.Kind {
		case "set":
			switch {
			case in.Unknown:
				next = append(next, c)
				if c.Holder == "" {
					next = append(next, lockState{Holder: in.Session, Token: -1, Max: c.Max})
				}
			case out.Err != "":
				next = append(next, c)
			case out.Null:
				if c.Holder != "" {
					next = append(next, c)
				}
			case c.Holder == "":
				next = append(next, lockState{Holder: in.Session, Token: -1, Max: c.Max})
			}
		case "token", "fence":
			switch {
			case out.Err != "":
				next = append(next, c)
			case out.Null:
				if in.Kind == "token" && !held || in.Kind == "fence" && c.Holder == "" {
					next = append(next, c)
				}
			case (held || in.Kind == "fence" && c.Holder != "") && c.Token == out.Token:
				next = append(next, c)
			case (held || in.Kind == "fence" && c.Holder != "") && c.Token == -1 && out.Token > c.Max:
				c.Token, c.Max = out.Token, out.Token
				next = append(next, c)
			}
		case "unset":
			freed := lockState{Max: c.Max}
			switch {
			case in.Unknown:
				next = append(next, c)
				if held {
					next = append(next, freed)
				}
			case out.Err != "":
				next = append(next, c)
			case out.Count == 1 && held:
				next = append(next, freed)
			case out.Count == 0 && !held:
				next = append(next, c)
			}
		}
		return next
	}
	return (&porcupine.NondeterministicModel{
		Init: func() []any { return []any{lockState{}} },
		Step: expiringStep(b.expiresBy, apply),
		DescribeOperation: func(in0, out0 any) string {
			in, out := in0.(lockIn), out0.(lockOut)
			s := fmt.Sprintf("%s(%s)", in.Kind, in.Session)
			switch {
			case in.Unknown:
				return s + " -> ?"
			case out.Err != "":
				return s + " -> " + out.Err
			case out.Null:
				return s + " -> nil"
			case in.Kind == "unset":
				return fmt.Sprintf("%s -> %d", s, out.Count)
			case in.Kind == "set":
				return s + " -> OK"
			}
			return fmt.Sprintf("%s -> %d", s, out.Token)
		},
		DescribeState: func(st any) string {
			s := st.(lockState)
			d := fmt.Sprintf("%s token %d", s.Holder, s.Token)
			if s.Holder == "" {
				d = fmt.Sprintf("free (max %d)", s.Max)
			}
			return d + s.describeLapsed()
		},
	}).ToModel()
}

// keyOperations turns the history of the SET NX workload into porcupine
// operations by key. An unknown operation may take effect at any time after
// its call (its return is math.MaxInt64; expiringStep bounds the expiry it
// relies on by unknownGrace and the next answered operation); unknown reads
// change nothing and are left out.
func keyOperations(ops []histOp) map[string][]porcupine.Operation {
	byKey := make(map[string][]porcupine.Operation)
	for _, op := range ops {
		if op.Outcome == outFail {
			continue
		}
		unknown := op.Outcome == outUnknown
		if unknown && (op.Kind == "fence" || op.Kind == "token") {
			continue
		}
		in := lockIn{Kind: op.Kind, Session: op.Session, Unknown: unknown, Return: op.Return}
		ret := op.Return
		if unknown {
			ret = math.MaxInt64
			in.Return, in.Late = op.Return+unknownGrace, true
		}
		out := lockOut{Null: op.Null, Err: op.Err, Token: op.Token, Count: op.Count}
		byKey[op.Lock] = append(byKey[op.Lock], porcupine.Operation{ClientId: op.Client, Input: in, Output: out, Call: op.Call, Return: ret})
	}
	return byKey
}
