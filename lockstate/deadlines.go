package lockstate

import "container/heap"

// timer is a pending deadline: a session's expiry, a timed wait's end or a
// key's expiry. Exactly one of sess, wait and key is set.
type timer struct {
	deadline int64
	sess     *session
	wait     *waiter
	key      *kvKey
	hi       int // heap position + 1; 0 = not scheduled
}

// rank orders the kinds of timer due at the same instant: waits, then keys,
// then sessions.
func (t *timer) rank() int {
	switch {
	case t.wait != nil:
		return 0
	case t.key != nil:
		return 1
	}
	return 2
}

// less is a total order over pending timers, so the order in which due
// deadlines take effect depends only on the state, never on the history of
// heap operations. At the same instant, waits end before sessions: a wait
// that runs out at the moment its lock's holder expires has run out, and
// the lock goes to the next waiter. Keys, which touch no lock or session,
// go between them, in name order.
func (a *timer) less(b *timer) bool {
	if a.deadline != b.deadline {
		return a.deadline < b.deadline
	}
	if ra, rb := a.rank(), b.rank(); ra != rb {
		return ra < rb
	}
	if a.sess != nil {
		return a.sess.id < b.sess.id
	}
	if a.key != nil {
		return a.key.name < b.key.name
	}
	if a.wait.lock.name != b.wait.lock.name {
		return a.wait.lock.name < b.wait.lock.name
	}
	return a.wait.pos < b.wait.pos
}

type timerHeap []*timer

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].less(h[j]) }
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].hi = i + 1
	h[j].hi = j + 1
}
func (h *timerHeap) Push(x any) {
	t := x.(*timer)
	t.hi = len(*h) + 1
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.hi = 0
	return t
}

// schedule sets t's deadline and (re)places it in the heap.
func (s *State) schedule(t *timer, deadline int64) {
	t.deadline = deadline
	if t.hi > 0 {
		heap.Fix(&s.timers, t.hi-1)
		return
	}
	heap.Push(&s.timers, t)
}

func (s *State) unschedule(t *timer) {
	if t.hi > 0 {
		heap.Remove(&s.timers, t.hi-1)
	}
}

// expire makes every deadline before now take effect, earliest first. It
// runs before every op, so an op never sees a session or a wait that should
// already be over, whatever the leader's ticks did.
//
// A deadline is over only once the time is past it: entry times are whole
// milliseconds read off a finer clock, so a stamp can be up to 1 ms behind
// the instant it was taken, and "at the deadline" could be up to 1 ms
// earlier than TTL after the renewal. Strictly after it never is.
func (s *State) expire(now int64) {
	for len(s.timers) > 0 && s.timers[0].deadline < now {
		t := heap.Pop(&s.timers).(*timer)
		switch {
		case t.sess != nil:
			s.expired.Sessions++
			if r := s.refs[t.sess.id]; r != nil {
				s.expired.Locks += len(r.held)
			}
			s.endSession(t.sess)
		case t.key != nil:
			s.expired.Keys++
			s.setTTL(t.key, false)
			s.deleteKey(t.key)
			s.notify(notifyExpired, "expired", t.key.name)
		default:
			s.expired.Waits++
			s.timeOut(t.wait)
		}
	}
}
