package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// etcdMember is one etcd process with fixed ports and data directory, so a
// killed member restarts as itself (etcd ignores the --initial-* flags once
// its data directory holds a member).
type etcdMember struct {
	name      string
	clientURL string
	proc      *proc
}

// etcdCluster is the 3-member etcd peer, all members on loopback.
type etcdCluster struct {
	tmp     string
	members []*etcdMember
}

// startEtcd starts size members at once (each waits for a quorum of the
// initial cluster) and returns when every member answers and one leads.
func startEtcd(ctx context.Context, bin, tmp string, size int) (*etcdCluster, error) {
	dir, err := os.MkdirTemp(tmp, "etcd-")
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(2 * size)
	if err != nil {
		return nil, err
	}
	c := &etcdCluster{tmp: dir}
	var initial []string
	for i := range size {
		initial = append(initial, fmt.Sprintf("e%d=http://%s", i+1, ports[2*i+1]))
	}
	for i := range size {
		name := fmt.Sprintf("e%d", i+1)
		client, peer := "http://"+ports[2*i], "http://"+ports[2*i+1]
		args := []string{
			"--name", name, "--data-dir", filepath.Join(dir, name),
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(initial, ","),
			"--initial-cluster-token", filepath.Base(dir), "--initial-cluster-state", "new",
			"--logger", "zap", "--log-outputs", "stderr",
		}
		m := &etcdMember{name: name, clientURL: client,
			proc: &proc{name: "etcd " + name, path: bin, args: args, logPath: filepath.Join(dir, name+".log")}}
		c.members = append(c.members, m)
		if err := m.proc.start(); err != nil {
			c.stop()
			return nil, err
		}
	}
	for _, m := range c.members {
		if err := c.waitServing(ctx, m); err != nil {
			c.stop()
			return nil, err
		}
	}
	return c, nil
}

// newEtcdClient is the one place etcd client options are set. The client's
// own logger is silenced: it logs every retried RPC, which during the
// failover step would flood the output.
func newEtcdClient(endpoints []string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 2 * time.Second,
		Logger:      zap.NewNop(),
	})
}

// waitServing polls until the member answers Status with a known leader and
// serves a linearizable Get through itself.
func (c *etcdCluster) waitServing(ctx context.Context, m *etcdMember) error {
	cli, err := newEtcdClient([]string{m.clientURL})
	if err != nil {
		return err
	}
	defer cli.Close()
	err = waitFor(ctx, m.proc.name+" serving", readyTimeout, 20*time.Millisecond, m.proc.exited(), func(ctx context.Context) error {
		st, err := cli.Status(ctx, m.clientURL)
		if err != nil {
			return err
		}
		if st.Leader == 0 {
			return errors.New("no leader")
		}
		_, err = cli.Get(ctx, "bench-probe")
		return err
	})
	if err != nil {
		return fmt.Errorf("%w\n%s", err, m.proc.logTail())
	}
	return nil
}

// leader is the running member whose Status says it leads.
func (c *etcdCluster) leader(ctx context.Context) (*etcdMember, error) {
	cli, err := newEtcdClient(c.endpoints())
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	for _, m := range c.members {
		if !m.proc.running() {
			continue
		}
		st, err := cli.Status(ctx, m.clientURL)
		if err == nil && st.Leader != 0 && st.Leader == st.Header.MemberId {
			return m, nil
		}
	}
	return nil, errors.New("no etcd member reports itself leader")
}

// waitLeader polls until some member leads.
func (c *etcdCluster) waitLeader(ctx context.Context) (*etcdMember, error) {
	var l *etcdMember
	err := waitFor(ctx, "etcd: a leader", readyTimeout, 20*time.Millisecond, nil, func(ctx context.Context) error {
		var err error
		l, err = c.leader(ctx)
		return err
	})
	return l, err
}

// restart starts a killed member again on its data directory.
func (c *etcdCluster) restart(ctx context.Context, m *etcdMember) error {
	if err := m.proc.start(); err != nil {
		return err
	}
	return c.waitServing(ctx, m)
}

func (c *etcdCluster) endpoints() []string {
	out := make([]string, len(c.members))
	for i, m := range c.members {
		out[i] = m.clientURL
	}
	return out
}

// serverProcs are the running members for the steps' CPU readings, as
// fencedCluster's.
func (c *etcdCluster) serverProcs(leader *etcdMember) []serverProc {
	var out []serverProc
	for _, m := range c.members {
		if m.proc.running() {
			out = append(out, serverProc{name: leaderMark(m.name, m == leader), pid: m.proc.pid()})
		}
	}
	return out
}

func (c *etcdCluster) stop() {
	for _, m := range c.members {
		m.proc.stop(5 * time.Second)
	}
	_ = os.RemoveAll(c.tmp)
}
