package lockstate

import "github.com/fenced/fenced/reply"

// Message is one PUBLISH, delivered by every node to its own subscribers
// when it applies the entry.
type Message struct {
	Channel, Payload string
}

// cmdPublish records the message for the nodes to deliver. The state
// machine does not know who listens (subscriptions are connections of one
// node), so it answers 0: a script sees 0 on every replica, and the server
// answers a client's PUBLISH with its own node's count.
func cmdPublish(s *State, a [][]byte, _ int64) reply.Value {
	s.messages = append(s.messages, Message{Channel: string(a[1]), Payload: string(a[2])})
	return reply.Int(0)
}

// Events are what applied entries tell the node that applied them: answers
// to waiting FLOCKs, lists pushed to, messages published (for its clients),
// and what expired (for its metrics).
type Events struct {
	Wakes    []Wake
	Pushed   []string
	Messages []Message
	// UsersChanged says an entry changed the ACL users: every node
	// refreshes what it checks connections against.
	UsersChanged bool
	// Expired sums the entries' Result.Expired.
	Expired Expirations
	// Changes are the entries' Result.Changes, in log order.
	Changes []*Changes
}

// Add appends the events of r.
func (ev *Events) Add(r *Result) {
	ev.Wakes = append(ev.Wakes, r.Wakes...)
	ev.Pushed = append(ev.Pushed, r.Pushed...)
	ev.Messages = append(ev.Messages, r.Messages...)
	ev.UsersChanged = ev.UsersChanged || r.UsersChanged
	ev.Expired.Add(r.Expired)
	if r.Changes != nil {
		ev.Changes = append(ev.Changes, r.Changes)
	}
}
