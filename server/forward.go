package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fenced/fenced/commands"
	"github.com/fenced/fenced/lockstate"
	"github.com/fenced/fenced/raftstore"
	"github.com/fenced/fenced/reply"
	"github.com/fenced/fenced/resp"
)

// Errors of forwarding to the leader.
var (
	// ErrLeaderUnreachable means the command never reached the leader:
	// nothing was applied and a retry is safe.
	ErrLeaderUnreachable = reply.NewErr("TRYAGAIN", "cannot reach the leader")
	// ErrForwardLost means the link to the leader broke after the command
	// was sent: it may or may not have been applied.
	ErrForwardLost = reply.NewErr("UNCERTAIN", "outcome unknown: the link to the leader broke after sending")
	// ErrStarting answers clients of a node that has not settled within
	// settleWait (startup.go), wrapped with what it waits for; nothing was
	// applied. Redis's -LOADING, which clients retry.
	ErrStarting = reply.NewErr("LOADING", "fenced is starting")
)

// Forwarding bounds. A forwarded proposal waits longer than the leader's
// own enqueue timeout plus an election, so a reply lost to a timeout here is
// rare; a timed-out read was never applied and is retryable.
const (
	dialTimeout    = time.Second
	proposeTimeout = 15 * time.Second
	readTimeout    = 5 * time.Second
	maxIdleLinks   = 64
)

// remoteError is an error reply from the leader, relayed as it was sent.
type remoteError string

func (e remoteError) Error() string { return string(e) }

// connState is what the server keeps per client connection.
type connState struct {
	// peer is set on connections that came over the peer channel, where
	// the other node's certificate was verified (peerHandler).
	peer bool
	link string      // the id of the node that forwards over this connection
	sub  *subscriber // the connection's subscriptions (pubsub.go)
	// track is the connection's CLIENT TRACKING state, nil while off
	// (tracking.go); set and read by its executor.
	track *tracked
	// user is who AUTH or HELLO AUTH made the connection, "" if neither
	// did (then it is authenticator.initialUser); authFails counts its
	// failed attempts, which slow down the next (auth.go).
	user      string
	authFails int
	// fullLimits: the connection reads with the full limits, not the
	// pre-AUTH ones (guarded by Server.limitsMu; protobulk.go).
	fullLimits bool
	// unanswered counts the connection's writes proposed ahead and not yet
	// answered (pipeline.go); their Laters, on the replier, decrement it.
	unanswered atomic.Int64
	// tx is the MULTI in progress, watch what WATCH recorded (multi.go).
	tx    *txState
	watch *watchState
	// reply is CLIENT REPLY's mode (clientreply.go).
	reply replyMode
}

// stateOf returns c's state, creating it. Only c's executor calls it.
func stateOf(c *resp.Conn) *connState {
	st, _ := c.State().(*connState)
	if st == nil {
		st = &connState{}
		c.SetState(st)
	}
	return st
}

func linkOf(c *resp.Conn) string {
	if c == nil {
		return ""
	}
	if st, ok := c.State().(*connState); ok {
		return st.link
	}
	return ""
}

// forwarder keeps link connections to the leader's peer channel (its
// Raft address, authenticated like Raft's own connections: no client can
// open one): one shared link per leader for proposals (propose), where
// many are in flight at once, and idle links for reads and membership
// commands (do), each carrying one request at a time so that a slow one
// holds up only its own. A client connection's commands run one after
// another, so either way each keeps its order.
type forwarder struct {
	self string // this node's id, sent in RAFT.LINK
	// dial opens a link to a node's Raft address (raftstore's DialPeer).
	// Set before the first link is made.
	dial func(ctx context.Context, addr string) (net.Conn, error)

	mu   sync.Mutex
	idle map[string][]*resp.Client

	// muxes holds one shared link per leader for RAFT.PROPOSE (propose):
	// dialled under muxMu, so that callers arriving together share one.
	muxMu sync.Mutex
	muxes map[string]*resp.Mux
}

func newForwarder(self string) *forwarder {
	return &forwarder{self: self, idle: make(map[string][]*resp.Client), muxes: make(map[string]*resp.Mux)}
}

// propose sends RAFT.PROPOSE to the leader at addr over the shared link,
// where many clients' proposals are in flight at once and share writes on
// both sides (the leader runs them ahead, in order: RunsAhead). Errors are
// those of do. A shared link found broken before anything was written is
// replaced once.
func (f *forwarder) propose(ctx context.Context, addr string, timeout time.Duration, entry []byte) (resp.Value, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		m, fresh, err := f.mux(ctx, addr)
		if err != nil {
			return resp.Value{}, fmt.Errorf("%w: %v", resp.ErrNotSent, err)
		}
		v, err := m.Do(ctx, []byte("RAFT.PROPOSE"), entry)
		if err == nil || fresh || !errors.Is(err, resp.ErrNotSent) || ctx.Err() != nil {
			return v, err
		}
	}
}

// mux returns the shared link to addr, dialling a new one when there is
// none or it broke; fresh tells which.
func (f *forwarder) mux(ctx context.Context, addr string) (m *resp.Mux, fresh bool, err error) {
	f.muxMu.Lock()
	defer f.muxMu.Unlock()
	if m := f.muxes[addr]; m != nil && !m.Broken() {
		return m, false, nil
	}
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	nc, err := f.dial(dctx, addr)
	cancel()
	if err != nil {
		return nil, false, err
	}
	m = resp.NewMux(nc, resp.DefaultReplyLimits())
	if err := f.handshake(ctx, m.Do); err != nil {
		m.Close()
		return nil, false, err
	}
	if old := f.muxes[addr]; old != nil {
		old.Close()
	}
	f.muxes[addr] = m
	return m, true, nil
}

// handshake makes a new connection a link: RESP3 replies keep their types
// (maps, nulls) for relaying in either protocol; RAFT.LINK stops the
// leader from forwarding them on.
func (f *forwarder) handshake(ctx context.Context, do func(context.Context, ...[]byte) (resp.Value, error)) error {
	for _, args := range [][][]byte{{[]byte("HELLO"), []byte("3")}, {[]byte("RAFT.LINK"), []byte(f.self)}} {
		v, err := do(ctx, args...)
		if err == nil && v.IsError() {
			err = fmt.Errorf("%s: %s", args[0], v.Text())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// doAs sends args to the node at addr as a command of user (RAFT.USER
// goes ahead of it, in the same write, so the leader answers it as that
// user) and returns its reply. Errors wrap resp.ErrNotSent when nothing
// reached the leader, resp.ErrReplyLost when the reply was lost after
// sending. It never resends a command that may have reached the leader.
func (f *forwarder) doAs(ctx context.Context, addr string, timeout time.Duration, user string, args ...[]byte) (resp.Value, error) {
	return f.send(ctx, addr, timeout, func(ctx context.Context, c *resp.Client) (resp.Value, error) {
		vs, err := c.Pipeline(ctx, [][][]byte{{[]byte("RAFT.USER"), []byte(user)}, args})
		if err != nil {
			return resp.Value{}, err
		}
		if vs[0].IsError() {
			return vs[0], nil
		}
		return vs[1], nil
	})
}

func (f *forwarder) send(ctx context.Context, addr string, timeout time.Duration, roundTrip func(context.Context, *resp.Client) (resp.Value, error)) (resp.Value, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for fresh := false; ; fresh = true {
		c, pooled, err := f.get(ctx, addr, fresh)
		if err != nil {
			return resp.Value{}, fmt.Errorf("%w: %v", resp.ErrNotSent, err)
		}
		v, err := roundTrip(ctx, c)
		if err == nil && !c.Broken() {
			f.put(addr, c)
			return v, nil
		}
		c.Close()
		// A pooled link the leader had closed meanwhile (a restart) is
		// found before anything is written: the command never left, so a
		// fresh link may carry it.
		if !pooled || !errors.Is(err, resp.ErrNotSent) || ctx.Err() != nil {
			return v, err
		}
	}
}

// get returns an idle link to addr, or a new one when there is none or
// fresh is set; pooled tells which.
func (f *forwarder) get(ctx context.Context, addr string, fresh bool) (c *resp.Client, pooled bool, err error) {
	f.mu.Lock()
	if l := f.idle[addr]; len(l) > 0 && !fresh {
		c := l[len(l)-1]
		f.idle[addr] = l[:len(l)-1]
		f.mu.Unlock()
		return c, true, nil
	}
	f.mu.Unlock()
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	nc, err := f.dial(dctx, addr)
	cancel()
	if err != nil {
		return nil, false, err
	}
	c = resp.NewClient(nc, resp.DefaultReplyLimits())
	if err := f.handshake(ctx, c.Do); err != nil {
		c.Close()
		return nil, false, err
	}
	return c, false, nil
}

func (f *forwarder) put(addr string, c *resp.Client) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.idle[addr]) >= maxIdleLinks {
		c.Close()
		return
	}
	f.idle[addr] = append(f.idle[addr], c)
}

// close drops every idle link and every shared one.
func (f *forwarder) close() {
	f.mu.Lock()
	for addr, l := range f.idle {
		for _, c := range l {
			c.Close()
		}
		delete(f.idle, addr)
	}
	f.mu.Unlock()
	f.muxMu.Lock()
	for addr, m := range f.muxes {
		m.Close()
		delete(f.muxes, addr)
	}
	f.muxMu.Unlock()
}

// leaderPeer returns the peer (Raft) address of the leader when it is
// another node, or "" when this node leads: where forwarded commands go.
func (s *Server) leaderPeer() (string, error) {
	if s.node.IsLeader() {
		return "", nil
	}
	addr := s.node.LeaderRaftAddr()
	if addr == "" {
		return "", raftstore.ErrNoLeader
	}
	return addr, nil
}

// leaderAddr returns the client address of the leader when it is another
// node, or "" when this node leads: what clients are told (-MOVED, INFO).
func (s *Server) leaderAddr() (string, error) {
	if s.node.IsLeader() {
		return "", nil
	}
	id := s.node.Leader()
	if id == "" {
		return "", raftstore.ErrNoLeader
	}
	var m lockstate.Member
	var ok bool
	s.node.Local(func(st *lockstate.State) { m, ok = st.Member(id) })
	if !ok || m.Addr == "" {
		return "", fmt.Errorf("%w: the client address of leader %q is not known yet", ErrLeaderUnreachable, id)
	}
	return m.Addr, nil
}

// submit commits e through Raft: on this node if it leads, else by
// forwarding it to the leader, which stamps the time and proposes it. Only
// the proposer's answer comes back: wakes are delivered by every node from
// its own apply, so a waiting FLOCK is answered where its client is.
func (s *Server) submit(ctx context.Context, e lockstate.Entry) (lockstate.Result, error) {
	addr, err := s.leaderPeer()
	if err != nil {
		return lockstate.Result{}, err
	}
	if addr == "" {
		return s.node.Propose(ctx, e)
	}
	v, err := s.fwd.propose(ctx, addr, proposeTimeout, e.Encode(nil))
	switch {
	case errors.Is(err, resp.ErrNotSent):
		return lockstate.Result{}, fmt.Errorf("%w: %v", ErrLeaderUnreachable, err)
	case err != nil:
		return lockstate.Result{}, fmt.Errorf("%w: %v", ErrForwardLost, err)
	case v.IsError():
		return lockstate.Result{}, remoteError(v.Text())
	}
	res, err := lockstate.DecodeResult([]byte(v.Text()))
	if err != nil {
		return lockstate.Result{}, fmt.Errorf("%w: %v", ErrForwardLost, err)
	}
	return res, nil
}

// forwardRaw sends a whole command to the leader and relays its reply: for
// reads, which the leader must serve, and membership commands. A failure is
// never uncertain for a read; for a membership change it is.
func (s *Server) forwardRaw(ctx context.Context, addr, user string, spec *commands.Spec, args [][]byte) resp.Value {
	write := spec.Has(commands.Write)
	timeout := readTimeout
	switch {
	case write:
		timeout = proposeTimeout
	case spec.Name == "raft.backup":
		timeout = backupTimeout // a read, but of the whole state
	}
	v, err := s.fwd.doAs(ctx, addr, timeout, user, args...)
	switch {
	case err == nil:
		return v
	case !write || errors.Is(err, resp.ErrNotSent):
		return errorReply(fmt.Errorf("%w: %v", ErrLeaderUnreachable, err))
	default:
		return errorReply(fmt.Errorf("%w: %v", ErrForwardLost, err))
	}
}
