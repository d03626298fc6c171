package lockstate

import (
	"errors"
	"strings"

	"github.com/fenced/fenced/reply"
)

// Keyspace notifications, as Redis's notify.c: a write calls notify with
// its event's class, its name and the key, and when the replicated flags
// (CONFIG SET notify-keyspace-events, an OpExec of its own) ask for that
// class, the entry's output carries a __keyspace@0__:<key> message (the
// event) and/or a __keyevent@0__:<event> one (the key), in the order the
// writes made them, among the entry's PUBLISHes. Every replica applies the
// same entries with the same flags, so every node delivers the same
// messages to its own subscribers in log order (server/pubsub.go); deadlines
// that pass are entries too (expire), so "expired" comes from the entry
// that deleted the key, on every node alike.
//
// The events and where Redis 7.0.15 raises them (src/t_string.c, db.c,
// expire.c, t_hash.c, t_list.c): set (SET, SETNX, SETEX, PSETEX, GETSET,
// MSET, MSETNX: each key), expire (a SET or GETEX with a TTL, EXPIRE and
// its kin), del (DEL, UNLINK, GETDEL, an EXPIRE or GETEX to the past, and
// a hash or list emptied), persist, incrby (INCR, DECR, INCRBY, DECRBY),
// incrbyfloat, append, setrange, setbit (a SETBIT that changed the string),
// hset (HSET, HMSET), hincrby, hdel, lpush, rpush, lpop (LPOP, BLPOP), rpop
// (a list move: the destination's push, then the source's pop), expired, and new (dbAdd: any key created). fenced's own
// DELEX and DELIFEQ raise del. A SET whose absolute time is already past
// raises set and expire as Redis does, then expired at once, since fenced
// deletes the key in that entry where Redis waits for it to be looked at.
// Not raised: keymiss (m), which Redis raises on reads, and reads are
// served by the leader outside the log; evicted (e), as fenced never
// evicts; and nothing for the native locks and sessions, which are not
// Redis keys.

// The classes: Redis's NOTIFY_* bits (server.h), so that a flag string
// parses and prints as Redis's does.
const (
	notifyKeyspace = 1 << 0  // K
	notifyKeyevent = 1 << 1  // E
	notifyGeneric  = 1 << 2  // g
	notifyString   = 1 << 3  // $
	notifyList     = 1 << 4  // l
	notifySet      = 1 << 5  // s
	notifyHash     = 1 << 6  // h
	notifyZset     = 1 << 7  // z
	notifyExpired  = 1 << 8  // x
	notifyEvicted  = 1 << 9  // e
	notifyStream   = 1 << 10 // t
	notifyKeyMiss  = 1 << 11 // m, not in A
	notifyModule   = 1 << 13 // d
	notifyNew      = 1 << 14 // n, not in A
	notifyAll      = notifyGeneric | notifyString | notifyList | notifySet | notifyHash | notifyZset |
		notifyExpired | notifyEvicted | notifyStream | notifyModule
	notifyKnown = notifyAll | notifyKeyspace | notifyKeyevent | notifyKeyMiss | notifyNew
)

// notify emits a keyspace event: class is the event's class, event its
// name, key the key's name. It adds to the entry's messages only what the
// replicated flags ask for, so the output is the same on every replica.
func (s *State) notify(class int, event, key string) {
	f := s.notifyFlags
	if f&class == 0 {
		return
	}
	if f&notifyKeyspace != 0 {
		s.messages = append(s.messages, Message{Channel: "__keyspace@0__:" + key, Payload: event})
	}
	if f&notifyKeyevent != 0 {
		s.messages = append(s.messages, Message{Channel: "__keyevent@0__:" + event, Payload: key})
	}
}

// parseNotify is Redis's keyspaceEventsStringToFlags: ok is false for a
// byte that names no class. As Redis reads a C string, a NUL ends it.
func parseNotify(classes string) (flags int, ok bool) {
	for i := 0; i < len(classes); i++ {
		switch classes[i] {
		case 0:
			return flags, true
		case 'A':
			flags |= notifyAll
		case 'g':
			flags |= notifyGeneric
		case '$':
			flags |= notifyString
		case 'l':
			flags |= notifyList
		case 's':
			flags |= notifySet
		case 'h':
			flags |= notifyHash
		case 'z':
			flags |= notifyZset
		case 'x':
			flags |= notifyExpired
		case 'e':
			flags |= notifyEvicted
		case 'K':
			flags |= notifyKeyspace
		case 'E':
			flags |= notifyKeyevent
		case 't':
			flags |= notifyStream
		case 'm':
			flags |= notifyKeyMiss
		case 'd':
			flags |= notifyModule
		case 'n':
			flags |= notifyNew
		default:
			return 0, false
		}
	}
	return flags, true
}

// notifyText is Redis's keyspaceEventsFlagsToString: the canonical form
// CONFIG GET answers.
func notifyText(flags int) string {
	var b strings.Builder
	if flags&notifyAll == notifyAll {
		b.WriteByte('A')
	} else {
		for _, c := range []struct {
			flag int
			ch   byte
		}{{notifyGeneric, 'g'}, {notifyString, '$'}, {notifyList, 'l'}, {notifySet, 's'}, {notifyHash, 'h'},
			{notifyZset, 'z'}, {notifyExpired, 'x'}, {notifyEvicted, 'e'}, {notifyStream, 't'},
			{notifyModule, 'd'}, {notifyNew, 'n'}} {
			if flags&c.flag != 0 {
				b.WriteByte(c.ch)
			}
		}
	}
	for _, c := range []struct {
		flag int
		ch   byte
	}{{notifyKeyspace, 'K'}, {notifyKeyevent, 'E'}, {notifyKeyMiss, 'm'}} {
		if flags&c.flag != 0 {
			b.WriteByte(c.ch)
		}
	}
	return b.String()
}

// NotifyClassError is Redis's refusal of a flag string with a byte that
// names no class, as CONFIG SET words it after its prefix.
const NotifyClassError = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."

// NotifyValue checks a notify-keyspace-events value and returns the one
// spelling of its classes that the server proposes: every class by its own
// letter, never 'A', since Redis's CONFIG GET form drops 'n' beside 'A'
// ("AKEn" reads back as "AKE" while new-key events stay on).
func NotifyValue(classes string) (string, bool) {
	f, ok := parseNotify(classes)
	if !ok {
		return "", false
	}
	return notifySpelling(f), true
}

// NotifySetting is the flags in NotifyValue's spelling: what a server
// waits to see applied after its CONFIG SET.
func (s *State) NotifySetting() string { return notifySpelling(s.notifyFlags) }

func notifySpelling(f int) string {
	var b strings.Builder
	for _, c := range []byte("g$lshzxetdnKEm") {
		if g, _ := parseNotify(string(c)); f&g != 0 {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// NotifyKeyspaceEvents is the replicated notify-keyspace-events, as
// CONFIG GET answers it ("" when off).
func (s *State) NotifyKeyspaceEvents() string { return notifyText(s.notifyFlags) }

// NotifyParam is the one setting the state machine holds for CONFIG.
const NotifyParam = "notify-keyspace-events"

// cmdConfig is the replicated part of CONFIG SET: CONFIG SET
// notify-keyspace-events classes, proposed by a server as an OpExec of its
// own. It is no keyspace command: a script's redis.call('config') is
// refused as any command Redis marks noscript. Below cluster version 3 it
// answers what a binary without it answers to an OpExec of CONFIG.
func cmdConfig(s *State, a [][]byte, _ int64) reply.Value {
	if s.Version() < 3 {
		return reply.Error("ERR 'config' is not a keyspace command")
	}
	if len(a) != 4 || !strings.EqualFold(string(a[1]), "set") || !strings.EqualFold(string(a[2]), NotifyParam) {
		return reply.Error("ERR only CONFIG SET " + NotifyParam + " is applied through the log")
	}
	f, ok := parseNotify(string(a[3]))
	if !ok {
		return reply.Error("ERR CONFIG SET failed (possibly related to argument '" + NotifyParam + "') - " + NotifyClassError)
	}
	if f != s.notifyFlags {
		s.notifyFlags = f
		s.markDirty(notifyKey, nil)
	}
	return reply.OK()
}

// notifyKey holds the flags while any is set, so that a state that never
// set them keeps the records, and RAFT.HASH, it had.
const notifyKey = "m/notify"

func (s *State) appendNotify(b []byte) ([]byte, bool) {
	if s.notifyFlags == 0 {
		return b, false
	}
	return appendVarint(append(b, recordVersion), int64(s.notifyFlags)), true
}

func (s *State) loadNotify(r *reader) error {
	f := r.varint()
	if err := r.done(); err != nil {
		return err
	}
	if f <= 0 || f&^notifyKnown != 0 {
		return errors.New("bad notify-keyspace-events flags")
	}
	s.notifyFlags = int(f)
	return nil
}
