package lockstate

import (
	"math/rand/v2"
	"sync"
	"testing"
)

// TestConcurrentReads runs every read at once on one State: under -race
// this proves they only read, so a caller may serve them under a read lock.
func TestConcurrentReads(t *testing.T) {
	s := New(smallConfig())
	g := &gen{src: rngSource{rand.New(rand.NewPCG(5, 5))}}
	for range 300 {
		index, e := g.next()
		if _, err := s.Apply(index, e, newMemWriter()); err != nil {
			t.Fatal(err)
		}
	}
	want := s.Hash()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 20 {
				if s.Hash() != want {
					t.Error("hash changed")
				}
				_ = s.Records(func(k, v []byte) error { return nil })
				for _, l := range genLocks() {
					s.LockInfo(l, s.Time())
					s.Fence(l, "s1", "", true)
				}
				for _, id := range genSessions() {
					_, _ = s.SessionInfo(id, "", false, s.Time())
				}
				s.Sessions()
				s.Counts()
				s.Members()
				s.WaitIDs()
				for _, n := range genNodes() {
					s.Member(n)
				}
				s.NextDeadline()
			}
		})
	}
	wg.Wait()
}
