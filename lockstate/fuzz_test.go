package lockstate

import (
	"testing"
)

// FuzzApply turns bytes into a sequence of entries (the first byte picks the
// mode, the rest drive gen) and applies them to State and to the model. It
// must never panic; State must agree with the model, keep its invariants and
// its written records, and reload to the same hash. Without misuse the
// observer's lock properties must hold too.
func FuzzApply(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{0, 20, 7, 1, 20, 9, 2, 40, 1, 0, 0, 3, 5, 60, 2, 1, 1, 4, 50, 2, 1, 1, 6, 80, 3})
	f.Add([]byte{1, 255, 254, 253, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	for i := range 8 {
		b := make([]byte, 300)
		for j := range b {
			b[j] = byte((j*31 + i*17) ^ (j >> 3))
		}
		b[0] = byte(i)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		misuse := b[0]&1 == 1
		if err := run(&byteSource{b: b[1:]}, 1000, 25, misuse); err != nil {
			t.Fatal(err)
		}
	})
}
