package test

// The peer channel under attack: a cluster with peer mutual TLS, and what
// an attacker who reaches its ports (but holds no certificate of its CA)
// can do to it. Each attack must be refused, with the leader and every
// node's RAFT.HASH unchanged afterwards.

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/fenced/fenced/internal/plant"
	"github.com/fenced/fenced/lockstate"
)

// clusterView is what an attack must not change: the leader, its term and
// every node's applied index and state hash.
type clusterView struct {
	leader, term string
	hashes       []string
}

func viewOf(t testing.TB, nodes []*node) clusterView {
	t.Helper()
	var v clusterView
	for _, n := range nodes {
		st := mustRaftStatus(t, n)
		if st.fields["role"] == "leader" {
			v.leader, v.term = st.fields["leader_id"], st.fields["term"]
		}
		h, err := do(tctx(t), n.client(t), "RAFT.HASH")
		if err != nil {
			t.Fatalf("RAFT.HASH on %s: %v", n.addr, err)
		}
		v.hashes = append(v.hashes, fmt.Sprint(h))
	}
	return v
}

// settledView waits until the view stops changing (start-up entries,
// announcements) and returns it.
func settledView(t testing.TB, nodes []*node) clusterView {
	t.Helper()
	prev := viewOf(t, nodes)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		time.Sleep(300 * time.Millisecond)
		v := viewOf(t, nodes)
		if v.leader != "" && v.equal(prev) && slices.Equal(v.hashes[:1], v.hashes[len(v.hashes)-1:]) {
			return v
		}
		prev = v
	}
	t.Fatalf("the cluster did not settle: %+v", prev)
	return prev
}

func (v clusterView) equal(o clusterView) bool {
	return v.leader == o.leader && v.term == o.term && slices.Equal(v.hashes, o.hashes)
}

// attackerStream is Raft's stream layer as an attacker builds it: the
// project's wire format (a kind byte after the optional TLS handshake) is
// public, so only the certificate can stop it.
type attackerStream struct {
	tls    *tls.Config // nil: plain TCP
	closed chan struct{}
}

func (s attackerStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", string(addr), timeout)
	if err != nil {
		return nil, err
	}
	if s.tls != nil {
		tc := tls.Client(c, s.tls)
		tc.SetDeadline(time.Now().Add(timeout))
		if err := tc.Handshake(); err != nil {
			c.Close()
			return nil, err
		}
		tc.SetDeadline(time.Time{})
		c = tc
	}
	if _, err := c.Write([]byte{'R'}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (s attackerStream) Accept() (net.Conn, error) { <-s.closed; return nil, net.ErrClosed }
func (s attackerStream) Close() error              { return nil }
func (s attackerStream) Addr() net.Addr            { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }

// attackerTLS is a TLS client configuration with a certificate of ca (not
// the cluster's), trusting any server: the attacker only needs the server
// to accept it.
func attackerTLS(t testing.TB, ca *testCA) *tls.Config {
	t.Helper()
	certFile, keyFile := ca.issue("attacker")
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	// Presented whatever CAs the server asks for (Go's client would
	// otherwise send none that the server's list does not name).
	return &tls.Config{
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil },
		InsecureSkipVerify:   true, MinVersion: tls.VersionTLS12,
	}
}

// forgeAppend sends n's Raft port an AppendEntries as a leader of a higher
// term would, carrying an entry that sets a key, through hashicorp/raft's
// own transport. It returns nil when Raft never answered (refused), or
// what the attack achieved.
func forgeAppend(t testing.TB, n *node, stream attackerStream) error {
	t.Helper()
	st := mustRaftStatus(t, n)
	term, last := uint64(st.int(t, "term")), uint64(st.int(t, "last_index"))
	trans := raft.NewNetworkTransport(stream, 1, 3*time.Second, nil)
	defer trans.Close()
	e := lockstate.Entry{Op: lockstate.OpExec, Args: []string{"SET", "pwned-by-raft", "1"}}
	args := &raft.AppendEntriesRequest{
		RPCHeader:    raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("attacker"), Addr: []byte("127.0.0.1:1")},
		Term:         term + 1,
		PrevLogEntry: last, PrevLogTerm: term,
		Entries:           []*raft.Log{{Index: last + 1, Term: term + 1, Type: raft.LogCommand, Data: e.Encode(nil)}},
		LeaderCommitIndex: last + 1,
	}
	var out raft.AppendEntriesResponse
	if err := trans.AppendEntries("victim", raft.ServerAddress(n.raftAddr), args, &out); err != nil {
		return nil
	}
	return fmt.Errorf("raft answered the forged AppendEntries (term %d, success %v)", out.Term, out.Success)
}

// TestPeerChannelAttacks is the attack suite: a 3-node cluster with
// security on (peer mutual TLS, a password, an ACL user without admin)
// serves clients through any node (the forwarding links run on the peer
// channel), and refuses what the issue's attacks did, leaving the leader
// and every state hash as they were: forged Raft messages over plain TCP
// and with a certificate of another CA, a plain-TCP link, RAFT.PROPOSE and
// RAFT.LINK on the client port, a node of another CA trying to join,
// every command before AUTH, the admin commands (RAFT.JOIN of a fake,
// LOCK.FORCEUNLOCK, SESSION.LIST) as a user without admin, and a browser's
// HTTP POST. (A newcomer that lies about its progress:
// TestPeerJoinNeedsCatchingUp.)
func TestPeerChannelAttacks(t *testing.T) {
	t.Parallel()
	ca, other := newTestCA(t, "cluster"), newTestCA(t, "other")
	c := startClusterWith(t, 3, testPass, append(ca.peerFlags("node"), "--requirepass", testPass)...)
	leader := c.leader(20 * time.Second)
	follower := c.followers(leader)[0]
	setUser(t, leader.client(t), "app", "on", ">app-pass", "+@all", "-@admin", "~*", "&*")
	app := userClient(t, follower, "app", "app-pass")

	// Forwarding works over the peer channel: a follower's client writes.
	fc := follower.client(t)
	sess := openSession(t, fc, 60000, "")
	tok := mustInt(t, fc, "FLOCK", "l", sess)
	mustInt(t, fc, "FUNLOCK", "l", sess, "FENCE", tok)
	mustStr(t, fc, "SET", "k", "v")
	mustInt(t, fc, "SESSION.KILL", sess)

	before := settledView(t, c.nodes)
	attacks := []struct {
		name string
		run  func() error
	}{
		{"forged AppendEntries over plain TCP", func() error {
			return forgeAppend(t, leader, attackerStream{closed: make(chan struct{})})
		}},
		{"forged AppendEntries with another CA's certificate", func() error {
			return forgeAppend(t, leader, attackerStream{tls: attackerTLS(t, other), closed: make(chan struct{})})
		}},
		{"a plain-TCP forwarding link", func() error {
			conn, err := net.DialTimeout("tcp", leader.raftAddr, time.Second)
			if err != nil {
				return nil
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(3 * time.Second))
			fmt.Fprintf(conn, "L*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n")
			if line, err := bufio.NewReader(conn).ReadString('\n'); err == nil {
				return fmt.Errorf("a plain-TCP link got an answer: %q", line)
			}
			return nil
		}},
		{"RAFT.PROPOSE on the client port", func() error {
			e := lockstate.Entry{Op: lockstate.OpExec, Args: []string{"SET", "pwned-by-propose", "1"}}
			if _, err := do(tctx(t), leader.client(t), "RAFT.PROPOSE", string(e.Encode(nil))); !isCode(err, "NOPERM") {
				return fmt.Errorf("RAFT.PROPOSE on the client port: %v, want -NOPERM", err)
			}
			return nil
		}},
		{"every command before AUTH", func() error {
			conn := dialRaw(t, follower.addr)
			defer conn.nc.Close()
			for _, args := range [][]string{{"SET", "pwned-by-noauth", "1"}, {"RAFT.JOIN", "fake", "127.0.0.1:1", "127.0.0.1:1"}, {"SESSION.LIST"}} {
				conn.send(args...)
				if v := conn.read(); v.kind != '-' || !strings.HasPrefix(v.str, "NOAUTH") {
					return fmt.Errorf("%q before AUTH: %v", args, v)
				}
			}
			return nil
		}},
		{"admin commands as a user without admin", func() error {
			for _, args := range [][]any{{"RAFT.JOIN", "fake", "127.0.0.1:1", "127.0.0.1:1"}, {"LOCK.FORCEUNLOCK", "l", "1"},
				{"SESSION.LIST"}, {"RAFT.PROPOSE", "x"}, {"RAFT.TRANSFER"}, {"ACL", "SETUSER", "app", "+@all"}} {
				if _, err := app.Do(tctx(t), args...).Result(); !isCode(err, "NOPERM") {
					return fmt.Errorf("%v as app: %v, want -NOPERM", args, err)
				}
			}
			return nil
		}},
		{"an HTTP POST from a browser", func() error {
			conn := dialRaw(t, follower.addr)
			defer conn.nc.Close()
			conn.write("POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: 24\r\n\r\nSET pwned-by-browser 1\r\n")
			if v, err := conn.tryRead(3 * time.Second); err == nil {
				return fmt.Errorf("the HTTP request got an answer: %v", v)
			}
			return nil
		}},
		{"RAFT.LINK and RAFT.USER on the client port", func() error {
			for _, args := range [][]any{{"RAFT.LINK", "n1"}, {"RAFT.USER", "app"}} {
				if _, err := do(tctx(t), follower.client(t), args...); !isCode(err, "NOPERM") {
					return fmt.Errorf("%v on the client port: %v, want -NOPERM", args, err)
				}
			}
			return nil
		}},
	}
	for _, a := range attacks {
		if err := a.run(); err != nil {
			t.Errorf("%s: %v", a.name, err)
		}
	}

	// A node with a certificate of another CA asks to join: it never
	// becomes a member, and the cluster says why.
	intruder := startNode(t, nodeOpts{noWait: true, args: append([]string{"--id", "intruder", "--join", leader.raftAddr}, other.peerFlags("intruder")...)})
	time.Sleep(3 * time.Second)
	if ids := mustRaftStatus(t, leader).memberIDs(); slices.Contains(ids, "intruder") {
		t.Errorf("the node of another CA joined: members %v", ids)
	}
	if !strings.Contains(intruder.stderr(), "joining: will retry") {
		t.Errorf("the intruder's log does not show its refused join:\n%s", intruder.stderr())
	}
	if !strings.Contains(leader.stderr(), "peer connection refused") {
		t.Errorf("the leader did not log the refused peers")
	}

	after := viewOf(t, c.nodes)
	if !after.equal(before) {
		t.Errorf("the attacks changed the cluster:\nbefore %+v\nafter  %+v", before, after)
	}
	for _, k := range []string{"pwned-by-raft", "pwned-by-propose", "pwned-by-noauth", "pwned-by-browser"} {
		if n := mustInt(t, leader.client(t), "EXISTS", k); n != 0 {
			t.Errorf("key %s was set", k)
		}
	}
}

// TestPeerPlantedUnverifiedCaught: with the planted bug that accepts any
// client certificate on the peer channel, the forged AppendEntries of
// TestPeerChannelAttacks gets through (so that test would catch it); the
// real binary refuses it.
func TestPeerPlantedUnverifiedCaught(t *testing.T) {
	t.Parallel()
	ca, other := newTestCA(t, "cluster"), newTestCA(t, "other")
	for _, planted := range []bool{false, true} {
		opts := nodeOpts{args: ca.peerFlags("n1")}
		if planted {
			opts.bin = chaosBinary(t, "plant", false)
			opts.env = []string{"FENCED_PLANT=" + string(plant.PeerUnverified)}
		}
		n := startNode(t, opts)
		err := forgeAppend(t, n, attackerStream{tls: attackerTLS(t, other), closed: make(chan struct{})})
		switch {
		case planted && err == nil:
			t.Error("the planted bug went undetected: the forged AppendEntries was refused")
		case !planted && err != nil:
			t.Errorf("the real binary: %v", err)
		}
	}
}

// TestPeerJoinNeedsCatchingUp: a newcomer that says it is far ahead (the
// issue's 30-line fake answered RAFT.STATUS with applied_index 999999999
// and became a voter, leaving a one-node cluster without a quorum for good)
// is never promoted: the leader judges from its own appends, which the
// fake never acknowledges.
func TestPeerJoinNeedsCatchingUp(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOpts{})
	fake := fakeNewcomer(t)
	c := n.client(t)
	if _, err := do(tctx(t), c, "RAFT.JOIN", "fake", fake, fake); err != nil {
		t.Fatalf("RAFT.JOIN of the fake: %v", err)
	}
	time.Sleep(4 * time.Second) // twice the promotion's stabilisation period
	st := mustRaftStatus(t, n)
	for _, m := range st.nodes {
		if m.ID == "fake" && m.Suffrage != "nonvoter" {
			t.Errorf("the fake newcomer is a %s", m.Suffrage)
		}
	}
	if st.fields["role"] != "leader" {
		t.Fatalf("the node lost its leadership: %v", st)
	}
	mustStr(t, c, "SET", "still", "writable")
}

// fakeNewcomer listens where a node would, answers every RESP command with
// a RAFT.STATUS that claims to be far ahead, and never speaks Raft. It
// returns its address.
func fakeNewcomer(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				r := bufio.NewReader(conn)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if strings.HasPrefix(line, "*") {
						fmt.Fprintf(conn, "*4\r\n$13\r\napplied_index\r\n$9\r\n999999999\r\n$4\r\nrole\r\n$8\r\nfollower\r\n")
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// The test CA's files must be usable as fenced's: a check that they load
// the way raftstore loads them, so a failure above is not the fixture's.
func TestTestCAIsValid(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t, "cluster")
	certFile, keyFile := ca.issue("n1")
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(ca.File)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("the CA file holds no certificate")
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("a node certificate does not verify as a client of its CA: %v", err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err != nil {
		t.Errorf("a node certificate does not verify as a server of its CA: %v", err)
	}
}
