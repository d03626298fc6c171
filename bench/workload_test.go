package main

import (
	"testing"
	"time"
)

func TestErrTallyKeepsEarliest(t *testing.T) {
	var early, late, sum errTally
	early.add("first %d", 1)
	time.Sleep(time.Millisecond)
	late.add("second")
	late.add("third")
	sum.merge(late)
	sum.merge(early)
	sum.merge(errTally{})
	if sum.n != 3 || sum.first != "first 1" {
		t.Fatalf("got n=%d first=%q; want 3, \"first 1\"", sum.n, sum.first)
	}
}
