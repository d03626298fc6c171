package test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// TestReplayHistory re-checks a history a fault test wrote
// (FENCED_CHAOS_HISTORY=path; FENCED_CHAOS_TTL and FENCED_CHAOS_LIMIT as the
// run had them, 1500 ms and 0 by default), so that a verdict can be
// examined without running the cluster again.
func TestReplayHistory(t *testing.T) {
	path := os.Getenv("FENCED_CHAOS_HISTORY")
	if path == "" {
		t.Skip("FENCED_CHAOS_HISTORY not set")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ttl, limit := int64(1500), int64(0)
	if v := os.Getenv("FENCED_CHAOS_TTL"); v != "" {
		ttl, _ = strconv.ParseInt(v, 10, 64)
	}
	if v := os.Getenv("FENCED_CHAOS_LIMIT"); v != "" {
		limit, _ = strconv.ParseInt(v, 10, 64)
	}
	ops, err := parseHistory(string(data), ttl)
	if err != nil {
		t.Fatal(err)
	}
	replayLocks(t, ops, limit)
	t.Logf("tokens: %v", checkTokens(ops))
}

// replayLocks checks each lock's history and returns the locks that are not
// linearizable, sorted.
func replayLocks(t *testing.T, ops []histOp, limit int64) []string {
	model := lockModel(newSessionBounds(ops))
	var illegal []string
	for lock, pops := range lockOperations(ops, limit) {
		start := time.Now()
		res, info := porcupine.CheckOperationsVerbose(model, pops, 10*time.Minute)
		t.Logf("lock %s: %d ops: %v in %v", lock, len(pops), res, time.Since(start))
		if res == porcupine.Illegal {
			explainIllegal(t, model, info)
			illegal = append(illegal, lock)
		}
	}
	sort.Strings(illegal)
	return illegal
}

// TestChaosFailures replays every fault-test history kept in
// testdata/chaos-failures and checks the verdict its verdict.txt states
// ("linearizable", or "illegal" and the locks that are not): the histories
// of checker bugs must stay linearizable, those of server bugs illegal.
func TestChaosFailures(t *testing.T) {
	t.Parallel()
	dirs, err := filepath.Glob("testdata/chaos-failures/*/verdict.txt")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no verdicts in testdata/chaos-failures: %v", err)
	}
	for _, vpath := range dirs {
		dir := filepath.Dir(vpath)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			v, err := os.ReadFile(vpath)
			if err != nil {
				t.Fatal(err)
			}
			want := strings.Fields(string(v))
			hist, err := filepath.Glob(filepath.Join(dir, "*-history.txt"))
			if err != nil || len(hist) != 1 {
				t.Fatalf("want one history in %s, have %v", dir, hist)
			}
			data, err := os.ReadFile(hist[0])
			if err != nil {
				t.Fatal(err)
			}
			ops, err := parseHistory(string(data), 1500)
			if err != nil {
				t.Fatal(err)
			}
			got := append([]string{"linearizable"}, replayLocks(t, ops, 0)...)
			if len(got) > 1 {
				got[0] = "illegal"
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("verdict %q, want %q", got, want)
			}
		})
	}
}

// parseHistory reads writeHistory's format back; opens get ttl (ms).
func parseHistory(s string, ttl int64) ([]histOp, error) {
	var ops []histOp
	for i, line := range strings.Split(strings.TrimSpace(s), "\n") {
		f := strings.Split(line, " ")
		if len(f) != 11 {
			return nil, fmt.Errorf("line %d: %d fields", i+1, len(f))
		}
		var op histOp
		var err error
		num := func(s string) int64 {
			v, e := strconv.ParseInt(s, 10, 64)
			if e != nil && err == nil {
				err = e
			}
			return v
		}
		op.Call, op.Return = num(f[0]), num(f[1])
		op.Client = int(num(strings.TrimPrefix(f[2], "c")))
		op.Kind, op.Lock, op.Session = f[3], f[4], f[5]
		op.Token = num(strings.TrimPrefix(f[6], "tok="))
		op.Null = f[7] == "null=true"
		op.Count = num(strings.TrimPrefix(f[8], "count="))
		op.Err = strings.TrimPrefix(f[9], "err=")
		switch f[10] {
		case "ok":
			op.Outcome = outOK
		case "fail":
			op.Outcome = outFail
		case "unknown":
			op.Outcome = outUnknown
		default:
			return nil, fmt.Errorf("line %d: outcome %q", i+1, f[10])
		}
		if op.Kind == "open" {
			op.TTL = ttl
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", i+1, err)
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// explainIllegal logs where the longest partial linearization stops: its
// last operations and the earliest-called one it could not place.
func explainIllegal(t *testing.T, model porcupine.Model, info porcupine.LinearizationInfo) {
	for _, parts := range info.PartialLinearizationsOperations() {
		var best []porcupine.Operation
		for _, p := range parts {
			if len(p) > len(best) {
				best = p
			}
		}
		if len(best) == 0 {
			continue
		}
		t.Logf("longest partial linearization: %d ops; its last ones:", len(best))
		for _, op := range best[max(0, len(best)-15):] {
			t.Logf("  %s c%d %s", fmtRange(op), op.ClientId, model.DescribeOperation(op.Input, op.Output))
		}
	}
}

func fmtRange(op porcupine.Operation) string {
	ret := "∞"
	if op.Return != math.MaxInt64 {
		ret = fmt.Sprintf("%.1f", msOf(op.Return))
	}
	return fmt.Sprintf("[%.1f, %s ms]", msOf(op.Call), ret)
}
