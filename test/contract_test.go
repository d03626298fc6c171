package test

import (
	"context"
	"testing"
	"time"
)

// Acceptance b: the FencedLock contract.
//   - a reentrant acquire returns the same token and raises the count;
//   - after the full release the next acquire, by any owner (another
//     session, another tag of the same session, or the same owner again),
//     gets a strictly larger token;
//   - LIMIT 1: a second FLOCK answers -LIMIT at once, even with WAIT 0,
//     and the count is unchanged; LIMIT 2 allows exactly two holds;
//   - FUNLOCK by a non-owner answers -NOTOWNER and changes nothing;
//   - FUNLOCK with a stale FENCE answers -STALEFENCE and changes nothing.
func TestFencedLockContract(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	c := n.client(t)
	a := openSession(t, c, 30000, "a")
	b := openSession(t, c, 30000, "b")

	t.Run("reentrant then strictly larger", func(t *testing.T) {
		const l = "reentrant"
		tok := mustInt(t, c, "FLOCK", l, a)
		for i := 2; i <= 5; i++ {
			if got := mustInt(t, c, "FLOCK", l, a); got != tok {
				t.Fatalf("reentrant FLOCK #%d = %d, want the same token %d", i, got, tok)
			}
			if li := getLockInfo(t, c, l); li.Count != int64(i) || li.Token != tok {
				t.Fatalf("after %d FLOCKs LOCK.INFO = %+v, want count %d token %d", i, li, i, tok)
			}
		}
		for i := 4; i >= 0; i-- {
			if got := mustInt(t, c, "FUNLOCK", l, a); got != int64(i) {
				t.Fatalf("FUNLOCK = %d, want %d", got, i)
			}
		}
		last := tok
		// Every later acquisition, whoever makes it, gets a larger token.
		owners := []struct{ session, tag string }{{b, ""}, {a, "other-task"}, {a, ""}, {a, ""}, {b, "x"}}
		for _, o := range owners {
			got := mustInt(t, c, "FLOCK", l, o.session, "OWNER", o.tag)
			if got <= last {
				t.Fatalf("FLOCK by %s/%q after release = %d, want > %d", o.session, o.tag, got, last)
			}
			if f := mustInt(t, c, "FENCE", l); f != got {
				t.Fatalf("FENCE = %d, want %d", f, got)
			}
			last = got
			if r := mustInt(t, c, "FUNLOCK", l, o.session, "OWNER", o.tag); r != 0 {
				t.Fatalf("FUNLOCK = %d, want 0", r)
			}
		}
	})

	t.Run("LIMIT 1", func(t *testing.T) {
		const l = "limit1"
		tok := mustInt(t, c, "FLOCK", l, a, "LIMIT", 1)
		want := lockInfo{Held: true, Holder: a, Count: 1, Limit: 1, Token: tok}
		mustErr(t, c, "LIMIT", "FLOCK", l, a)
		if li := getLockInfo(t, c, l); !equalLockInfo(li, want) {
			t.Fatalf("after -LIMIT, LOCK.INFO = %+v, want %+v", li, want)
		}
		// Never waits: with WAIT 0 (forever) it still answers -LIMIT. If
		// it queued instead, the call would hang until the bound below.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := do(ctx, c, "FLOCK", l, a, "WAIT", 0)
		if !isCode(err, "LIMIT") {
			t.Fatalf("FLOCK WAIT 0 over the limit: %v, want -LIMIT", err)
		}
		if li := getLockInfo(t, c, l); !equalLockInfo(li, want) {
			t.Fatalf("after -LIMIT with WAIT, LOCK.INFO = %+v, want %+v (nothing queued)", li, want)
		}
		if got := mustInt(t, c, "FUNLOCK", l, a); got != 0 {
			t.Fatalf("FUNLOCK = %d, want 0 (count stayed 1)", got)
		}
	})

	t.Run("LIMIT 2", func(t *testing.T) {
		const l = "limit2"
		tok := mustInt(t, c, "FLOCK", l, b, "LIMIT", 2)
		if got := mustInt(t, c, "FLOCK", l, b); got != tok {
			t.Fatalf("second hold = %d, want %d", got, tok)
		}
		mustErr(t, c, "LIMIT", "FLOCK", l, b)
		if li := getLockInfo(t, c, l); li.Count != 2 || li.Limit != 2 || li.Token != tok {
			t.Fatalf("LOCK.INFO = %+v, want count 2 limit 2 token %d", li, tok)
		}
		mustInt(t, c, "FUNLOCK", l, b)
		mustInt(t, c, "FUNLOCK", l, b)
	})

	t.Run("NOTOWNER changes nothing", func(t *testing.T) {
		const l = "notowner"
		tok := mustInt(t, c, "FLOCK", l, a, "OWNER", "t1")
		mustInt(t, c, "FLOCK", l, a, "OWNER", "t1")
		want := getLockInfo(t, c, l)
		if !equalLockInfo(want, lockInfo{Held: true, Holder: a, Owner: "t1", Count: 2, Token: tok}) {
			t.Fatalf("LOCK.INFO = %+v", want)
		}
		mustErr(t, c, "NOTOWNER", "FUNLOCK", l, b)                            // another session
		mustErr(t, c, "NOTOWNER", "FUNLOCK", l, a)                            // same session, other tag
		mustErr(t, c, "NOTOWNER", "FUNLOCK", l, b, "OWNER", "t1")             // same tag, other session
		mustErr(t, c, "NOTOWNER", "FUNLOCK", l, b, "FENCE", tok)              // knowing the token is not enough
		mustErr(t, c, "NOTOWNER", "FUNLOCK", "never-taken", a, "OWNER", "t1") // a free lock
		if li := getLockInfo(t, c, l); !equalLockInfo(li, want) {
			t.Fatalf("after -NOTOWNER, LOCK.INFO = %+v, want %+v", li, want)
		}
		mustNil(t, c, "FENCE", "never-taken")
		mustInt(t, c, "FUNLOCK", l, a, "OWNER", "t1")
		mustInt(t, c, "FUNLOCK", l, a, "OWNER", "t1")
	})

	t.Run("STALEFENCE", func(t *testing.T) {
		const l = "stale"
		old := mustInt(t, c, "FLOCK", l, a)
		mustInt(t, c, "FUNLOCK", l, a)
		cur := mustInt(t, c, "FLOCK", l, a)
		mustInt(t, c, "FLOCK", l, a)
		if cur <= old {
			t.Fatalf("tokens %d then %d, want increasing", old, cur)
		}
		want := getLockInfo(t, c, l)
		// A late retry carrying the old ownership's token must not release
		// the new ownership of the same owner.
		mustErr(t, c, "STALEFENCE", "FUNLOCK", l, a, "FENCE", old)
		mustErr(t, c, "STALEFENCE", "FUNLOCK", l, a, "FENCE", cur+1000)
		if li := getLockInfo(t, c, l); !equalLockInfo(li, want) {
			t.Fatalf("after -STALEFENCE, LOCK.INFO = %+v, want %+v", li, want)
		}
		if got := mustInt(t, c, "FUNLOCK", l, a, "FENCE", cur); got != 1 {
			t.Fatalf("FUNLOCK with the current FENCE = %d, want 1", got)
		}
		if got := mustInt(t, c, "FUNLOCK", l, a, "FENCE", cur); got != 0 {
			t.Fatalf("FUNLOCK with the current FENCE = %d, want 0", got)
		}
	})
}
