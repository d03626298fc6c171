package lockstate

import (
	"reflect"
	"strings"
	"testing"

	"github.com/fenced/fenced/reply"
)

// listMoveCalls are a call of each list move (cluster version 3), with
// a source that has elements.
var listMoveCalls = [][]string{
	{"LMOVE", "l", "d", "LEFT", "RIGHT"}, {"RPOPLPUSH", "l", "d"}, {"BLMOVE", "l", "d", "RIGHT", "LEFT", "0"},
	{"BRPOPLPUSH", "l", "d", "1"}, {"LMOVE", "l"}, // a wrong arity is unknown too
}

// Below cluster version 3 each list move is answered as by a binary that
// lacks it, from OpExec and from a script alike, and nothing changes; at 3
// they move, and in a script the blocking two are not allowed (noscript in
// Redis 7.0) while LMOVE and RPOPLPUSH run.
func TestVersionGatesListMoves(t *testing.T) {
	a := newApplier(t)
	a.expect(Entry{Op: OpNodeJoin, Node: "n1", RaftAddr: "r:1", Addr: "a:1", Version: MaxVersion}, Result{Int: 1}, "set n/n1")
	a.apply(Entry{Op: OpExec, Args: []string{"RPUSH", "l", "a", "b", "c", "d"}})
	expectUnknownBelow3(t, a, listMoveCalls, nil)
	a.expect(Entry{Op: OpSetVersion, Version: 3}, Result{Int: 3}, "set m/version")
	// l: a b c d. LMOVE takes a to d's tail, RPOPLPUSH d to d's head,
	// BLMOVE c to d's head, BRPOPLPUSH b to d's head.
	want := []reply.Value{reply.BulkString("a"), reply.BulkString("d"), reply.BulkString("c"), reply.BulkString("b"),
		reply.Error("ERR wrong number of arguments for 'lmove' command")}
	for i, args := range listMoveCalls {
		if got := a.apply(Entry{Op: OpExec, Args: args}).Reply; !reflect.DeepEqual(got, want[i]) {
			t.Errorf("%q at version 3 = %+v, want %+v", args, got, want[i])
		}
	}
	if got := a.s.Exec([]string{"LRANGE", "d", "0", "-1"}, 1000); !reflect.DeepEqual(got, reply.Array(bulks([]string{"b", "c", "d", "a"})...)) {
		t.Errorf("d after the moves: %+v", got)
	}
	if got := a.s.Exec([]string{"EXISTS", "l"}, 1000); !reflect.DeepEqual(got, reply.Int(0)) {
		t.Errorf("the emptied source: EXISTS %+v, want it deleted", got)
	}
	notAllowed := reply.Error("ERR This Redis command is not allowed from script")
	for _, c := range []struct {
		args string
		want reply.Value
	}{{"LMOVE d l RIGHT LEFT", reply.BulkString("a")}, {"RPOPLPUSH d l", reply.BulkString("d")},
		{"BLMOVE d l LEFT LEFT 0", notAllowed}, {"BRPOPLPUSH d l 0", notAllowed}, {"BLMOVE nol l LEFT LEFT 0", notAllowed}} {
		in := append([]string{"EVAL", pcallARGV, "0"}, strings.Fields(c.args)...)
		if got := a.apply(Entry{Op: OpExec, Args: in}).Reply; !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s in a script at version 3 = %+v, want %+v", c.args, got, c.want)
		}
	}
}

// A move into a list whose record is full is refused, and changes
// nothing: neither list, nor an event; a rotation never grows its list.
func TestListMoveRecordBound(t *testing.T) {
	a := v3(t)
	big := strings.Repeat("x", MaxRecord-8-elemSize("")) // 8 bytes short of full
	if got := a.exec("RPUSH", "full", big).Reply; !reflect.DeepEqual(got, reply.Int(1)) {
		t.Fatalf("RPUSH full = %.40v", got)
	}
	a.exec("RPUSH", "src", "z")
	before := a.s.Hash()
	if got := a.exec("LMOVE", "src", "full", "LEFT", "RIGHT").Reply; !reflect.DeepEqual(got, reply.ErrorOf(ErrRecordTooLarge)) {
		t.Fatalf("LMOVE into a full list = %+v, want %v", got, ErrRecordTooLarge)
	}
	if a.s.Hash() != before {
		t.Fatal("a refused LMOVE changed the state")
	}
	if got := a.exec("LMOVE", "full", "full", "LEFT", "RIGHT").Reply; !reflect.DeepEqual(got, reply.BulkString(big)) {
		t.Fatalf("rotating a full list = %.20v", got)
	}
}
