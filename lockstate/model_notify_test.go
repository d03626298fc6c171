package lockstate

import (
	"strings"

	"github.com/fenced/fenced/reply"
)

// The model's keyspace notifications, written from Redis 7.0.15's
// notify.c and the notifyKeyspaceEvent calls of its commands (t_string.c,
// expire.c, db.c), with no code of notify.go: the flags are kept as the
// string last set, and each class is looked up in it by its letter.

// genNotify is the pool of notify-keyspace-events values the generator
// sets: every class that has events here, the masks that leave some out,
// 'A' beside 'n' (which it does not include), and malformed ones.
func genNotify() []string {
	return []string{"KEA", "KEAn", "Kg", "E$", "Ex", "KEn", "Kgx", "E$lh", "AK", "", "K", "A", "KEq", "K E"}
}

// on reports whether class c (a letter of Redis's flag string) is set: 'A'
// stands for g$lshzxetd, not for K, E, m or n.
func (m *model) on(c byte) bool {
	return strings.IndexByte(m.notify, c) >= 0 || strings.IndexByte("g$lshzxetd", c) >= 0 && strings.IndexByte(m.notify, 'A') >= 0
}

// event is notifyKeyspaceEvent: the keyspace message, then the keyevent
// one, each if its class letter is set.
func (m *model) event(class byte, event, key string) {
	if !m.on(class) {
		return
	}
	if m.on('K') {
		m.messages = append(m.messages, Message{Channel: "__keyspace@0__:" + key, Payload: event})
	}
	if m.on('E') {
		m.messages = append(m.messages, Message{Channel: "__keyevent@0__:" + event, Payload: key})
	}
}

// config is CONFIG SET notify-keyspace-events v, from cluster version 3.
func (m *model) config(args []string) reply.Value {
	if m.version < 3 {
		return reply.Error("ERR 'config' is not a keyspace command")
	}
	for _, c := range args[3] {
		if !strings.ContainsRune("Ag$lshzxeKEtmdn", c) {
			return reply.Error("ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
		}
	}
	m.notify = args[3]
	return reply.OK()
}

// notifyConfig is what CONFIG GET notify-keyspace-events answers: 'A' when
// all of g$lshzxetd are on (and then no 'n', as Redis prints it), else
// each class in Redis's order; then K, E and m.
func (m *model) notifyConfig() string {
	var b strings.Builder
	all := true
	for _, c := range []byte("g$lshzxetd") {
		all = all && m.on(c)
	}
	if all {
		b.WriteByte('A')
	} else {
		for _, c := range []byte("g$lshzxetdn") {
			if m.on(c) {
				b.WriteByte(c)
			}
		}
	}
	for _, c := range []byte("KEm") {
		if m.on(c) {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// notifyPrefix is what half the runs do once at version 2: go on to
// version 3 and turn keyspace events on.
func notifyPrefix(src intSource) []Entry {
	if src.intn(2) == 0 {
		return nil
	}
	flags := genNotify()[src.intn(4)]
	return []Entry{{Op: OpSetVersion, Version: 3}, {Op: OpExec, Args: []string{"config", "set", "notify-keyspace-events", flags}}}
}
