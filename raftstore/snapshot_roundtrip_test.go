package raftstore

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/fenced/fenced/lockstate"
)

// FuzzSnapshotRoundTrip: every record kind the state accepts goes through
// a snapshot and back unchanged. The input drives a run of entries over
// every kind of record (sessions of two users, holds with owners and
// limits, waiters, remembered requests, strings, hashes and lists up to
// the record cap, TTLs, ACL users, members); the state is snapshotted,
// restored into a fresh node's store, and must hash the same, in memory
// and as loaded back from Pebble.
func FuzzSnapshotRoundTrip(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte("\x00\x01\x03\x03\x03\x04\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x05\x06"))
	// 40 pushes of about 1 MiB onto one list: the record reaches its cap
	// and the pushes past it are refused.
	f.Add(bytes.Repeat([]byte{9, 0xff}, 40))
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 512 {
			in = in[:512]
		}
		src := memFSM(t)
		applyEntries(t, src, 1, entriesFrom(in)...)
		want := fsmHash(src)
		snap := snapshotBytes(t, src)
		dst := memFSM(t)
		if err := dst.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
			t.Fatalf("restoring a snapshot of an accepted state: %v", err)
		}
		checkUnchanged(t, dst, want, src.appliedIndex())
	})
}

// entriesFrom reads in two bytes at a time: an operation and its argument.
func entriesFrom(in []byte) []lockstate.Entry {
	var es []lockstate.Entry
	tm := int64(1000)
	sess := func(b byte) string { return sessionID(int(b % 3)) }
	for i := 0; i+1 < len(in); i += 2 {
		op, a := in[i]%16, in[i+1]
		tm += int64(a % 7)
		e := lockstate.Entry{Time: tm, Wall: 1_750_000_000_000 + tm}
		switch op {
		case 0:
			e.Op, e.Session, e.TTL, e.Name = lockstate.OpSessionOpen, sess(a), 5_000+int64(a)*100, fmt.Sprint("label", a)
			if a%2 == 1 {
				e.User = "u1"
			}
		case 1:
			e.Op, e.Session, e.Lock, e.Owner, e.Req = lockstate.OpFlock, sess(a), fmt.Sprint("L", a%4), fmt.Sprint("o", a%2), fmt.Sprint("r", a)
			e.Wait, e.Limit, e.WaitID = lockstate.NoWait, int64(a%3), uint64(a)+1
		case 2:
			e.Op, e.Session, e.Lock, e.Wait, e.WaitID = lockstate.OpFlock, sess(a), fmt.Sprint("L", a%4), int64(a)*50, uint64(i)+1000
		case 3:
			e.Op, e.Session, e.Lock, e.Owner, e.Req = lockstate.OpFunlock, sess(a), fmt.Sprint("L", a%4), fmt.Sprint("o", a%2), fmt.Sprint("u", a)
		case 4:
			e.Op, e.Session = lockstate.OpSessionHeartbeat, sess(a)
		case 5:
			e.Op, e.Session = lockstate.OpSessionKill, sess(a)
		case 6:
			e.Op = lockstate.OpTick
			e.Time += int64(a) * 100
		case 7:
			e.Op, e.Args = lockstate.OpExec, []string{"SET", fmt.Sprint("s", a%5), strings.Repeat("v", int(a)), "PX", fmt.Sprint(1 + int(a)*40)}
		case 8:
			e.Op, e.Args = lockstate.OpExec, []string{"HSET", fmt.Sprint("h", a%3), fmt.Sprint("f", a), strings.Repeat("w", int(a)*16)}
		case 9:
			// Up to about 1 MiB an element, so a few inputs reach the cap.
			e.Op, e.Args = lockstate.OpExec, []string{"RPUSH", fmt.Sprint("l", a%2), strings.Repeat("e", int(a)*int(a)*16+1)}
		case 10:
			e.Op, e.Args = lockstate.OpExec, []string{"LPOP", fmt.Sprint("l", a%2)}
		case 11:
			e.Op, e.Args = lockstate.OpExec, []string{"HINCRBY", fmt.Sprint("h", a%3), "n", fmt.Sprint(int(a) - 128)}
		case 12:
			e.Op, e.Args = lockstate.OpExec, []string{"PEXPIREAT", fmt.Sprint("h", a%3), fmt.Sprint(e.Wall + int64(a)*10)}
		case 13:
			e.Op, e.Args = lockstate.OpExec, []string{"DEL", fmt.Sprint("s", a%5), fmt.Sprint("l", a%2)}
		case 14:
			e.Op, e.Name, e.Args = lockstate.OpACLSetUser, fmt.Sprint("u", a%2), []string{"on", fmt.Sprint(">pw", a), "~*", "+@all"}
		case 15:
			e.Op, e.Node, e.RaftAddr, e.Addr = lockstate.OpNodeJoin, fmt.Sprint("n", a%3), fmt.Sprint("r:", a), fmt.Sprint("a:", a)
		}
		es = append(es, e)
	}
	return es
}
