package flagargs

import (
	"flag"
	"io"
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", "", "")
	pos, err := Parse(fs, []string{"save", "--addr", "a:1", "FILE"})
	if err != nil || *addr != "a:1" || !slices.Equal(pos, []string{"save", "FILE"}) {
		t.Fatalf("Parse = %q, %v; addr %q", pos, err, *addr)
	}
	if _, err := Parse(fs, []string{"x", "--nope"}); err == nil {
		t.Fatal("an unknown flag after an operand was accepted")
	}
}
