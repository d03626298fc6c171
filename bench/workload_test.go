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

func TestFairness(t *testing.T) {
	if f := fairness([]int64{10, 20, 15}, 3); f == nil || *f != 2 {
		t.Fatalf("fairness = %v, want 2", f)
	}
	if f := fairness([]int64{10, 0}, 2); f != nil {
		t.Fatal("a client without a grant makes fairness undefined")
	}
	if f := fairness([]int64{10, 10}, 3); f != nil {
		t.Fatal("a client that never started makes fairness undefined")
	}
}

func TestExclusion(t *testing.T) {
	var x exclusion
	x.enter(5)
	x.leave()
	x.enter(7)
	x.enter(6) // a second holder, and a lower token
	if x.violations.Load() != 1 || x.regressions.Load() != 1 {
		t.Fatalf("violations=%d regressions=%d; want 1, 1", x.violations.Load(), x.regressions.Load())
	}
	x.leave()
	x.leave()
	x.enter(0) // paths without tokens are not checked for order
	if x.regressions.Load() != 1 {
		t.Fatal("token 0 counted as a regression")
	}
}

func TestParseList(t *testing.T) {
	got, err := parseList("etcd-3, fenced-1,etcd-3", knownTargets(), "--targets")
	if err != nil || len(got) != 2 || got[0] != "fenced-1" || got[1] != "etcd-3" {
		t.Fatalf("parseList = %v, %v; want known order, deduplicated", got, err)
	}
	if _, err := parseList("mysql", knownTargets(), "--targets"); err == nil {
		t.Fatal("unknown target accepted")
	}
}
