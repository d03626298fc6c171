//go:build !fencednext

package lockstate

// MaxVersion is the highest cluster version this binary knows.
const MaxVersion = 1

// incrStep is what INCR adds: 1 at every version this binary knows.
func (s *State) incrStep() int64 { return 1 }
