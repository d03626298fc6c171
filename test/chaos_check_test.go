package test

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// The fault tests' checkers.
//
// lockModel is a fenced mutex for porcupine, one partition per lock: a grant
// is legal only when the lock is free (or held by the same session, for a
// reentrant hold within its LIMIT) and its token exceeds every earlier
// one; a release only by the holder, with its token; FENCE reads the
// holder's token or null. Operations whose outcome is unknown may or may
// not take effect. Sessions end on their own: a session may be expired at
// time τ only if τ is at least its TTL after the call of every operation of
// it that was answered before τ (any use renews it), and no operation of it
// called after τ succeeded; or once a SESSION.KILL of it was answered. A
// held lock may become free at any step where its holder may be expired,
// and a NOSESSION answer is legal only then, so the model also checks that
// no session whose renewals were acknowledged expired early. Cluster time
// never runs ahead of real time, which makes these bounds sound. An
// operation may take effect no later than its return, so its step may end
// the holder if the holder may be over by then; an operation whose outcome is
// unknown has no return (a queued FLOCK may be granted long after its client
// gave up, when the holder's session ends), so its step may end the holder
// only on the word of the next answered operation, which took effect later
// (expiringStep).

// lockIn is an operation's input; Return is its return time, for the
// session bounds.
type lockIn struct {
	Kind    string // acquire, release, fence, kill
	Session string
	Token   int64 // release: FENCE sent
	Limit   int64
	Unknown bool
	Return  int64
	// Late marks an operation whose outcome is unknown: it may take effect
	// after its client gave up (a queued FLOCK granted at the holder's
	// expiry), and Return is then its give-up time plus unknownGrace.
	Late bool
}

// unknownGrace is how long after its client gave up an operation with an
// unknown outcome may still end a holder and take the lock: the workload's
// FLOCK WAIT (1 s) and as much again for its entry to be applied (an
// election). Unbounded, every unknown operation could end the holder at
// every point of the search, and porcupine's search of an illegal history
// ran for minutes where it took 0.3 s.
const unknownGrace = 2 * int64(time.Second)

type lockOut struct {
	Null  bool
	Err   string
	Token int64
	Count int64
}

// lockState is the model's state. Token -1 is a grant whose token the
// history never saw (its FLOCK's outcome was unknown).
type lockState struct {
	Holder string
	Count  int64
	Token  int64
	Max    int64
	// Lapsed is when the holders that unknown operations' steps found
	// ended may at the earliest all be over (0: none): the next operation
	// with a return must return no sooner. A time, not the holders, so that
	// states that need the same merge (porcupine's search over illegal
	// histories with many unknown operations blew up when it kept names).
	Lapsed int64
}

// describeLapsed is the suffix DescribeState shows for s.Lapsed.
func (s lockState) describeLapsed() string {
	if s.Lapsed <= 0 {
		return ""
	}
	return fmt.Sprintf(" (holders ended: over by %.1f ms)", msOf(s.Lapsed))
}

// expiringStep is the step of a lock model whose holder may end on its own:
// apply gives the states one operation leads to from one state, and
// expiresBy says the earliest time a holder may be over. Each operation may
// start from the state as it is, or with the holder ended if that may have
// happened by the latest time the operation took effect: its return, or,
// when the outcome is unknown (Late), its give-up time plus unknownGrace and
// also the return of the next operation with one, which Lapsed carries
// there. (The unknown step took effect before that operation did, so no
// earlier than its return is too late.)
func expiringStep(expiresBy func(holder string) int64, apply func(c lockState, in lockIn, out lockOut) []lockState) func(st, in0, out0 any) []any {
	return func(st, in0, out0 any) []any {
		s, in, out := st.(lockState), in0.(lockIn), out0.(lockOut)
		unknown := in.Late
		if !unknown {
			if in.Return < s.Lapsed {
				return nil
			}
			s.Lapsed = 0
		}
		lapsed := s.Lapsed
		s.Lapsed = 0
		var next []any
		for _, c := range apply(s, in, out) {
			c.Lapsed = lapsed
			next = append(next, c)
		}
		if s.Holder != "" && in.Return >= expiresBy(s.Holder) {
			ended := lapsed
			if unknown {
				ended = max(ended, expiresBy(s.Holder))
			}
			for _, c := range apply(lockState{Max: s.Max}, in, out) {
				// An unknown step ends the holder only to take the lock
				// itself (a queued FLOCK granted at the holder's expiry):
				// an end that leads nowhere else is the next answered
				// step's to make, by its own return. Without this cut,
				// every unknown operation could end the holder at every
				// point, and the search of an illegal history ran for
				// minutes where it took 0.3 s.
				if unknown && (c.Holder == "" || c.Holder != in.Session) {
					continue
				}
				c.Lapsed = ended
				next = append(next, c)
			}
		}
		return next
	}
}

// sessionBounds answers whether a session may be expired at a time.
type sessionBounds struct {
	ttl    map[string]int64   // ns
	calls  map[string][]int64 // calls of its answered operations, sorted
	killed map[string]int64   // call of an answered SESSION.KILL
}

func newSessionBounds(ops []histOp) *sessionBounds {
	b := &sessionBounds{ttl: make(map[string]int64), calls: make(map[string][]int64), killed: make(map[string]int64)}
	for _, op := range ops {
		if op.Kind == "open" && op.Outcome == outOK && op.Err == "" {
			b.ttl[op.Session] = op.TTL * int64(time.Millisecond)
			b.calls[op.Session] = append(b.calls[op.Session], op.Call)
		}
	}
	for _, op := range ops {
		if op.Outcome != outOK || op.Session == "" || op.Kind == "open" {
			continue
		}
		if op.Kind == "kill" {
			if k, ok := b.killed[op.Session]; !ok || op.Call < k {
				b.killed[op.Session] = op.Call
			}
			continue
		}
		if op.Err != "NOSESSION" {
			b.calls[op.Session] = append(b.calls[op.Session], op.Call)
		}
	}
	for _, c := range b.calls {
		sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	}
	return b
}

// expiresBy is the earliest time session s may have ended: the call of a
// SESSION.KILL of it that was answered, or its TTL after the call of its
// last answered use (any use renews it), and no sooner than that call (it
// was alive then); math.MinInt64 if it was never answered (no bound).
func (b *sessionBounds) expiresBy(s string) int64 {
	end := int64(math.MaxInt64)
	if k, ok := b.killed[s]; ok {
		end = k
	}
	calls := b.calls[s]
	if len(calls) == 0 {
		return math.MinInt64
	}
	last := calls[len(calls)-1]
	if ttl, ok := b.ttl[s]; ok {
		last += ttl
	}
	return min(end, last)
}

// mayExpire reports whether session s may have ended by time t.
func (b *sessionBounds) mayExpire(s string, t int64) bool { return t >= b.expiresBy(s) }

func lockModel(b *sessionBounds) porcupine.Model {
	free := func(s lockState) lockState { return lockState{Max: s.Max} }
	apply := func(c lockState, in lockIn, out lockOut) []lockState {
		var next []lockState
		add := func(x lockState) { next = append(next, x) }
		held := c.Holder == in.Session
		switch in.Kind {
		case "kill":
			add(c)
			if held {
				add(free(c))
			}
		case "acquire":
			if in.Unknown {
				add(c)
				switch {
				case c.Holder == "":
					add(lockState{Holder: in.Session, Count: 1, Token: -1, Max: c.Max})
				case held && (in.Limit == 0 || c.Count < in.Limit):
					c.Count++
					add(c)
				}
				return next
			}
			switch {
			case out.Err == "NOSESSION":
				if b.mayExpire(in.Session, in.Return) {
					if held {
						c = free(c)
					}
					add(c)
				}
			case out.Err == "LIMIT":
				if held && in.Limit > 0 && c.Count >= in.Limit {
					add(c)
				}
			case out.Err != "":
				add(c) // refused before acting (too many locks or waiters)
			case out.Null:
				if c.Holder != "" && !held {
					add(c)
				}
			case c.Holder == "" && out.Token > c.Max:
				add(lockState{Holder: in.Session, Count: 1, Token: out.Token, Max: out.Token})
			case held && (c.Token == out.Token || c.Token == -1 && out.Token > c.Max) && (in.Limit == 0 || c.Count < in.Limit):
				add(lockState{Holder: c.Holder, Count: c.Count + 1, Token: out.Token, Max: max(c.Max, out.Token)})
			}
		case "release":
			match := held && (c.Token == in.Token || c.Token == -1)
			if in.Unknown {
				add(c)
				if match {
					if c.Count--; c.Count == 0 {
						c = free(c)
					}
					add(c)
				}
				return next
			}
			switch {
			case out.Err == "NOTOWNER":
				if !held {
					add(c)
				}
			case out.Err == "STALEFENCE":
				if held && c.Token != -1 && c.Token != in.Token {
					add(c)
				}
			case out.Err == "NOSESSION":
				if b.mayExpire(in.Session, in.Return) {
					if held {
						c = free(c)
					}
					add(c)
				}
			case out.Err != "":
			case match && c.Count-1 == out.Count:
				c.Count = out.Count
				if c.Count == 0 {
					c = free(c)
				} else if c.Token == -1 {
					c.Token = in.Token
				}
				add(c)
			}
		case "fence":
			switch {
			case out.Null:
				if c.Holder == "" {
					add(c)
				}
			case c.Holder != "" && c.Token == out.Token:
				add(c)
			case c.Holder != "" && c.Token == -1 && out.Token > c.Max:
				c.Token, c.Max = out.Token, out.Token
				add(c)
			}
		}
		return next
	}
	step := expiringStep(b.expiresBy, apply)
	return (&porcupine.NondeterministicModel{
		Init: func() []any { return []any{lockState{}} },
		Step: step,
		DescribeOperation: func(in0, out0 any) string {
			in, out := in0.(lockIn), out0.(lockOut)
			s := fmt.Sprintf("%s(%.6s", in.Kind, in.Session)
			if in.Kind == "release" {
				s += fmt.Sprintf(", %d", in.Token)
			}
			switch {
			case in.Unknown:
				return s + ") -> ?"
			case out.Err != "":
				return s + ") -> " + out.Err
			case out.Null:
				return s + ") -> nil"
			case in.Kind == "release":
				return fmt.Sprintf("%s) -> %d left", s, out.Count)
			}
			return fmt.Sprintf("%s) -> %d", s, out.Token)
		},
		DescribeState: func(st any) string {
			s := st.(lockState)
			d := fmt.Sprintf("%.6s x%d token %d", s.Holder, s.Count, s.Token)
			if s.Holder == "" {
				d = fmt.Sprintf("free (max %d)", s.Max)
			}
			return d + s.describeLapsed()
		},
	}).ToModel()
}

// lockOperations turns the history into porcupine operations by lock. Fail
// outcomes did not happen and are left out; unknown ones may take effect
// until the end; one answered -NOSESSION may have taken effect before its
// answer. Kills belong to every lock.
func lockOperations(ops []histOp, limit int64) map[string][]porcupine.Operation {
	byLock := make(map[string][]porcupine.Operation)
	var kills []porcupine.Operation
	for _, op := range ops {
		if op.Outcome == outFail {
			continue
		}
		in := lockIn{Kind: op.Kind, Session: op.Session, Token: op.Token, Limit: limit,
			Unknown: op.Outcome == outUnknown, Return: op.Return}
		out := lockOut{Null: op.Null, Err: op.Err, Token: op.Token, Count: op.Count}
		ret := op.Return
		if in.Unknown {
			ret = math.MaxInt64
			in.Return, in.Late = op.Return+unknownGrace, true
		}
		po := porcupine.Operation{ClientId: op.Client, Input: in, Output: out, Call: op.Call, Return: ret}
		switch op.Kind {
		case "acquire", "release":
			byLock[op.Lock] = append(byLock[op.Lock], po)
			if out.Err == "NOSESSION" && !in.Unknown {
				// -NOSESSION says the session has ended, not that the
				// request did nothing: a FLOCK may have been granted (or a
				// FUNLOCK applied) before that, its answer lost (a REQ retry
				// after the session ended, or a wait resolved from a
				// snapshot). So a twin that may have acted before the
				// answer, beside the check that the session may be over.
				twin := in
				twin.Unknown = true
				byLock[op.Lock] = append(byLock[op.Lock], porcupine.Operation{ClientId: op.Client, Input: twin, Output: lockOut{}, Call: op.Call, Return: op.Return})
			}
		case "fence":
			if !in.Unknown {
				byLock[op.Lock] = append(byLock[op.Lock], po)
			}
		case "kill":
			kills = append(kills, po)
		}
	}
	for l := range byLock {
		byLock[l] = append(byLock[l], kills...)
	}
	return byLock
}

// checkTokens checks the tokens of the grants of each lock (and of SET NX
// acquisitions, whose token the token script read):
//   - a token names one grant: two grants of one lock to different sessions
//     (or acquisitions) never share a token, whatever their timing, even
//     when they overlap (the double grant that DESIGN.md, Sessions, waits
//     and handoff, describes: one Raft entry granted a lock twice, with
//     its index as the token of both). A session's reentrant holds, and a
//     REQ replay, answer the token it holds, so one session may see one
//     token any number of times.
//   - of two grants, the one called after the other returned does not have
//     a lower token.
func checkTokens(ops []histOp) []string {
	byLock := make(map[string][]histOp)
	for _, op := range ops {
		if (op.Kind == "acquire" || op.Kind == "token") && op.Outcome == outOK && op.Err == "" && !op.Null {
			byLock[op.Lock] = append(byLock[op.Lock], op)
		}
	}
	var bad []string
	for lock, gs := range byLock {
		byReturn := append([]histOp(nil), gs...)
		sort.Slice(byReturn, func(i, j int) bool { return byReturn[i].Return < byReturn[j].Return })
		sort.Slice(gs, func(i, j int) bool { return gs[i].Call < gs[j].Call })

		// One session per token.
		first := make(map[int64]histOp) // token -> its earliest-called grant
		shared, example := 0, ""
		for _, g := range gs {
			f, ok := first[g.Token]
			if !ok {
				first[g.Token] = g
				continue
			}
			if f.Session != g.Session {
				if shared++; shared == 1 {
					example = fmt.Sprintf("token %d granted to session %.8s (c%d, %.1f-%.1f ms) and to session %.8s (c%d, %.1f-%.1f ms)",
						g.Token, f.Session, f.Client, msOf(f.Call), msOf(f.Return), g.Session, g.Client, msOf(g.Call), msOf(g.Return))
				}
			}
		}
		if shared > 0 {
			bad = append(bad, fmt.Sprintf("lock %s: %d grants with a token another session was granted; first: %s", lock, shared, example))
		}

		// Sweep: best is the highest-token grant that returned before the
		// current one was called. An equal token is the check above's.
		var best *histOp
		j, n, firstBad := 0, 0, ""
		for i := range gs {
			g := gs[i]
			for ; j < len(byReturn) && byReturn[j].Return < g.Call; j++ {
				if best == nil || byReturn[j].Token > best.Token {
					best = &byReturn[j]
				}
			}
			if best != nil && g.Token < best.Token {
				if n++; n == 1 {
					firstBad = fmt.Sprintf("token %d (session %.8s) granted after token %d (session %.8s) had returned",
						g.Token, g.Session, best.Token, best.Session)
				}
			}
		}
		if n > 0 {
			bad = append(bad, fmt.Sprintf("lock %s: %d grants with a token below an earlier one; first: %s", lock, n, firstBad))
		}
	}
	sort.Strings(bad)
	return bad
}

func msOf(ns int64) float64 { return float64(ns) / float64(time.Millisecond) }

// summarize counts operations by kind and outcome.
func summarize(ops []histOp) string {
	counts := make(map[string]int)
	for _, op := range ops {
		k := op.Kind + " " + op.Outcome.String()
		if op.Err != "" {
			k += " " + op.Err
		}
		counts[k]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%d ", k, counts[k])
	}
	return b.String()
}
