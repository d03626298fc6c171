package commands

import "testing"

// BenchmarkDispatch is what every request costs before it reaches a
// handler: the table lookup, the arity check and parsing into a request.
func BenchmarkDispatch(b *testing.B) {
	t := New()
	args := [][]byte{[]byte("FLOCK"), []byte("orders"), []byte("3f9c0e6a1b2d4c5e8f7a6b5c4d3e2f1a"), []byte("WAIT"), []byte("1000"), []byte("REQ"), []byte("c1.42")}
	b.ReportAllocs()
	for b.Loop() {
		s, err := t.Check(args)
		if err != nil || s.Name != "flock" {
			b.Fatal(s, err)
		}
		if _, err := ParseFlock(args); err != nil {
			b.Fatal(err)
		}
	}
}
